//! `--listen` (docs/reference.md §13.2): envshim binds and listens once,
//! before the first program starts, and hands the sockets to every program
//! it starts as descriptors 3, 4, ... with `LISTEN_FDS`, `LISTEN_PID` and
//! `LISTEN_FDNAMES` (systemd's socket activation); connections wait in the
//! kernel's backlog while no program accepts. With `--on-change handover`,
//! also the `NOTIFY_SOCKET` on which a new program says `READY=1`.
//!
//! Without `--init` (and `--watch`) envshim execs the program itself: its
//! pid is the program's, so `LISTEN_PID` holds too (socket activation of
//! the program exec'd directly).

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;

use crate::environment::Environment;
use crate::error::{escape, Error, ExitCode};
use crate::sys::{self, Envp};

/// The variables envshim sets for the program when it hands it sockets or
/// a notify socket: the build's own values of them are dropped.
pub const VARIABLES: [&[u8]; 4] = [b"LISTEN_FDS", b"LISTEN_PID", b"LISTEN_FDNAMES", b"NOTIFY_SOCKET"];

/// The first descriptor a program gets (`SD_LISTEN_FDS_START`).
const FIRST_FD: RawFd = 3;

/// Where `--listen` listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `tcp:HOST:PORT`, `tcp::PORT` (every address: None), `tcp:[::1]:PORT`.
    Tcp(Option<IpAddr>, u16),
    /// `unix:PATH`.
    Unix(CString),
}

/// `--listen ADDR`: `tcp:HOST:PORT` (HOST an IPv4 address, or an IPv6 one
/// in brackets; empty: every address) or `unix:PATH`.
#[cfg_attr(envshim_size, optimize(size))]
// Not inlined into its clap value parser, so built for size there: -0.4 KB.
#[inline(never)]
pub fn parse(text: &str) -> Result<Address, String> {
    const EXPECTED: &str = "expected tcp:HOST:PORT, tcp::PORT, tcp:[IPv6]:PORT or unix:PATH";
    if let Some(path) = text.strip_prefix("unix:") {
        // sockaddr_un's sun_path: 108 bytes with the NUL.
        return match CString::new(path) {
            Ok(_) if path.is_empty() => Err(format!("{EXPECTED} (the path is empty)")),
            Ok(p) if p.as_bytes().len() > 107 => Err("a unix socket's path is at most 107 bytes".into()),
            Ok(p) => Ok(Address::Unix(p)),
            Err(_) => Err(EXPECTED.into()),
        };
    }
    let Some((host, port)) = text.strip_prefix("tcp:").and_then(|rest| rest.rsplit_once(':')) else { return Err(EXPECTED.into()) };
    let port = match port.parse::<u16>() {
        Ok(p) if !port.starts_with('+') => p,
        _ => return Err(format!("{EXPECTED} (PORT a number from 0 to 65535)")),
    };
    let host = match host {
        "" => None,
        h => match h.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => Some(IpAddr::V6(v6.parse::<Ipv6Addr>().map_err(|_| format!("{EXPECTED} (not an IPv6 address in the brackets)"))?)),
            None => Some(IpAddr::V4(h.parse::<Ipv4Addr>().map_err(|_| format!("{EXPECTED} (HOST an IP address: names are not resolved)"))?)),
        },
    };
    Ok(Address::Tcp(host, port))
}

impl Address {
    /// As given on the command line.
    #[cfg_attr(envshim_size, optimize(size))]
    fn shown(&self) -> String {
        match self {
            Address::Tcp(None, port) => format!("tcp::{port}"),
            Address::Tcp(Some(IpAddr::V6(ip)), port) => format!("tcp:[{ip}]:{port}"),
            Address::Tcp(Some(ip), port) => format!("tcp:{ip}:{port}"),
            Address::Unix(path) => format!("unix:{}", escape(path.as_bytes())),
        }
    }

    /// Its name in `LISTEN_FDNAMES`: `tcp-PORT`, or `unix-` and the file's
    /// name (a name holds no `:`, the list's separator).
    #[cfg_attr(envshim_size, optimize(size))]
    fn name(&self) -> Vec<u8> {
        match self {
            Address::Tcp(_, port) => format!("tcp-{port}").into_bytes(),
            Address::Unix(path) => {
                let file = path.as_bytes().rsplit(|&b| b == b'/').next().unwrap_or_default();
                b"unix-".iter().chain(file).map(|&b| if b == b':' || !b.is_ascii_graphic() { b'_' } else { b }).collect()
            }
        }
    }

    /// A socket bound to it and listening. A unix path that is a socket
    /// already (left by an earlier run) is replaced; anything else there is refused.
    #[cfg_attr(envshim_size, optimize(size))]
    fn bind(&self) -> io::Result<OwnedFd> {
        match self {
            Address::Tcp(Some(ip), port) => sys::listen_tcp(&SocketAddr::new(*ip, *port)),
            Address::Tcp(None, port) => match sys::listen_tcp(&SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), *port)) {
                // No IPv6 in this network namespace: IPv4's every address.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL)) => {
                    sys::listen_tcp(&SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), *port))
                }
                r => r,
            },
            Address::Unix(path) => {
                let file = std::ffi::OsStr::from_bytes(path.to_bytes());
                match std::fs::symlink_metadata(file) {
                    Ok(m) if m.file_type().is_socket() => std::fs::remove_file(file)?,
                    Ok(_) => return Err(io::Error::from_raw_os_error(libc::EEXIST)),
                    Err(_) => {}
                }
                sys::listen_unix(path)
            }
        }
    }
}

/// What envshim hands every program it starts: the listening sockets (at
/// descriptors above the ones the program gets, close-on-exec, so that the
/// child's `dup2` never overwrites one), the notify socket, and their
/// variables.
#[derive(Debug)]
pub struct Handed {
    sockets: Vec<OwnedFd>,
    /// `LISTEN_FDS=N`, `LISTEN_FDNAMES=...`, `NOTIFY_SOCKET=@...`: the same for every program.
    vars: Vec<CString>,
    /// `LISTEN_PID=PID`, NUL-terminated: written by each child (its own pid)
    /// before it execs, in memory it shares with envshim until then.
    pid: Cell<[u8; 32]>,
    /// `--on-change handover`: where a new program says it is ready.
    notify: Option<OwnedFd>,
}

impl Handed {
    /// Binds every address (none bound when one fails: the error names it
    /// and why, exit 71) and, for `--on-change handover`, makes the notify
    /// socket. None when there is nothing to hand.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn new(addresses: &[Address], handover: bool) -> Result<Option<Handed>, Error> {
        if addresses.is_empty() && !handover {
            return Ok(None);
        }
        let failed = |what: String, e: io::Error| Error::new(ExitCode::OsErr, format!("{what} ({})", crate::error::os_reason(&e)));
        // Nothing else reaches a program: what envshim inherited is closed at exec too.
        sys::cloexec_from(FIRST_FD).map_err(|e| failed("--listen: cannot mark the inherited descriptors close-on-exec".into(), e))?;
        let above = FIRST_FD + addresses.len() as RawFd;
        let mut sockets = Vec::with_capacity(addresses.len());
        for address in addresses {
            let socket = address.bind().map_err(|e| failed(format!("--listen {}: cannot listen", address.shown()), e))?;
            sockets.push(sys::dup_at_least(socket.as_fd(), above).map_err(|e| failed("--listen: fcntl failed".into(), e))?);
        }
        let mut vars = Vec::new();
        if !sockets.is_empty() {
            let names = addresses.iter().map(Address::name).collect::<Vec<_>>().join(&b':');
            vars.push(CString::new(format!("LISTEN_FDS={}", sockets.len())).expect("no NUL"));
            vars.push(CString::new([&b"LISTEN_FDNAMES="[..], &names].concat()).expect("no NUL in the names"));
        }
        let notify = if handover {
            let (fd, name) = sys::notify_socket().map_err(|e| failed("--on-change handover: cannot make the notify socket".into(), e))?;
            vars.push(
                CString::new([&b"NOTIFY_SOCKET=@"[..], &name].concat())
                    .map_err(|_| failed("--on-change handover: the notify socket's name".into(), io::Error::from_raw_os_error(libc::EINVAL)))?,
            );
            Some(fd)
        } else {
            None
        };
        Ok(Some(Handed { sockets, vars, pid: Cell::new([0; 32]), notify }))
    }

    /// Drops the build's own values of the variables envshim sets.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn unset(env: &mut Environment) {
        for name in VARIABLES {
            env.remove(name);
        }
    }

    /// The program's `envp`: `base` (without [`VARIABLES`]: [`Handed::unset`])
    /// and the handed variables. Built before the fork; the child writes
    /// `LISTEN_PID` ([`Handed::in_child`]).
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn envp<'a>(&'a self, base: &'a Envp<'_>) -> Envp<'a> {
        let base = base.pointers();
        let mut ptrs = Vec::with_capacity(base.len() + self.vars.len() + 1);
        ptrs.extend_from_slice(&base[..base.len() - 1]);
        ptrs.extend(self.vars.iter().map(|v| v.as_ptr()));
        if !self.sockets.is_empty() {
            ptrs.push(self.pid.as_ptr().cast());
        }
        ptrs.push(std::ptr::null());
        Envp::new(ptrs, self)
    }

    /// In the program's process, before it execs (the child, or envshim
    /// itself without `--init`): the sockets at 3, 4, ... (not close-on-exec
    /// there), `LISTEN_PID` its pid. Allocates nothing.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn in_child(&self) -> Result<(), (&'static str, io::Error)> {
        for (i, socket) in self.sockets.iter().enumerate() {
            sys::dup2(socket.as_raw_fd(), FIRST_FD + i as RawFd).map_err(|e| ("dup2", e))?;
        }
        self.pid.set(pid_var(sys::getpid()));
        Ok(())
    }

    /// The notify socket (`--on-change handover`).
    pub fn notify(&self) -> Option<BorrowedFd<'_>> {
        self.notify.as_ref().map(AsFd::as_fd)
    }
}

/// `LISTEN_PID=PID` and a NUL, written without allocating.
fn pid_var(pid: libc::pid_t) -> [u8; 32] {
    let mut text = [0u8; 32];
    let prefix = b"LISTEN_PID=";
    text[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (pid.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        text[prefix.len() + i] = *d;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn addresses_parse() {
        assert_eq!(parse("tcp:127.0.0.1:8080"), Ok(Address::Tcp(Some(IpAddr::V4(Ipv4Addr::LOCALHOST)), 8080)));
        assert_eq!(parse("tcp::80"), Ok(Address::Tcp(None, 80)));
        assert_eq!(parse("tcp:[::1]:0"), Ok(Address::Tcp(Some(IpAddr::V6(Ipv6Addr::LOCALHOST)), 0)));
        assert_eq!(parse("unix:/run/app.sock"), Ok(Address::Unix(CString::new("/run/app.sock").unwrap())));
        for bad in [
            "",
            "tcp:",
            "tcp:80",
            "tcp::",
            "tcp::65536",
            "tcp::+80",
            "tcp::-1",
            "tcp:localhost:80",
            "tcp:::1:80",
            "tcp:[::1:80",
            "udp::53",
            "unix:",
            "8080",
            ":8080",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse(&format!("unix:/{}", "a".repeat(107))).is_err());
        assert!(parse(&format!("unix:/{}", "a".repeat(106))).is_ok());
    }

    #[test]
    fn names_and_shown() {
        let a = parse("tcp:[::1]:8080").unwrap();
        assert_eq!((a.shown(), a.name()), ("tcp:[::1]:8080".to_string(), b"tcp-8080".to_vec()));
        let u = parse("unix:/run/a:b c.sock").unwrap();
        assert_eq!(u.name(), b"unix-a_b_c.sock".to_vec());
    }

    #[test]
    fn the_pid_variable_is_written_in_place() {
        let text = pid_var(1234567);
        assert_eq!(CStr::from_bytes_until_nul(&text).unwrap().to_bytes(), b"LISTEN_PID=1234567");
        assert_eq!(CStr::from_bytes_until_nul(&pid_var(1)).unwrap().to_bytes(), b"LISTEN_PID=1");
    }
}
