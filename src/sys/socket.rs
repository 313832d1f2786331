//! Sockets: `--listen`'s listening sockets, which every program gets as
//! descriptors 3, 4, ..., and `--on-change handover`'s notify socket, on
//! which a new program says it is ready. Raw `libc`: `nix`'s socket calls
//! sit behind its `socket` feature, which brings a crate (memoffset) the
//! build does not otherwise carry.

use std::ffi::CStr;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::cvt;

/// The backlog asked for (the kernel caps it at `net.core.somaxconn`):
/// connections wait in it while no program accepts.
const BACKLOG: libc::c_int = 4096;

/// A new socket of `family` and `kind`, close-on-exec.
fn socket(family: libc::c_int, kind: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: no pointer; the descriptor returned is new and owned here.
    let fd = cvt(unsafe { libc::socket(family, kind | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_int_option(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is an int, the size passed, and outlives the call.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (&value as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) })
        .map(drop)
}

/// `bind(2)` of `fd` to the address in `storage` (`len` bytes of it), then `listen(2)`.
fn bind_listen(fd: OwnedFd, storage: &libc::sockaddr_storage, len: usize) -> io::Result<OwnedFd> {
    // SAFETY: `storage` holds a socket address of `len` bytes, within its size.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (storage as *const libc::sockaddr_storage).cast(), len as libc::socklen_t) })?;
    // SAFETY: no pointer.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) })?;
    Ok(fd)
}

/// A TCP socket bound to `addr` (`SO_REUSEADDR`: a restarted envshim binds
/// while the old connections linger in TIME_WAIT) and listening. The IPv6
/// unspecified address (`::`) takes IPv4 connections too.
pub fn listen_tcp(addr: &SocketAddr) -> io::Result<OwnedFd> {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (family, len) = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            (libc::AF_INET, std::mem::size_of::<libc::sockaddr_in>())
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in6 and suitably aligned.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            (libc::AF_INET6, std::mem::size_of::<libc::sockaddr_in6>())
        }
    };
    let fd = socket(family, libc::SOCK_STREAM)?;
    set_int_option(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if family == libc::AF_INET6 && addr.ip().is_unspecified() {
        set_int_option(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0)?;
    }
    bind_listen(fd, &storage, len)
}

/// `sockaddr_un` for `path` (abstract when it starts with a NUL byte), and its length.
fn unix_address(path: &[u8]) -> io::Result<(libc::sockaddr_storage, usize)> {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: sockaddr_storage is larger than sockaddr_un and suitably aligned.
    let sun = unsafe { &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_un>() };
    if path.len() >= sun.sun_path.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (to, &from) in sun.sun_path.iter_mut().zip(path) {
        *to = from as libc::c_char;
    }
    let base = std::mem::size_of::<libc::sa_family_t>();
    Ok((storage, base + path.len() + usize::from(path.first() != Some(&0))))
}

/// A Unix stream socket bound at `path` and listening.
pub fn listen_unix(path: &CStr) -> io::Result<OwnedFd> {
    let (storage, len) = unix_address(path.to_bytes())?;
    bind_listen(socket(libc::AF_UNIX, libc::SOCK_STREAM)?, &storage, len)
}

/// A Unix datagram socket for `NOTIFY_SOCKET`: bound to a name the kernel
/// picks in the abstract namespace (nothing on the file system to clean
/// up), non-blocking, each datagram with its sender's credentials
/// (`SO_PASSCRED`). Returns it and its name (without the leading NUL).
pub fn notify_socket() -> io::Result<(OwnedFd, Vec<u8>)> {
    let fd = socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK)?;
    set_int_option(&fd, libc::SOL_SOCKET, libc::SO_PASSCRED, 1)?;
    // Only the family: the kernel binds a unique abstract name (autobind).
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    storage.ss_family = libc::AF_UNIX as libc::sa_family_t;
    let family = std::mem::size_of::<libc::sa_family_t>();
    // SAFETY: `storage` holds the family, `family` bytes.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&storage as *const libc::sockaddr_storage).cast(), family as libc::socklen_t) })?;
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `storage` is writable for `len` bytes.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), (&mut storage as *mut libc::sockaddr_storage).cast(), &mut len) })?;
    // SAFETY: an AF_UNIX socket's name is a sockaddr_un.
    let sun = unsafe { &*(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_un>() };
    let name: Vec<u8> = sun.sun_path[..(len as usize).saturating_sub(family)].iter().map(|&c| c as u8).collect();
    match name.split_first() {
        Some((0, name)) if !name.is_empty() => Ok((fd, name.to_vec())),
        _ => Err(io::Error::from_raw_os_error(libc::EADDRNOTAVAIL)),
    }
}

/// The next datagram on a [`notify_socket`], into `buf`: its sender's pid
/// (0 when it came without credentials) and its length; None when none is
/// waiting. Descriptors sent with it are closed.
pub fn recv_notify(fd: BorrowedFd, buf: &mut [u8]) -> io::Result<Option<(libc::pid_t, usize)>> {
    // Room for the credentials and a few descriptors, aligned for cmsghdr.
    let mut control = [0u64; 32];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let n = loop {
        // SAFETY: `msg` points to `iov` (into `buf`) and `control`, both writable for the lengths given.
        let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC | libc::MSG_TRUNC) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => return Ok(None),
            _ => return Err(e),
        }
    };
    let mut pid = 0;
    // SAFETY: the CMSG_* macros walk the control buffer the kernel filled, within `msg_controllen`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            let len = (*c).cmsg_len as usize - (data as usize - c as usize);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_CREDENTIALS) if len >= std::mem::size_of::<libc::ucred>() => {
                    pid = std::ptr::read_unaligned(data.cast::<libc::ucred>()).pid;
                }
                (libc::SOL_SOCKET, libc::SCM_RIGHTS) => {
                    for i in 0..len / std::mem::size_of::<RawFd>() {
                        drop(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.cast::<RawFd>().add(i))));
                    }
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some((pid, n.min(buf.len()))))
}

/// `dup2(2)` without allocating (a `--listen` socket to its number in the
/// child). Raw `libc`: `nix`'s takes owned descriptors, which would close them.
pub fn dup2(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: no pointer; `to` is replaced in this process's table only.
    cvt(unsafe { libc::dup2(from, to) }).map(drop)
}

/// `fcntl(F_DUPFD_CLOEXEC)`: a copy of `fd` numbered `min` or above, close-on-exec.
pub fn dup_at_least(fd: BorrowedFd, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: no pointer; the descriptor returned is new and owned here.
    let new = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) })?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Marks every descriptor from `first` up close-on-exec: `close_range(2)`
/// (Linux 5.11), else each one listed in `/proc/self/fd`.
pub fn cloexec_from(first: RawFd) -> io::Result<()> {
    // SAFETY: no pointer.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC) };
    if r == 0 {
        return Ok(());
    }
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse::<RawFd>().ok()) else { continue };
        if fd >= first {
            // SAFETY: no pointer; a descriptor closed since the listing gives EBADF, ignored.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
    Ok(())
}

/// `getpid(2)`, without allocating (the child's own, for `LISTEN_PID`).
pub fn getpid() -> libc::pid_t {
    nix::unistd::getpid().as_raw()
}
