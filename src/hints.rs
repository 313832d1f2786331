//! `check`'s warnings about habits brought from shells, dotenv and tini
//! that envshim would silently take otherwise (`run` stays silent): a `$$`
//! in the program line (expanded to `$`, where the kubelet has already
//! expanded it once), `${NAME}` in a value (envshim expands `$(NAME)`
//! only), and an env file given to `--env-dir` (it becomes one variable).
//! Never a value: each names where the text is, not what it is.

use crate::envfile::portable;
use crate::environment::{Environment, Source};
use crate::error::escape;
use crate::program::Word;
use crate::report::Warnings;

/// Every warning of this module about `env` and the program `line`.
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub fn warn(warnings: &mut Warnings, env: &Environment, line: &[Word]) {
    // The trailing words only: a manifest's command is expanded on purpose, as the kubelet does.
    for w in line.iter().filter(|w| w.expand && (w.origin == "the program" || w.origin.starts_with("argument "))) {
        // `$$(` is the escape of a reference, written on purpose.
        if w.text.windows(2).enumerate().any(|(i, p)| p == b"$$" && w.text.get(i + 2) != Some(&b'(')) {
            warnings.push(format!(
                "{} of the program line: envshim expands $$ to $ (and $(VAR)); on Kubernetes the kubelet has already expanded it: --no-expand-args or ENVSHIM_NO_EXPAND_ARGS=1 leaves it as written",
                w.origin
            ));
        }
    }
    for v in env.vars() {
        // What the platform gave (inherited, or a `secretKeyRef`'s value) is a value, not a literal.
        if matches!(v.source, Source::Inherited | Source::Platform(_)) {
            continue;
        }
        let from_file = matches!(v.source, Source::EnvFrom { .. } | Source::FileKey { .. } | Source::FileEnv(_) | Source::EnvDir(_));
        if has_brace_reference(v.value) {
            let (at, how) = match from_file {
                true => (v.describe(), "values read from files are never expanded"),
                false => (format!("{} ({})", v.describe(), v.source), "envshim expands $(NAME), not ${NAME}"),
            };
            warnings.push(format!("{at} holds ${{NAME}}, left as written: {how}"));
        }
        if let Source::EnvDir(file) = &v.source {
            if v.name.ends_with(b".env") || portable::looks_like_env_file(v.value) {
                warnings.push(format!(
                    "{file} looks like an env file, yet --env-dir makes it one variable ({}) holding the whole file: --env-file {file} loads its lines as variables",
                    escape(v.name)
                ));
            }
        }
    }
}

/// `${` then a shell name and `}`: a shell's or dotenv's reference.
fn has_brace_reference(value: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'$', &value[at..]) {
        let rest = &value[at + i + 1..];
        if let Some(inner) = rest.strip_prefix(b"{") {
            let len = inner.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
            if len > 0 && !inner[0].is_ascii_digit() && inner.get(len) == Some(&b'}') {
                return true;
            }
        }
        at += i + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_references_and_env_file_lines() {
        for yes in [&b"http://${HOST}"[..], b"${A_1}x", b"$${B}"] {
            assert!(has_brace_reference(yes), "{yes:?}");
        }
        for no in [&b"$(HOST)"[..], b"${}", b"${1A}", b"${A", b"{A}", b"${A-b}"] {
            assert!(!has_brace_reference(no), "{no:?}");
        }
        assert!(portable::looks_like_env_file(b"# app\nA=1\n\nexport B_2=x y\n"));
        for no in [&b""[..], b"\n# only\n", b"s3cr3t\n", b"A=1\nnot a line\n", b"1A=x", b"-----BEGIN\n"] {
            assert!(!portable::looks_like_env_file(no), "{no:?}");
        }
    }
}
