//! The converter's door: everything `kubectl envshim` (kubectl-envshim/)
//! may use of the shim's library, and nothing else. The rest of the library
//! is private, so it can change behind this module; the converter names no
//! other `envshim::` path (tests/layers.rs checks its sources).
//!
//! Each item is here because the converter writes or checks what the shim
//! reads, and the two must agree by construction, not by a copy:
//!
//! - **Errors and exit codes** ([`Error`], [`ExitCode`], [`JsonPath`],
//!   [`Segment`], [`Tool`], [`escape`], [`os_reason`], [`exit_code_help`]):
//!   both tools say a problem the same way, with the same numbers
//!   (docs/reference.md, "Exit codes"), and never print a value as is.
//! - **The manifest** ([`parse_manifest`], [`parse_manifest_named`],
//!   [`Tree`], [`containers`], [`SEEN_PREFIX`], [`VALUE_PREFIX`],
//!   [`MANIFEST_VAR`], [`MARKER`]): the converter writes the manifest and
//!   the variables the shim reads, checks what it wrote with the shim's own
//!   reader, and finds a document's containers with the shim's own walk.
//! - **Names, limits, expansion** ([`is_relaxed`], [`MAX_NAME_BYTES`],
//!   [`MAX_EXEC_STRING_BYTES`], [`expand`], [`expand_capped`]): a name or a
//!   size the shim would refuse is refused when converting, and a value is
//!   expanded as the shim (and the kubelet) will.
//! - **The command line** ([`values`], [`Grammar`], [`WatchOptions`],
//!   [`refused_line`], [`refused_value`], [`closest`]): the settings the
//!   converter passes on to the shim are parsed by the shim's own parsers
//!   and definitions, and a refused one is said in the shim's words.
//! - **Output and `fmt`** ([`write_stdout`], [`fmt()`]): stdout written as
//!   the shim writes it (a closed pipe is an error, not a signal), and
//!   `kubectl envshim fmt`, which is the shim's env-file code (its own
//!   binary does not call it, so it is not in it).

pub use crate::cli::values;
pub use crate::cli::{refused_line, refused_value};
pub use crate::engine::{MANIFEST_VAR, MARKER};
pub use crate::envfile::Grammar;
pub use crate::error::{escape, exit_code_help, os_reason, Error, ExitCode, JsonPath, Segment, Tool};
pub use crate::expand::{expand, expand_capped};
pub use crate::fmt::fmt;
pub use crate::limits::{MAX_EXEC_STRING_BYTES, MAX_NAME_BYTES};
pub use crate::manifest::{containers, parse as parse_manifest, parse_named as parse_manifest_named, Tree, SEEN_PREFIX, VALUE_PREFIX};
pub use crate::names::is_relaxed;
pub use crate::report::write_stdout;
pub use crate::suggest::closest;
pub use crate::watch::WatchOptions;

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the converter writes into workloads are the ones the shim
    /// reads: a workload converted once runs with any later shim.
    #[test]
    fn the_names_written_into_workloads_are_the_shims() {
        assert_eq!(MANIFEST_VAR, "ENVSHIM_MANIFEST_JSON");
        assert_eq!(MARKER, "ENVSHIM_EXPANDED");
        assert_eq!((SEEN_PREFIX, VALUE_PREFIX), ("ENVSHIM_SEEN_", "ENVSHIM_VALUE_"));
    }

    /// What the converter checks a written manifest with is the shim's
    /// reader: it accepts a manifest and refuses a broken one as a
    /// configuration error, without its values.
    #[test]
    fn the_manifest_is_read_by_the_shims_reader() {
        assert!(parse_manifest(br#"{"env": [{"name": "A", "value": "x"}]}"#).is_ok());
        let errors = parse_manifest_named(br#"{"env": [{"name": "A", "value": "sentinel-secret-1"}], "env": 1}"#, "manifest m", Some("m"), None)
            .map(|_| ())
            .unwrap_err();
        assert!(errors.iter().all(|e| e.code == ExitCode::Config), "{errors:?}");
        assert!(errors.iter().all(|e| !e.to_string().contains("sentinel-secret-1")), "{errors:?}");
        assert!(errors.iter().any(|e| e.to_string().contains("manifest m")), "{errors:?}");
    }

    /// A name and a size are judged as the shim judges them.
    #[test]
    fn names_limits_and_expansion_are_the_shims() {
        assert!(is_relaxed(b"my.var-1") && !is_relaxed(b"A=B") && !is_relaxed(b""));
        assert!(is_relaxed(&[b'A'; MAX_NAME_BYTES]));
        assert_eq!(expand(b"$(A)-$$(A)-$(B)", |n| (n == b"A").then_some(&b"x"[..])), b"x-$(A)-$(B)");
        let mut out = Vec::new();
        let total = expand_capped(b"$(A)$(A)$(A)", |_| Some(&b"1234"[..]), &mut out, 8);
        assert_eq!(total, 12, "the whole length, past the cap");
        assert!(out.len() <= 8);
    }

    /// The converter shows names and paths through [`escape`]: a control
    /// byte never reaches a terminal as is.
    #[test]
    fn escape_shows_control_bytes_as_text() {
        let shown = escape(b"a\x1b[31m\n");
        assert!(!shown.contains('\x1b') && !shown.contains('\n'), "{shown}");
        assert!(shown.starts_with('a'));
    }

    /// The values the converter passes on are parsed by the shim's parsers.
    #[test]
    fn settings_are_parsed_by_the_shims_parsers() {
        assert_eq!(values::switch("yes"), Ok(true));
        assert_eq!(values::switch("off"), Ok(false));
        assert!(values::switch("maybe").is_err());
        assert_eq!(values::grammar_word(Grammar::Kubelet), "kubelet");
        assert_eq!(values::grammar_word(Grammar::Envshim), "envshim");
        assert_eq!(closest(b"verison", &["version", "env"]), Some("version"));
    }

    /// The containers of a document, found by the shim's walk over any tree.
    #[test]
    fn containers_are_found_in_any_tree() {
        #[derive(Clone, Copy)]
        enum Node {
            Pod,
            List(&'static str),
            Container,
        }
        impl<'v> Tree<'v> for Node {
            fn fields(self) -> Option<impl Iterator<Item = (&'v str, Self)>> {
                match self {
                    Node::Pod => Some(vec![("initContainers", Node::List("i")), ("containers", Node::List("c"))].into_iter()),
                    Node::Container => Some(Vec::new().into_iter()),
                    Node::List(_) => None,
                }
            }
            fn items(self) -> Option<impl Iterator<Item = Self>> {
                match self {
                    Node::List("i") => Some(vec![Node::Container].into_iter()),
                    Node::List(_) => Some(vec![Node::Container, Node::Container].into_iter()),
                    _ => None,
                }
            }
        }
        let mut init = Vec::new();
        containers(Node::Pod, &mut |is_init, _| init.push(is_init));
        assert_eq!(init, [true, false, false]);
    }
}
