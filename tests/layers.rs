//! The library's modules form layers: data flows one way (options and
//! manifest → sources → environment → program line → exec), so no module
//! imports one that, directly or through others, imports it back; the
//! lowest layer, `sys`, imports nothing of the crate; the top one is the
//! crate root, `lib.rs` (the entry points), with `commands` (what each
//! does) below it alone, and beside them `cli` (the command line's
//! definition, which builds their options), with `pipeline` (the steps they
//! share) below them and above every other module. Read from the sources'
//! `crate::` paths, and lib.rs's paths of its modules (test code excluded: a
//! test may use anything). A `crate::` path to an item that is not a module
//! is one to the root: `lib`; a `$crate::` path, in an exported macro, is
//! one of the crate that calls the macro, not of the module. The library's
//! two public modules, `converter` (the converter's door) and `internals`
//! (the shim's own benches, fuzz targets, tools and tests), re-export from
//! the others and sit at the top with lib.rs; nothing of the library uses them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every top-level module of `src/` and the crate root, `lib` (main.rs
/// excluded: the binary, above the library), and the modules each names:
/// through `crate::` (`lib` for an item of the root), or, in lib.rs, by their own names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    imports_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// [`imports`] of the crate whose sources are in `src`.
fn imports_of(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ").or_else(|| l.trim().strip_prefix("mod ")))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    let mut graph = BTreeMap::new();
    graph.insert("lib".to_string(), module_paths(&lib, &modules));
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_string) else { continue };
        if name == "lib" || name == "main" {
            continue;
        }
        // A module is `src/m.rs`, `src/m/mod.rs` or both `src/m.rs` and `src/m/*.rs`.
        let mut files = Vec::new();
        if path.is_dir() {
            collect(&path, &mut files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.clone());
        } else {
            continue;
        }
        let used: &mut BTreeSet<String> = graph.entry(name.clone()).or_default();
        for file in files {
            if file.file_name().is_some_and(|f| f == "tests.rs") {
                continue;
            }
            for m in crate_paths(&std::fs::read_to_string(&file).unwrap()) {
                let m = if modules.contains(&m) { m } else { "lib".to_string() };
                if m != name {
                    used.insert(m);
                }
            }
        }
    }
    graph
}

fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The first segment of every `crate::` path in `text`, up to its test
/// module (`#[cfg(test)]`), comments skipped; `crate::{a, b::c}` names a and b.
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            // `$crate::`, in an exported macro, is a path of the crate that calls it (the binary).
            let in_macro = rest[..at].ends_with('$');
            rest = &rest[at + "crate::".len()..];
            if in_macro {
                continue;
            }
            let group = rest.strip_prefix('{').map(|g| &g[..g.find('}').unwrap_or(g.len())]);
            for item in group.map_or_else(|| vec![rest], |g| g.split(',').collect()) {
                let ident: String = item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !ident.is_empty() {
                    found.push(ident);
                }
            }
        }
    }
    found
}

/// The modules lib.rs's code names (`name::`, `use name::...`, `pub use
/// name::...`), up to its test module, comments skipped.
fn module_paths(lib: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in lib.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let idents = code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        for path in idents {
            if let Some((first, _)) = path.split_once("::") {
                if modules.contains(first) {
                    found.insert(first.to_string());
                }
            }
        }
    }
    found
}

#[test]
fn no_module_reaches_up_to_the_crate_root() {
    let graph = imports();
    assert!(graph["lib"].contains("pipeline"), "lib.rs does not use the pipeline: {:?}", graph["lib"]);
    for (m, used) in &graph {
        assert!(!used.contains("lib"), "{m} uses an item of lib.rs (a `crate::` path that is not a module): lib.rs is the top, above every module");
    }
}

/// The converter is built the same way: a library whose root holds the
/// entry points alone (its `main.rs` parses and calls them).
#[test]
fn no_module_of_the_converter_reaches_up_to_its_root() {
    let graph = imports_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kubectl-envshim/src"));
    assert!(graph["lib"].contains("stream"), "the converter's lib.rs does not use its stream: {:?}", graph["lib"]);
    for (m, used) in &graph {
        assert!(!used.contains("lib"), "the converter's {m} uses an item of its lib.rs (a `crate::` path that is not a module): lib.rs is the top");
    }
}

#[test]
fn only_the_crate_root_the_commands_and_the_command_line_use_the_pipeline() {
    let graph = imports();
    assert!(graph["cli"].contains("pipeline"), "cli does not build the pipeline's options: {:?}", graph["cli"]);
    assert!(graph["commands"].contains("pipeline"), "the commands do not run the pipeline: {:?}", graph["commands"]);
    for (m, used) in &graph {
        assert!(
            ["lib", "cli", "commands"].contains(&m.as_str()) || !used.contains("pipeline"),
            "{m} uses the pipeline, which sits above every module but lib.rs, commands and cli"
        );
        assert!(m == "lib" || !used.contains("commands"), "{m} uses the commands, which only lib.rs names");
    }
}

#[test]
fn no_module_knows_the_command_line() {
    let graph = imports();
    assert!(graph["lib"].contains("cli"), "lib.rs does not hand the binary its command line: {:?}", graph["lib"]);
    for (m, used) in &graph {
        // The doors hand the definitions to the binaries: lib.rs to the shim's, converter to kubectl-envshim.
        let door = ["lib", "converter", "internals"].contains(&m.as_str());
        assert!(door || !used.contains("cli"), "{m} uses cli: the library takes plain options, and only the binary parses");
    }
}

/// The shim's library has two public modules: `converter`, the converter's
/// one door, and `internals` (hidden), for the shim's own benches, fuzz
/// targets, tools and tests; every other module is private.
#[test]
fn the_library_opens_two_modules_alone() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let public: Vec<&str> = lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")).collect();
    assert_eq!(public, ["converter;", "internals;"], "lib.rs's public modules");
    assert!(
        lib.lines().all(|l| !l.trim().starts_with("pub(crate) mod ") && !l.trim().starts_with("pub(super) mod ")),
        "a module of lib.rs is private (`mod`) or one of the two doors"
    );
    for (m, used) in &imports() {
        assert!(!used.contains("converter") && !used.contains("internals"), "{m} uses a door: the doors re-export the library, which never uses them");
    }
}

/// The `envshim::` paths in `text` (not those of `kubectl_envshim::`), each
/// up to the end of its first two segments: `envshim::converter::Error`
/// gives `envshim::converter::`.
fn envshim_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("envshim::").map(|a| a + from) {
        from = at + "envshim::".len();
        if text[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let segment: String = text[from..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':' || *c == '{').collect();
        let first = segment.split("::").next().unwrap_or_default();
        found.push(format!("envshim::{first}{}", if segment.len() > first.len() { "::" } else { "" }));
    }
    found
}

/// The converter (its sources and its tests, comments included: a pointer
/// is a path too) reaches the shim's library through its door alone,
/// `envshim::converter` (src/converter.rs).
#[test]
fn the_converter_uses_the_shim_through_its_door_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("kubectl-envshim");
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    collect(&root.join("tests"), &mut files);
    let mut through_the_door = 0;
    for file in files {
        for path in envshim_paths(&std::fs::read_to_string(&file).unwrap()) {
            assert_eq!(
                path,
                "envshim::converter::",
                "{}: the converter names `{path}`: it uses the shim's library through `envshim::converter` alone",
                file.display()
            );
            through_the_door += 1;
        }
    }
    assert!(through_the_door > 20, "the converter names envshim::converter {through_the_door} times");
}

#[test]
fn the_path_reader_names_each_envshim_path_and_skips_others() {
    let text = "use envshim::converter::{Error, escape};\nuse kubectl_envshim::cli;\n// envshim::error::Error\nenvshim::fmt(x); envshim::{a, b}; envshim::WatchOptions";
    assert_eq!(envshim_paths(text), ["envshim::converter::", "envshim::error::", "envshim::fmt", "envshim::{a", "envshim::WatchOptions"]);
}

#[test]
fn sys_imports_nothing_of_the_crate() {
    let graph = imports();
    assert!(graph.contains_key("sys"), "no sys module found: {:?}", graph.keys());
    assert_eq!(graph["sys"], BTreeSet::new(), "sys is the lowest layer");
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = imports();
    // Depth-first search; a module met again while on the path closes a cycle.
    fn visit<'g>(m: &'g str, graph: &'g BTreeMap<String, BTreeSet<String>>, path: &mut Vec<&'g str>, done: &mut BTreeSet<&'g str>) {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m);
            panic!("import cycle: {}", cycle.join(" -> "));
        }
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for next in graph.get(m).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_reader_finds_grouped_and_nested_paths_and_skips_tests_and_comments() {
    let text = "use crate::a::X;\n// crate::commented\nuse crate::{b, c::Y};\nfn f() { crate::d::g(); }\nmacro_rules! m { () => { $crate::Argv::new() } }\n#[cfg(test)]\nmod tests { use crate::e; }\n";
    assert_eq!(crate_paths(text), ["a", "b", "c", "d"]);
    let lib = "pub mod a;\npub mod b;\nmod c;\nuse a::X;\n// b::commented\npub use c::{Y, Z};\nfn f() { std::mem::drop(x::y()); }\n#[cfg(test)]\nmod tests { use b::e; }\n";
    let modules = ["a", "b", "c"].map(String::from).into();
    assert_eq!(module_paths(lib, &modules), ["a", "c"].map(String::from).into());
}
