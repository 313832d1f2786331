//! Every unsafe block of envshim: thin wrappers over the system calls std
//! does not offer, one file per concern. Each returns `io::Result` and
//! nothing here makes policy; nothing here uses the rest of the crate (the
//! lowest layer: tests/layers.rs).
//!
//! - `fs`: opening (inside a volume too), reading, metadata, permissions;
//! - `process`: the command line, `execve`, ids, children, process groups, the terminal;
//! - `signal`: sets, masks, dispositions and handlers, waiting, sending;
//! - `notify`: `--watch`'s inotify, signalfd and poll;
//! - `socket`: `--listen`'s sockets and handover's notify socket;
//! - `alloc`: the binary's bump-arena allocator;
//! - `sse2`: sixteen-byte compares for the env-file parser's scans (`envfile/scan.rs`).
//!
//! The crate denies `unsafe_code` (the workspace's `[lints]`); this module
//! alone allows it, and clippy wants a `SAFETY:` note on each block.
#![allow(unsafe_code)]

use std::io;

mod alloc;
mod fs;
mod notify;
mod process;
mod signal;
mod socket;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub mod sse2;

pub use alloc::Arena;
pub use fs::*;
pub use notify::*;
pub use process::*;
pub use signal::*;
pub use socket::*;

/// `strerror(3)`: the text of error number `n` (`No such file or directory`).
#[inline]
pub fn strerror(n: libc::c_int) -> &'static std::ffi::CStr {
    // SAFETY: strerror returns a NUL-terminated string that lives as long as
    // the process (musl: static text).
    unsafe { std::ffi::CStr::from_ptr(libc::strerror(n)) }
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
