//! `--watch`'s waiting: inotify (through `nix`), a signalfd for the signals
//! (the kernel's 64-bit set, as `sigtimedwait`: raw), and `poll` on both.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub use nix::sys::inotify::WatchDescriptor;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::{cvt, SigSet};

/// An inotify instance, non-blocking and close-on-exec.
pub struct Notify(Inotify);

/// What a watch reports: a directory's entries created, deleted, moved in or
/// out, written and closed, modified; the directory itself deleted or moved.
const MASK: AddWatchFlags = AddWatchFlags::IN_CREATE
    .union(AddWatchFlags::IN_DELETE)
    .union(AddWatchFlags::IN_MOVED_FROM)
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_CLOSE_WRITE)
    .union(AddWatchFlags::IN_MODIFY)
    .union(AddWatchFlags::IN_DELETE_SELF)
    .union(AddWatchFlags::IN_MOVE_SELF);

/// An event: its watch, whether it concerns the watched directory itself
/// (deleted, moved, no longer watched, or events lost), and the entry's name.
pub struct NotifyEvent {
    pub watch: WatchDescriptor,
    pub whole: bool,
    pub name: Option<OsString>,
}

impl Notify {
    pub fn new() -> io::Result<Notify> {
        Ok(Notify(Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?))
    }

    /// Watches the directory `path` (symlinks followed).
    pub fn watch(&self, path: &OsStr) -> io::Result<WatchDescriptor> {
        Ok(self.0.add_watch(path, MASK | AddWatchFlags::IN_ONLYDIR)?)
    }

    /// The events queued (none: an empty list).
    pub fn events(&self) -> io::Result<Vec<NotifyEvent>> {
        let whole = AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF | AddWatchFlags::IN_IGNORED | AddWatchFlags::IN_Q_OVERFLOW;
        let mut all = Vec::new();
        loop {
            match self.0.read_events() {
                Ok(events) => all.extend(events.into_iter().map(|e| NotifyEvent { watch: e.wd, whole: e.mask.intersects(whole), name: e.name })),
                Err(nix::errno::Errno::EAGAIN) => return Ok(all),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// `signalfd4(2)`: a descriptor from which the pending signals of `set`
/// (blocked) are read; non-blocking, close-on-exec.
pub fn signal_fd(set: &SigSet) -> io::Result<OwnedFd> {
    let flags = libc::SFD_NONBLOCK | libc::SFD_CLOEXEC;
    // SAFETY: `set` is 8 bytes, the size passed, and outlives the call.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_signalfd4, -1, set.as_ptr(), 8usize, flags) } as libc::c_int)?;
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The next signal read from a [`signal_fd`]; None when none is pending.
pub fn read_signal(fd: BorrowedFd) -> io::Result<Option<libc::c_int>> {
    // SAFETY: a zeroed `signalfd_siginfo` is valid storage.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    loop {
        // SAFETY: `info` is `size` writable bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut info as *mut libc::signalfd_siginfo).cast(), size) };
        if n == size as isize {
            return Ok(Some(info.ssi_signo as libc::c_int));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// `poll(2)` for input on `fds`, at most `timeout` (None: without limit);
/// bit i of the result is set when `fds[i]` is readable.
pub fn poll_readable(fds: &[BorrowedFd], timeout: Option<Duration>) -> io::Result<u32> {
    let mut polled: Vec<libc::pollfd> = fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // Rounded up, so a deadline is not woken for just before it.
    let ms = timeout
        .map_or(-1, |t| t.as_secs().saturating_mul(1000).saturating_add(u64::from(t.subsec_nanos().div_ceil(1_000_000))).min(i32::MAX as u64) as libc::c_int);
    // SAFETY: `polled` holds `polled.len()` entries and outlives the call.
    let r = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::EINTR) { Ok(0) } else { Err(e) };
    }
    Ok(polled.iter().enumerate().filter(|(_, p)| p.revents != 0).fold(0, |bits, (i, _)| bits | 1 << i))
}
