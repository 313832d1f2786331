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
/// Entries imported by `envFrom` and `--env-file` in all, each reference to a
/// file counting its distinct keys again: bounds the work of a manifest that
/// names one file thousands of times (the environment does not grow, so its
/// own bound never fires). More than 6 MiB of environment can hold (about
/// 570,000 of the smallest variables).
pub const MAX_IMPORTED_ENTRIES: usize = 1_000_000;
/// Bytes imported in all: the names (prefixed) and values of every
/// reference's keys. Ten times what `execve` ever takes.
pub const MAX_IMPORTED_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of env files read by one run, all files together (each is read
/// once however often it is named): 256 files at their limit. Bounds the
/// memory and parsing of a manifest that names thousands of distinct files.
pub const MAX_READ_BYTES: usize = 16 * 1024 * 1024;
const_assert!(MAX_READ_BYTES == 16 << 20); // "16 MiB" in src/envdir.rs's message
/// Longest line envshim writes on stderr (a longer one is cut, and says so).
pub const MAX_MESSAGE_BYTES: usize = 2048;
/// Error lines printed by one run; the rest are counted in one more line.
pub const MAX_ERROR_LINES: usize = 32;
/// Warning lines printed by one run's start-up; the rest are counted in one more line.
pub const MAX_WARNING_LINES: usize = 16;
/// Skipped keys listed by name in one `envFrom` warning; the rest are counted.
pub const MAX_SKIPPED_KEYS_SHOWN: usize = 10;
/// Longest skipped name shown in that warning (a prefix is configuration and may be long).
pub const MAX_SHOWN_NAME_BYTES: usize = 128;
/// `openat2` calls that fail with EAGAIN (a rename somewhere on the system
/// during a `..` step) before the fallback resolver opens the file instead.
pub const OPENAT2_TRIES: u32 = 8;
/// Symbolic links followed while resolving one path without `openat2` (the kernel's MAXSYMLINKS).
pub const MAX_SYMLINKS: usize = 40;
/// `--env-dir`: entries listed in one directory (files, subdirectories and
/// hidden entries alike); a directory with more fails (65) without being read.
pub const MAX_ENV_DIR_ENTRIES: usize = 4096;
/// `--env-dir`: reads of a Kubernetes volume whose version is replaced
/// during the read (its `..data` swapped), before it fails (66).
pub const ENV_DIR_TRIES: u32 = 2;
/// `--wait`: how often it says which files it still waits for.
pub const WAIT_REPORT: std::time::Duration = std::time::Duration::from_secs(10);
/// `--wait`: files named in one of its lines; the rest are counted.
pub const MAX_WAIT_FILES_SHOWN: usize = 10;
/// `--wait`: how often missing files are looked for again.
pub const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);
/// `--watch`: variable names listed for each kind of change (changed, added, removed); the rest are counted.
pub const MAX_CHANGED_NAMES_SHOWN: usize = 10;
/// `--watch`: directories watched with inotify; the poll covers the sources beyond them.
pub const MAX_WATCHES: usize = 1024;

// A file at its limit must be able to hold one maximal entry: name, `=`,
// value, and the newline after them.
const_assert!(MAX_NAME_BYTES + 1 + MAX_VALUE_BYTES < MAX_ENV_FILE_BYTES);
// Any single value read from a file fits in one execve string.
const_assert!(MAX_NAME_BYTES + 1 + MAX_VALUE_BYTES < MAX_EXEC_STRING_BYTES);
const_assert!(MIN_EXEC_TOTAL_BYTES < MAX_EXEC_TOTAL_BYTES);
const_assert!(MAX_ENV_FILE_BYTES < MAX_MANIFEST_BYTES);
const_assert!(MAX_ENV_FILE_BYTES * 256 <= MAX_READ_BYTES);
// A full environment can be imported (many times over) within the import bounds.
const_assert!(MAX_EXEC_TOTAL_BYTES < MAX_IMPORTED_BYTES);
const_assert!(MAX_EXEC_TOTAL_BYTES / 11 < MAX_IMPORTED_ENTRIES);
// A warning listing every shown key at full length fits in one line (keys
// without backslashes, which escaping doubles; the line bound holds whatever).
const_assert!(MAX_SKIPPED_KEYS_SHOWN * (MAX_SHOWN_NAME_BYTES + 5) + 2 * MAX_SHOWN_NAME_BYTES + 256 < MAX_MESSAGE_BYTES);
// The termination log holds at least one whole line.
const_assert!(MAX_MESSAGE_BYTES < MAX_TERMINATION_LOG_BYTES);
