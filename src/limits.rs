//! Every hard limit envshim enforces, in one place.

use static_assertions::const_assert;

/// Largest env file accepted (KEP-3721: 64 KiB), inclusive.
pub const MAX_ENV_FILE_BYTES: usize = 64 * 1024;
/// Longest variable name in an env file, and longest `fileKeyRef.key` (KEP-3721 alpha).
pub const MAX_NAME_BYTES: usize = 128;
/// Longest value in an env file (KEP-3721 alpha: 32 KiB), inclusive.
pub const MAX_VALUE_BYTES: usize = 32 * 1024;
/// Largest manifest accepted, inclusive.
pub const MAX_MANIFEST_BYTES: usize = 1024 * 1024;
/// Longest single `NAME=VALUE` or argument `execve` takes: MAX_ARG_STRLEN (32 pages) less the NUL.
pub const MAX_EXEC_STRING_BYTES: usize = 32 * 4096 - 1;
/// The kernel's floor for the total argv + envp size (ARG_MAX, 32 pages)...
pub const MIN_EXEC_TOTAL_BYTES: usize = 32 * 4096;
/// ...and its ceiling (3/4 of _STK_LIM, 8 MiB), whatever the stack rlimit says.
pub const MAX_EXEC_TOTAL_BYTES: usize = 6 * 1024 * 1024;
/// Kubernetes reads at most this much of a termination log.
pub const MAX_TERMINATION_LOG_BYTES: usize = 4096;
/// Symbolic links followed while resolving one path without `openat2` (the kernel's MAXSYMLINKS).
pub const MAX_SYMLINKS: usize = 40;
/// `--wait`: how often missing files are looked for again.
pub const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

// A file at its limit must be able to hold one maximal entry: name, `=`, value, newline.
const_assert!(MAX_NAME_BYTES + 1 + MAX_VALUE_BYTES + 1 <= MAX_ENV_FILE_BYTES);
// Any single value read from a file fits in one execve string.
const_assert!(MAX_NAME_BYTES + 1 + MAX_VALUE_BYTES < MAX_EXEC_STRING_BYTES);
const_assert!(MIN_EXEC_TOTAL_BYTES < MAX_EXEC_TOTAL_BYTES);
const_assert!(MAX_ENV_FILE_BYTES < MAX_MANIFEST_BYTES);
