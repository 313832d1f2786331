//! The house's budgets that a reader cannot see at a glance, checked on the
//! repository's own files (read from `CARGO_MANIFEST_DIR`, `target/` and
//! hidden directories left out): no Rust file over [`MAX_LINES`] lines, and
//! no comment outside `docs/` that quotes a benchmark figure. (The third,
//! the crate's own sort instead of std's, is clippy's `disallowed-methods`
//! in clippy.toml.)

use std::path::{Path, PathBuf};

/// The most lines a source or test file has; a longer one is split into
/// child modules, one concern each.
const MAX_LINES: usize = 600;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, build outputs (`target/`) and hidden directories
/// (`.git`, `.cargo`) left out, sorted (so the failure lists are stable).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    dirs.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn no_rust_file_is_over_the_line_budget() {
    let rust: Vec<PathBuf> = files_under(&root()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")).collect();
    assert!(rust.iter().any(|p| p.ends_with("src/lib.rs")), "the walk finds the crate's sources");
    assert!(rust.iter().any(|p| p.ends_with("kubectl-envshim/src/lib.rs")), "and the converter's");
    let over: Vec<String> = rust
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", shown(p)))
        })
        .collect();
    assert!(over.is_empty(), "over {MAX_LINES} lines (split into child modules by concern):\n{}", over.join("\n"));
}

// ------------------------------------------------------------------ figures in comments

/// The files whose comments are checked: the Rust sources of both crates,
/// the benchmarks, the fuzz targets and the tools, and the `#` comments of
/// the build's configuration. Tests are left out: a test's input sizes
/// ("a 64 KiB file", "10 MB written") are what it does, not a measurement.
fn commented_files() -> Vec<PathBuf> {
    let root = root();
    let mut files: Vec<PathBuf> = ["src", "kubectl-envshim/src", "benches", "fuzz", "tools"]
        .iter()
        .flat_map(|d| files_under(&root.join(d)))
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.ends_with("tests.rs") && !p.strip_prefix(&root).unwrap().components().any(|c| c.as_os_str() == "tests"))
        .collect();
    files.extend(["Cargo.toml", "kubectl-envshim/Cargo.toml", "fuzz/Cargo.toml", "musl-build.sh", "clippy.toml"].map(|f| root.join(f)));
    files
}

/// The comments of a Rust file, each with its line number: `//` to the end
/// of the line (doc comments included) and `/* */` blocks, never text inside
/// a string or character literal.
fn rust_comments(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let line_at = |i: usize| text[..i].bytes().filter(|&c| c == b'\n').count() + 1;
    // Whether the byte before `i` continues a name (so `r` or `b` there is no literal's prefix).
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut comments = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                comments.push((line_at(i), text[i..end].to_string()));
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                comments.push((line_at(i), text[i..end].to_string()));
                i = end;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && (!ident(i) || b[i - 1] == b'b' && !ident(i - 1)) => {
                // A raw string: r"..." or r#"..."# (as many `#` to close as to open).
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let from = i + 2 + hashes;
                i = text[from..].find(&close).map_or(b.len(), |n| from + n + close.len());
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            // A character literal ('"', '\'', '/') but not a lifetime ('a).
            b'\'' if b.get(i + 1) == Some(&b'\\') => i += text[i + 3..].find('\'').map_or(b.len(), |n| n + 4),
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            _ => i += 1,
        }
    }
    comments
}

/// The `#` comments of a TOML file or shell script: from a `#` that starts a
/// line or follows a blank, outside quotes, to the end of the line.
fn hash_comments(text: &str) -> Vec<(usize, String)> {
    let mut comments = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (mut single, mut double) = (false, false);
        let mut prev = b' ';
        for (i, c) in line.bytes().enumerate() {
            match c {
                b'\'' if !double => single = !single,
                b'"' if !single => double = !double,
                b'#' if !single && !double && (prev == b' ' || prev == b'\t') => {
                    comments.push((n + 1, line[i..].to_string()));
                    break;
                }
                _ => {}
            }
            prev = c;
        }
    }
    comments
}

/// The benchmark figures `text` quotes, each with where it starts: a number followed by a unit the
/// benchmarks measure in (docs/performance.md):
/// - instructions (`12 K instructions`, `0.1 M instructions`) or page faults
///   (`3 page faults`, `115 faults`);
/// - the time of a start: `µs` or `ns`; `ms` after a space and before a
///   comparison or a start (`0.4 ms slower`, `1.2 ms of a start`: the shim's
///   own intervals, `every 100 ms`, `500ms`, are behaviour, not figures);
/// - a throughput: `GiB/s`, `MiB/s`, `GB/s`, `MB/s`;
/// - a percentage: `6.6%`, `2 %`, `5 percent`;
/// - the binary's size: bytes, `B`, `KB`, `KiB` or `MB` followed at once by a
///   comparison (`smaller`, `larger`, `bigger`, `more`, `fewer`, `less`) or by
///   what they are of (`of the binary`, `of code`, `shipped`), or preceded in
///   the same phrase by `binary` (`the binary stays within its 500,000 bytes`).
///
/// A limit or an input's size (`a 64 KiB file`, `entries of 16 bytes`) is none.
fn figures(text: &str) -> Vec<(usize, String)> {
    let lower = text.to_lowercase();
    let s = lower.as_str();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = s[from..].find(|c: char| c.is_ascii_digit()).map(|n| from + n) {
        // The number: digits and their separators (1,000 / 0.5 / 500_000).
        let mut end = start;
        while let Some(c) = s[end..].chars().next() {
            let separator = matches!(c, ',' | '.' | '_') && s[end + 1..].starts_with(|d: char| d.is_ascii_digit());
            if !c.is_ascii_digit() && !separator {
                break;
            }
            end += c.len_utf8();
        }
        from = end;
        if start > 0 && s[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue; // part of a name: `u64`, `sse2`, `x86_64`
        }
        let spaced = s[end..].starts_with(' ');
        let mut unit = s[end..].trim_start_matches(' ');
        // A multiplier (`12 K instructions`, `0.1 M instructions`).
        for m in ["k ", "m ", "thousand ", "million "] {
            if let Some(rest) = unit.strip_prefix(m) {
                if rest.starts_with("instruction") {
                    unit = rest;
                }
            }
        }
        let word_ends = |u: &str, w: &str| u.starts_with(w) && !u[w.len()..].starts_with(|c: char| c.is_alphanumeric());
        // The few words after a unit `w` that starts `unit`.
        let after = |w: &str| unit[w.len()..].chars().take(24).collect::<String>().trim_start().to_string();
        let compared = |a: &str| ["smaller", "larger", "bigger", "more", "fewer", "less", "slower", "faster"].iter().any(|w| a.starts_with(w));
        let measured = ["instruction", "page fault", "fault"].iter().any(|w| unit.starts_with(w))
            || ["µs", "ns"].iter().any(|w| word_ends(unit, w))
            || (spaced && word_ends(unit, "ms") && (compared(&after("ms")) || after("ms").contains("start")))
            || ["gib/s", "mib/s", "gb/s", "mb/s"].iter().any(|w| unit.starts_with(w))
            || unit.starts_with('%')
            || word_ends(unit, "percent");
        let size = ["bytes", "byte", "b", "kb", "kib", "mb"].iter().find(|w| word_ends(unit, w));
        let of_the_binary = size.is_some_and(|w| {
            let after = after(w);
            let before: String = s[..start].chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
            let before = before.rsplit(['.', ';', ':', '(']).next().unwrap_or("");
            compared(&after) || ["of the binary", "of the amd64 binary", "of code", "of the shipped", "shipped"].iter().any(|w| after.starts_with(w)) || before.contains("binary")
        });
        if measured || of_the_binary {
            let phrase_end = s[end..].find([',', ';', ')', '(', '.', ':']).map_or(s.len(), |n| end + n).min(end + 30);
            let phrase_end = (phrase_end..=s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(s.len());
            found.push((start, s[start..phrase_end].trim_end().to_string()));
        }
    }
    found
}

/// The figures of a file's comments, each with the line its number is on:
/// the comment lines that follow one another are read as one text, so a
/// figure whose unit is on the next line is found too.
fn figures_in_comments(comments: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < comments.len() {
        // One run of comment lines: their text joined, and where each line starts in it.
        let (mut text, mut starts) = (String::new(), Vec::new());
        let mut j = i;
        while j < comments.len() && (j == i || comments[j].0 == comments[j - 1].0 + 1) {
            starts.push((text.len(), comments[j].0));
            text.push_str(comments[j].1.trim_start_matches(['/', '!', '#']).trim().to_lowercase().as_str());
            text.push(' ');
            j += 1;
        }
        for (at, phrase) in figures(&text) {
            let line = starts.iter().rev().find(|(start, _)| *start <= at).map_or(0, |&(_, line)| line);
            found.push((line, phrase));
        }
        i = j;
    }
    found
}

/// The definition, row by row: what is a figure and what is not.
#[test]
fn a_figure_is_a_number_with_a_unit_the_benchmarks_measure_in() {
    for figure in [
        "// 12 K instructions a start",
        "// ~0.1 M instructions fewer",
        "// ~100 instructions for each entry",
        "# 13 K instructions and 3 page faults fewer",
        "// 115 faults against 75",
        "// about 2 µs in all",
        "// 40ns a call",
        "// 0.4 ms of a start",
        "// 1.5 ms slower",
        "// ≥ 1 GiB/s on every shape",
        "// 800 MB/s",
        "// one cost 1% of a start",
        "// 1.9 % more",
        "// 5 percent",
        "# (~380 KB smaller: see",
        "# 544 bytes more",
        "# .eh_frame was 44 KB of the binary",
        "// (3.1 KB of the amd64 binary)",
        "// ~4 KB of code for each element type",
        "// the binary stays within its 500,000 bytes",
        "// (≤ 500 KB shipped, ~20 MB for a debug build)",
    ] {
        assert!(!figures(figure).is_empty(), "a figure: {figure}");
    }
    for not in [
        "// Largest env file accepted (KEP-3721: 64 KiB), inclusive.",
        "// One line's entry, in 16 bytes",
        "// (500ms, 30s, 2m; a bare number is seconds)",
        "// a duration as messages show it: `1500ms`",
        "// the x86_64 and sse2 paths, u64 words",
        "// at most 4,096 bytes, cut at a line end",
        "// 2 MB of `$(` took minutes",
        "// a page fault per 4 KiB of each",
        "// exit code 65, 3 tries, 10 s",
        "// looked for again every 100 ms, the way",
        "// blocks of 16 bytes or more on free lists",
    ] {
        assert_eq!(figures(not), [], "not a figure: {not}");
    }
}

#[test]
fn the_comment_readers_find_comments_and_only_them() {
    let rust = "let a = \"// 5% \\\" in a string\"; // one\nlet c = '\"'; /* two */ let r = r#\"// \"# ;\nlet l: &'a str = br\"//\"; let q = '\\''; // three";
    let found: Vec<(usize, String)> = rust_comments(rust);
    assert_eq!(found, [(1, "// one".to_string()), (2, "/* two */".to_string()), (3, "// three".to_string())]);
    let sh = "x=1 # one\necho \"# not\" '#not' ${#x}\n# two";
    assert_eq!(hash_comments(sh), [(1, "# one".to_string()), (3, "# two".to_string())]);
    // A figure whose unit is on the next comment line, named on the line of its number.
    let split = rust_comments("// the first line, then 84,600\n// instructions fewer\nfn f() {}\n// 3 page\n\n// faults");
    assert_eq!(figures_in_comments(&split), [(1, "84,600 instructions fewer".to_string())]);
}

#[test]
fn no_comment_outside_docs_quotes_a_benchmark_figure() {
    let mut hits = Vec::new();
    let mut read = 0;
    for path in commented_files() {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", shown(&path)));
        read += 1;
        let comments = if path.extension().is_some_and(|e| e == "rs") { rust_comments(&text) } else { hash_comments(&text) };
        for (line, figure) in figures_in_comments(&comments) {
            hits.push(format!("{}:{line}: {figure}", shown(&path)));
        }
    }
    assert!(read > 50, "the comments of the sources were read ({read} files)");
    assert!(
        hits.is_empty(),
        "comments that quote a benchmark figure (say why without the number, and point to docs/performance.md, where the figure goes):\n{}",
        hits.join("\n")
    );
}
