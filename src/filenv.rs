//! `--file-env NAME` (docs/reference.md §9.1): the `NAME_FILE` convention of official
//! images (Docker/Compose/Swarm secrets, Kubernetes Secret volumes). When
//! `NAME_FILE` is set, NAME is set from the file it names and `NAME_FILE` is
//! removed. Applied to the complete environment (after `env`), before the
//! program line is expanded.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use crate::environment::{rule_text, Environment, Source};
use crate::error::{escape, Error, ExitCode};
use crate::files::{self, Awaited, ReadError};
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_VALUE_BYTES};
use crate::names::NameRule;
use crate::sources::{missing_error, read_error};

/// Applies each NAME in order. Errors go to `errors`; each file looked at
/// to `read` (for `--watch`); the files that were missing are returned, for
/// `--wait`. `waited`: `--wait` ran out after this long.
pub fn apply(
    env: &mut Environment,
    names: &[Vec<u8>],
    rule: NameRule,
    waited: Option<&str>,
    errors: &mut Vec<Error>,
    read: &mut Vec<Vec<u8>>,
) -> Vec<Awaited<'static>> {
    let mut missing = Vec::new();
    for name in names {
        let shown = escape(name);
        if !rule.accepts(name) {
            errors.push(Error::config(format!("--file-env \"{shown}\": not a valid variable name ({})", rule_text(rule))));
            continue;
        }
        let mut file_var = name.clone();
        file_var.extend_from_slice(b"_FILE");
        let Some(path) = env.get(&file_var).filter(|p| !p.is_empty()).map(<[u8]>::to_vec) else { continue };
        if env.get(name).is_some_and(|v| !v.is_empty()) {
            errors.push(Error::config(format!("--file-env {shown}: both {shown} and {shown}_FILE are set (but are exclusive)")));
            continue;
        }
        read.push(path.clone());
        let path_shown = escape(&path);
        let display = format!("{shown}_FILE: file {path_shown}");
        let data = match files::read_path(OsStr::from_bytes(&path), MAX_ENV_FILE_BYTES) {
            Ok(data) => data,
            Err(ReadError::NotFound) => {
                errors.push(missing_error(format!("{display} not found"), waited));
                missing.push(Awaited { root: None, path, display: format!("{path_shown} ({shown}_FILE)").into() });
                continue;
            }
            Err(e) => {
                errors.push(read_error(e, &display));
                continue;
            }
        };
        match value(data) {
            Ok(value) => {
                env.set(name, value, Source::FileEnv(Rc::from(format!("{shown}_FILE {path_shown}"))));
                env.remove(&file_var);
            }
            Err(why) => errors.push(Error::new(ExitCode::DataErr, format!("{display}: {why}"))),
        }
    }
    missing
}

/// The file's bytes without their trailing newlines (as the shell's `$(< file)`), within the value limit.
fn value(mut data: Vec<u8>) -> Result<Vec<u8>, String> {
    while data.last() == Some(&b'\n') {
        data.pop();
    }
    if data.len() > MAX_VALUE_BYTES {
        return Err(format!("the value is {} bytes (without trailing newlines), over the limit of {MAX_VALUE_BYTES}", data.len()));
    }
    if memchr::memchr(0, &data).is_some() {
        return Err("the value holds a NUL byte".into());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_newlines_go_and_nothing_else() {
        assert_eq!(value(b"s\n\n\n".to_vec()).unwrap(), b"s");
        assert_eq!(value(b"\n".to_vec()).unwrap(), b"");
        assert_eq!(value(b"a\nb\r\n".to_vec()).unwrap(), b"a\nb\r");
        assert_eq!(value(b" s \t".to_vec()).unwrap(), b" s \t");
        let mut at_limit = vec![b'x'; MAX_VALUE_BYTES];
        at_limit.extend_from_slice(b"\n\n");
        assert_eq!(value(at_limit).unwrap().len(), MAX_VALUE_BYTES);
        assert!(value(vec![b'x'; MAX_VALUE_BYTES + 1]).is_err());
        assert!(value(b"a\0b".to_vec()).is_err());
    }
}
