//! `kubectl envshim fmt` (docs/reference.md, "Env files the kubelet reads
//! alike"): env files rewritten in place in the form that envshim's grammar
//! and the kubelet's read alike, through the converter's binary (the shim's
//! has no `fmt`): the rewrite and what both grammars read from it, mode and
//! owner, `--check` (the lint: every line, all at once), stdin, the values
//! it refuses (each line named, never shown), idempotence.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};

use crate::common::*;

/// A file written for Docker and the shell: every form envshim's grammar reads.
fn team_file() -> String {
    let s = SENTINEL;
    format!(
        "# team settings\n\
         export DB_USER = dev   # who\n\
         DB_PASSWORD=\"{s}\\n2\" # escaped\n\
         \x20 MULTI='first\n\
         # a line of the value, not a comment\n\
         last'\n\
         \n\
         DB_USER={s}-last\n\
         HASH=#not-a-comment\r\n\
         TABS\t=\t\"a\tb\"\n"
    )
}

/// What `fmt` makes of [`team_file`]: the name given twice where it was
/// first (its place in the environment), with the last value.
fn team_file_formatted() -> String {
    let s = SENTINEL;
    format!(
        "# team settings\n\
         DB_USER='{s}-last'\n\
         DB_PASSWORD='{s}\n2' # escaped\n\
         MULTI='first\n\
         # a line of the value, not a comment\n\
         last'\n\
         \n\
         HASH='#not-a-comment'\r\n\
         TABS='a\tb'\n"
    )
}

/// name -> value of `file` read with `grammar`.
/// (The original's duplicate name gets a warning: only the exit code is checked.)
fn read_with(grammar: &str, file: &str) -> std::collections::BTreeMap<String, String> {
    let out = envshim(["render", "--format", "json", "--show-values", "--env-grammar", grammar, "--env-file", file]).run();
    out.code(0);
    values(&rendered(&out))
}

#[test]
fn rewrites_in_place_into_what_both_grammars_read_alike() {
    let v = Volume::new();
    let path = v.file("team.env", team_file());
    let file = path.to_str().unwrap();
    let before = read_with("envshim", file);
    assert_eq!(before.len(), 5, "{before:?}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let owner = if am_root() {
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        (65534, 65534)
    } else {
        let m = std::fs::metadata(&path).unwrap();
        (m.uid(), m.gid())
    };
    let out = kubectl_envshim(["fmt", file]).run();
    out.ok().no_sentinel();
    assert!(out.stdout.is_empty());
    assert_eq!(String::from_utf8(v.read("team.env")).unwrap(), team_file_formatted());
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    assert_eq!((meta.uid(), meta.gid()), owner);
    let left: Vec<_> = std::fs::read_dir(v.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "a temporary file was left: {left:?}");
    assert_eq!(read_with("envshim", file), before);
    assert_eq!(read_with("kubelet", file), before);
    envshim(["check", "--env-grammar", "kubelet", "--env-file", file]).run().ok();
}

#[test]
fn check_lists_the_files_that_would_change_and_changes_nothing() {
    let v = Volume::new();
    let loose = v.file_str("loose.env", team_file());
    let done = v.file_str("done.env", team_file_formatted());
    let mtime = |p: &str| std::fs::metadata(p).unwrap().mtime_nsec();
    let (loose_mtime, done_mtime) = (mtime(&loose), mtime(&done));
    let out = kubectl_envshim(["fmt", "--check", &loose, &done]).run();
    out.code(1).no_sentinel();
    // Each line the kubelet reads otherwise, FILE:LINE: what it needs.
    let listed: Vec<String> = out.stdout_str().lines().map(|l| l.split(": ").next().unwrap().to_string()).collect();
    assert_eq!(listed, [2, 3, 8, 9, 10].map(|n| format!("{loose}:{n}")), "{}", out.stdout_str());
    assert!(out.stderr.is_empty(), "{}", out.stderr_str());
    assert_eq!(v.read("loose.env"), team_file().as_bytes());
    assert_eq!((mtime(&loose), mtime(&done)), (loose_mtime, done_mtime));
    let out = kubectl_envshim(["fmt", "--check", &done]).run();
    out.ok();
    assert!(out.stdout.is_empty());
}

/// `fmt` of its own output changes nothing; a file reached through a symlink
/// is rewritten where it is, the link kept.
#[test]
fn is_idempotent_and_keeps_symlinks() {
    let v = Volume::new();
    v.file("real.env", team_file());
    let link = v.symlink("link.env", "real.env");
    let link = link.to_str().unwrap();
    kubectl_envshim(["fmt", link]).run().ok();
    assert!(std::fs::symlink_metadata(link).unwrap().file_type().is_symlink());
    let once = v.read("real.env");
    assert_eq!(once, team_file_formatted().as_bytes());
    kubectl_envshim(["fmt", "--check", link]).run().ok();
    kubectl_envshim(["fmt", link]).run().ok();
    assert_eq!(v.read("real.env"), once);
}

/// A name given more than once stays where it was first, with the value
/// envshim's grammar reads (the last): the program gets its variables in
/// the same order after `fmt` as before, under either grammar (`fmt`
/// dropped the first line, which moved the name after the others).
#[test]
fn a_name_given_again_keeps_its_place_in_the_environment() {
    let v = Volume::new();
    let file = v.file_str("dup.env", format!("A='1'\nB='2'\nexport A=\"{SENTINEL}\" # last\nC=3\n"));
    // (The original's duplicate gets a warning: only the exit code is checked.)
    let env = |grammar: &str| envshim(["run", "--env-grammar", grammar, "--env-file", &file, "--"]).args(print_env()).run().code(0).env0();
    let before = env("envshim");
    let names: Vec<&str> = before.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(before[0].1, SENTINEL);
    kubectl_envshim(["fmt", &file]).run().ok().no_sentinel();
    assert_eq!(String::from_utf8(v.read("dup.env")).unwrap(), format!("A='{SENTINEL}' # last\nB='2'\nC='3'\n"));
    assert_eq!(env("envshim"), before);
    assert_eq!(env("kubelet"), before);
}

/// `fmt -` reads stdin and writes stdout.
#[test]
fn dash_reads_stdin_and_writes_stdout() {
    let run = |input: &[u8], check: bool| {
        let mut cmd = Command::new(converter());
        cmd.arg("fmt").args(check.then_some("--check")).arg("-").env_clear();
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(team_file().as_bytes(), false);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), team_file_formatted());
    let out = run(team_file().as_bytes(), true);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("-:2: the name is given again on line 8"));
    let out = run(format!("K=it's {SENTINEL}\n").as_bytes(), false);
    assert_eq!(out.status.code(), Some(65));
    assert!(out.stdout.is_empty());
    assert_no_sentinel(&out.stderr, "stderr");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kubectl-envshim: -:1: cannot be written in the kubelet's grammar"));
    // Bounded as a file is: 64 KiB.
    let out = run(&vec![b'#'; 70_000], false);
    assert_eq!(out.status.code(), Some(65));
}

/// A value the kubelet's grammar cannot hold leaves its file as it was, with
/// the file, the line and why (never the value); the other files are done.
#[test]
fn a_value_without_a_kubelet_form_refuses_its_file_only() {
    let s = SENTINEL;
    let v = Volume::new();
    let cases = [
        ("quote.env", format!("A={s}\nPW=\"it's {s}\"\n"), ":2:", "single quote"),
        ("empty.env", format!("A={s}\n\nFLAGS=\n"), ":3:", "empty"),
        ("crlf.env", format!("A={s}\nB=\"{s}\\r\\n\"\n"), ":2:", "carriage return"),
        ("long.env", format!("K=\"{}\" #{}", "x".repeat(100), "c".repeat(65_534 - 104)), ":1:", "without a line feed"),
        ("broken.env", format!("A={s}\n{s}\n"), ":2:", "has no '='"),
    ];
    let mut args = vec!["fmt".to_string()];
    for (name, content, ..) in &cases {
        args.push(v.file_str(name, content));
    }
    let good = v.file_str("good.env", team_file());
    args.push(good.clone());
    let out = kubectl_envshim(&args).run();
    let lines = out.fails(65);
    out.no_sentinel();
    assert_eq!(lines.len(), cases.len(), "{lines:#?}");
    for ((name, content, at, why), line) in cases.iter().zip(&lines) {
        assert!(line.contains(&format!("{name}{at} ")) && line.contains(why), "{name}: {line}");
        assert_eq!(v.read(name), content.as_bytes(), "{name} was changed");
    }
    assert!(lines[0].contains("--file-env") && lines[0].contains("base64"), "{}", lines[0]);
    assert_eq!(v.read("good.env"), team_file_formatted().as_bytes());
    // A missing file: 66, the others still done.
    let again = v.file_str("again.env", "export X=1\n");
    let missing = v.join("missing.env");
    kubectl_envshim(["fmt", missing.to_str().unwrap(), &again]).run().fails_with(66, &["missing.env"]);
    assert_eq!(v.read("again.env"), b"X='1'\n");
}

/// Files are replaced beside themselves: a directory this user cannot write
/// leaves the file as it was (73).
#[test]
fn a_directory_that_cannot_be_written_is_73() {
    let v = Volume::new();
    let path = v.file_str("ro/app.env", "A=1\n");
    let dir = v.join("ro");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let (cmd, _uid) = kubectl_envshim(["fmt", &path]).unprivileged();
    if am_root() {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    cmd.run().fails_with(73, &["app.env", "cannot be rewritten"]);
    assert_eq!(v.read("ro/app.env"), b"A=1\n");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Two files with two lines each that the kubelet's grammar cannot hold
/// (the quote on line 2 and the empty value on line 4 came one fix at a
/// time: `fmt` stopped at the first line): every one is named in one run,
/// the files left as they were, never a value shown.
#[test]
fn a_refused_file_names_every_line_it_cannot_write() {
    let s = SENTINEL;
    let v = Volume::new();
    let text = format!("A={s}\nPW=it's-{s}\nexport B = {s}\nFLAGS=\nC=\"{s}\\r\\n\"\n");
    let (one, two) = (v.file_str("one.env", &text), v.file_str("two.env", &text));
    let out = kubectl_envshim(["fmt", &one, &two]).run();
    let lines = out.fails(65);
    out.no_sentinel();
    let at: Vec<&str> = lines.iter().map(|l| l.split(": ").nth(1).unwrap()).collect();
    assert_eq!(at, [format!("{one}:2"), format!("{one}:4"), format!("{one}:5"), format!("{two}:2"), format!("{two}:4"), format!("{two}:5")], "{lines:#?}");
    for (line, why) in lines.iter().zip(["single quote", "empty", "carriage return"].iter().cycle()) {
        assert!(line.contains("cannot be written in the kubelet's grammar") && line.contains(why), "{line}");
    }
    assert_eq!((v.read("one.env"), v.read("two.env")), (text.clone().into_bytes(), text.into_bytes()));
}

/// `fmt --check` is the lint: every line of every file that the kubelet
/// reads otherwise (with what it needs) or cannot read (with why), all at
/// once on stdout, exit 1; nothing changed; a file in the form is not listed.
#[test]
fn check_lists_every_line_of_every_file_at_once() {
    let s = SENTINEL;
    let v = Volume::new();
    let first = v.file_str("first.env", format!("# team\nA={s}\nPW=it's-{s}\nB='{s}'\nFLAGS=\n"));
    let second = v.file_str("second.env", format!("export C = {s}\nD='{s}'\nD=\"{s}-2\"\nE=\n"));
    let done = v.file_str("done.env", format!("A='{s}'\n"));
    let before = [v.read("first.env"), v.read("second.env")];
    let out = kubectl_envshim(["fmt", "--check", &first, &done, &second]).run();
    out.code(1).no_sentinel();
    assert!(out.stderr.is_empty(), "{}", out.stderr_str());
    let stdout = out.stdout_str();
    let listed: Vec<(&str, &str)> = stdout.lines().map(|l| l.split_once(": ").unwrap()).collect();
    let want = [
        (format!("{first}:2"), "the kubelet's grammar needs the value in single quotes"),
        (format!("{first}:3"), "cannot be written in the kubelet's grammar: the value holds a single quote"),
        (format!("{first}:5"), "cannot be written in the kubelet's grammar: the value is empty"),
        (format!("{second}:1"), "the kubelet's grammar needs no 'export'"),
        (format!("{second}:2"), "the name is given again on line 3"),
        (format!("{second}:3"), "the kubelet's grammar needs the value in single quotes"),
        (format!("{second}:4"), "cannot be written in the kubelet's grammar: the value is empty"),
    ];
    assert_eq!(listed.len(), want.len(), "{stdout}");
    for ((at, what), (want_at, want_what)) in listed.iter().zip(&want) {
        assert!(at == want_at && what.starts_with(want_what), "{at}: {what}\nwanted {want_at}: {want_what}...");
    }
    assert!(stdout.contains("kubectl envshim fmt makes these changes"), "{stdout}");
    assert_eq!([v.read("first.env"), v.read("second.env")], before);
}

/// The shim no longer has `fmt` (it ships only what runs in a container):
/// one usage line naming the converter's.
#[test]
fn envshim_fmt_names_kubectl_envshim_fmt() {
    let v = Volume::new();
    let file = v.file_str("app.env", format!("export A={SENTINEL}\n"));
    for args in [vec!["fmt", file.as_str()], vec!["fmt", "--check", file.as_str()]] {
        let out = envshim(&args).run();
        out.fails_with(2, &["kubectl envshim fmt"]);
        out.no_sentinel();
        assert_eq!(v.read("app.env"), format!("export A={SENTINEL}\n").as_bytes());
    }
}

/// A user looking for the lint by name (`kubectl envshim lint`) is told it
/// is `kubectl envshim fmt --check`.
#[test]
fn kubectl_envshim_lint_names_fmt_check() {
    let out = kubectl_envshim(["lint", "app.env"]).run();
    out.fails_with(2, &["unrecognized subcommand 'lint'", "kubectl envshim fmt --check FILE..."]);
}
