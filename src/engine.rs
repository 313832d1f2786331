//! A converted container under an engine that does not expand `$(VAR)` in
//! `env` (`podman kube play`, `docker run` given the converted env): the
//! converter's marker says whether a kubelet expanded what the container
//! carries (docs/reference.md, "Under an engine that does not expand").

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::error::Error;

/// The marker: written `$$`, which the kubelet's expansion turns into `$`.
pub const MARKER: &str = "ENVSHIM_EXPANDED";
/// The variable the converter carries the manifest in (every `$` doubled).
pub const MANIFEST_VAR: &str = "ENVSHIM_MANIFEST_JSON";

/// Where the manifest's text came from: `--manifest-json`, or its variable
/// (where the converter puts it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFrom {
    Option,
    Variable,
}

impl JsonFrom {
    /// The name messages show for the text.
    pub fn name(self) -> &'static str {
        match self {
            JsonFrom::Option => "--manifest-json",
            JsonFrom::Variable => MANIFEST_VAR,
        }
    }
}

/// True when the manifest came from `ENVSHIM_MANIFEST_JSON` (`from`) and the
/// marker says nothing expanded the container's `env`; false when a kubelet
/// did, or there is no marker (a manifest written by hand, an older
/// conversion: as before).
pub fn unexpanded(from: JsonFrom) -> Result<bool, Error> {
    if from != JsonFrom::Variable {
        return Ok(false);
    }
    match std::env::var_os(MARKER).as_deref().map(OsStr::as_bytes) {
        None | Some(b"$") => Ok(false),
        Some(b"$$") => Ok(true),
        Some(_) => Err(Error::config(format!(
            "{MARKER} is neither $ (a kubelet expanded the container's env) nor $$ (nothing did): the container's env was changed after kubectl envshim convert wrote it; convert the original again"
        ))),
    }
}

/// The manifest's text as the converter wrote it: every `$` it holds was
/// doubled, and nothing turned `$$` back into `$`. A `$` without its pair
/// means the text was not written so (78).
pub fn undouble(text: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    out.clear();
    out.reserve(text.len());
    let mut rest = text;
    while let Some(i) = memchr::memchr(b'$', rest) {
        if rest.get(i + 1) != Some(&b'$') {
            return Err(Error::config(format!(
                "{MANIFEST_VAR}: a single $ where the converter wrote every $ doubled, and {MARKER} says nothing expanded the container's env: it was changed after kubectl envshim convert wrote it; convert the original again"
            )));
        }
        out.extend_from_slice(&rest[..=i]);
        rest = &rest[i + 2..];
    }
    out.extend_from_slice(rest);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undouble_is_the_inverse_of_doubling() {
        let mut out = Vec::new();
        for text in ["", "{}", "$", "a$b$$c$(X)$$$", "$$(A)"] {
            undouble(text.replace('$', "$$").as_bytes(), &mut out).unwrap();
            assert_eq!(out, text.as_bytes());
        }
        assert!(undouble(b"a$b", &mut out).is_err());
        assert!(undouble(b"$$$", &mut out).is_err());
    }
}
