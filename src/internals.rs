//! What the shim's own benches, fuzz targets, tools and integration tests
//! reach of the library's private modules (the parsers they measure, fuzz
//! and check, the command line's definition the docs are generated from).
//! Hidden from the docs and no API: another crate uses [`crate::converter`]
//! (tests/layers.rs checks the converter's sources).

pub use crate::cli::Cli;
#[cfg(any(test, fuzzing))]
pub use crate::envfile::reference;
pub use crate::envfile::{kubelet, portable, EnvFile, Problem};
pub use crate::error::{exit_code_help, ExitCode, Tool};
pub use crate::expand::{expand, expand_capped, expand_into};
pub use crate::limits::{MAX_ENV_FILE_BYTES, MAX_NAME_BYTES, MAX_VALUE_BYTES};
pub use crate::manifest::parse as parse_manifest;
pub use crate::names::is_relaxed;
