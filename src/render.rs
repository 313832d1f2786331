//! `envshim render`: the final environment with each variable's source.
//! Values are masked unless `--show-values`.

use std::io::{self, Write};

use crate::envfile::{written, Grammar};
use crate::environment::{Source, Var};
use crate::error::{escape, json_string};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Env,
    Json,
}

#[cfg_attr(envshim_size, optimize(size))]
pub fn render(out: &mut impl Write, vars: &[Var], format: Format, show_values: bool, grammar: Grammar) -> io::Result<()> {
    match format {
        Format::Env => {
            // The grammar the env files were read with, when they gave a variable: a comment, so the output stays an env file.
            if from_env_files(vars) {
                writeln!(out, "# {}", described(grammar))?;
            }
            env(out, vars, show_values)
        }
        Format::Json => json(out, vars, show_values),
    }
}

/// How `render` and `check` name the grammar env files were read with.
pub fn described(grammar: Grammar) -> &'static str {
    match grammar {
        Grammar::Envshim => "env files read with envshim's grammar",
        Grammar::Kubelet => "env files read with the kubelet's grammar",
    }
}

/// Whether a variable of `vars` came from an env file.
pub fn from_env_files(vars: &[Var]) -> bool {
    vars.iter().any(|v| matches!(v.source, Source::EnvFrom { .. } | Source::FileKey { .. }))
}

#[cfg_attr(envshim_size, optimize(size))]
fn env(out: &mut impl Write, vars: &[Var], show_values: bool) -> io::Result<()> {
    for v in vars {
        let name = escape(v.name);
        writeln!(out, "# {name} from {}", v.source)?;
        if show_values {
            write!(out, "{name}=")?;
            out.write_all(&written(v.value))?;
            writeln!(out)?;
        } else {
            writeln!(out, "{name}=<set, {} bytes>", v.value.len())?;
        }
    }
    Ok(())
}

#[cfg_attr(envshim_size, optimize(size))]
fn json(out: &mut impl Write, vars: &[Var], show_values: bool) -> io::Result<()> {
    let mut buf = String::from("{");
    for (i, v) in vars.iter().enumerate() {
        buf.push_str(if i == 0 { "\n  " } else { ",\n  " });
        json_string(&mut buf, &String::from_utf8_lossy(v.name));
        buf.push_str(": {\"source\": ");
        json_string(&mut buf, &v.source.to_string());
        buf.push_str(&format!(", \"bytes\": {}", v.value.len()));
        if show_values {
            buf.push_str(", \"value\": ");
            json_string(&mut buf, &String::from_utf8_lossy(v.value));
        }
        buf.push('}');
    }
    buf.push_str(if vars.is_empty() { "}\n" } else { "\n}\n" });
    out.write_all(buf.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes() {
        let mut s = String::new();
        json_string(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, r#""a\"b\\c\nd\u0001""#);
    }
}
