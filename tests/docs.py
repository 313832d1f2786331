#!/usr/bin/env python3
"""Docs that run: every fenced code block of README.md, docs/*.md,
examples/**/*.md and bench/README.md is either run here or marked, so a documented command cannot
rot unnoticed.

How a block is treated, by its language tag and an optional marker, an HTML
comment on the nearest non-blank line before the fence (invisible on GitHub):

  ```sh / bash / shell   run with `bash -euo pipefail` from the repository root
                         (or the marker's `cwd DIR`); it must exit 0 and print
                         nothing on stderr (a warning there is output the docs
                         do not show; a block that shows what a command prints
                         is a console block)
  ```console             a transcript, one shell session: each `$ COMMAND` is
                         run in turn (a variable set by one is seen by the
                         next), and what it printed, stdout and stderr as a
                         terminal shows them, must be exactly the lines shown
                         under it (blank lines aside): `...` in a line matches
                         any text, a line of `...` alone any number of lines
  ```dotenv              an env file: `envshim check --env-file` must accept it
  ```json                must parse as JSON
  ```text, yaml, dockerfile, ...   data or output, not run
  ```                    (no tag) an error: tag it or mark it

  <!-- docs-test: sketch: WHY -->        not meant to run as written (placeholders)
  <!-- docs-test: covered FILE...: WHY --> run by another test (needs root, an
                                          engine, a cluster); each FILE must exist
  <!-- docs-test: slow: WHY -->          run only with DOCS_SLOW=1 (benchmarks)
  <!-- docs-test: needs TOOL -->         skipped when TOOL is missing, unless
                                         DOCS_STRICT=1 (CI: tests/all.sh)
  <!-- docs-test: lines N-M -->          run only these lines of the block
  <!-- docs-test: cwd DIR -->            run from DIR (relative to the root)
  Directives combine with `;`. Every file is also checked for links to missing
  files or headings and for pointers out of the repository or to issue numbers. A block that is not run is still checked: `bash -n`
  for shell, and every `bench/`, `fuzz/`, `tests/` or `examples/` script it names exists.

`envshim` and `kubectl-envshim` on PATH are the release builds of this
checkout (`cargo build --release`, as the quickstart does); a released converter
has its image compiled in, this build gets a stand-in of it through
KUBECTL_ENVSHIM_SHIM_IMAGE (release/image, by a digest of zeros). Usage: python3 tests/docs.py [FILE...]
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHELL = {"sh", "bash", "shell"}
DATA = {"text", "yaml", "yml", "dockerfile", "toml", "ini", "roff"}
TIMEOUT = int(os.environ.get("DOCS_TIMEOUT", "600"))
STRICT = os.environ.get("DOCS_STRICT") == "1"
SLOW = os.environ.get("DOCS_SLOW") == "1"


def blocks(path):
    """(line number, language, marker directives, body lines) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        start = i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = re.match(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$", lines[j]) if j >= 0 else None
        directives = {}
        if marker:
            for d in marker.group(1).split(";"):
                word, _, rest = d.strip().partition(" ")
                word = word.rstrip(":")
                directives[word] = rest.split(":")[0].strip()
        yield start + 1, lang, directives, body
        i += 1


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    found, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if re.match(r"^\s*```", line):
            fence = not fence
        m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def pointers(path):
    """Links to files or headings that do not exist, and pointers out of the
    repository or to issue numbers (a user has neither)."""
    text = open(path, encoding="utf-8").read()
    for n, line in enumerate(text.split("\n"), 1):
        for bad in re.findall(r"SPEC\.md|\.\./shared|/work/|\bissues? #?\d+|(?<![\w&(])#\d+\b(?![-.])", line, re.I):
            yield f"line {n}: points outside the repository or to an issue: {bad!r}"
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", line):
            if re.match(r"^[a-z]+:", target):
                continue
            full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(full):
                yield f"line {n}: link to {target}, which does not exist"
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                yield f"line {n}: link to {target}#{anchor}, a heading that does not exist"


def named_scripts(text):
    return sorted(set(re.findall(r"(?<![\w/.-])((?:bench|fuzz|tests|examples|images)/[\w./-]+\.(?:sh|py))", text)))


def run(cmd, cwd, env):
    return subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT)


def transcript(body):
    """[(command, [expected output lines])] of a console block."""
    steps = []
    for line in body:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def matches(expected, actual):
    pattern = "^" + ".*".join(re.escape(p) for p in expected.split("...")) + "$"
    return re.match(pattern, actual) is not None


def shows(expected, actual):
    """Whether the lines `expected` (a line `...` alone: any number of
    lines) show exactly the lines `actual`, blank lines aside on both sides."""
    want = [e for e in expected if e.strip()]
    got = [a for a in actual if a.strip()]
    # can[i][j]: want[i:] shows got[j:].
    can = [[False] * (len(got) + 1) for _ in range(len(want) + 1)]
    can[len(want)][len(got)] = True
    for i in range(len(want) - 1, -1, -1):
        for j in range(len(got), -1, -1):
            if want[i].strip() == "...":
                can[i][j] = can[i + 1][j] or (j < len(got) and can[i][j + 1])
            else:
                can[i][j] = j < len(got) and matches(want[i], got[j]) and can[i + 1][j + 1]
    return can[0][0]


STEP = "@@docs-step-"


def session(steps, cwd, env):
    """Runs a transcript's commands in one shell, stdout and stderr in the
    order printed: (exit code, the step that ran last, each step's lines)."""
    script = "".join(f"printf '\\n{STEP}%d@@\\n' {i}\n{cmd}\n" for i, (cmd, _) in enumerate(steps))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
    outputs, last = [[] for _ in steps], -1
    for line in r.stdout.decode(errors="replace").split("\n"):
        m = re.match(rf"^{STEP}(\d+)@@$", line)
        if m:
            last = int(m.group(1))
        elif last >= 0:
            outputs[last].append(line)
    return r.returncode, last, outputs


def main(files):
    problems, ran, marked, skipped = [], 0, 0, []
    subprocess.run(["cargo", "build", "--release", "--quiet", "--locked", "--bin", "envshim"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "--locked", "-p", "kubectl-envshim"], cwd=ROOT, check=True)
    bindir = tempfile.mkdtemp(prefix="envshim-docs-")
    for name in ["envshim", "kubectl-envshim"]:
        os.symlink(os.path.join(ROOT, "target/release", name), os.path.join(bindir, name))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    env = {k: v for k, v in env.items() if not k.startswith("ENVSHIM_")}
    with open(os.path.join(ROOT, "release/image")) as f:
        env["KUBECTL_ENVSHIM_SHIM_IMAGE"] = f.read().strip() + "@sha256:" + "0" * 64
    try:
        for path in files:
            rel = os.path.relpath(path, ROOT)
            problems.extend(f"{rel}: {p}" for p in pointers(path))
            for line, lang, d, body in blocks(path):
                where = f"{rel}:{line}"
                text = "\n".join(body)
                if "lines" in d:
                    a, _, b = d["lines"].partition("-")
                    body = body[int(a) - 1:int(b or a)]
                    text = "\n".join(body)
                cwd = os.path.join(ROOT, d.get("cwd", ""))
                for script in named_scripts(text):
                    if not os.path.exists(os.path.join(ROOT, script)):
                        problems.append(f"{where}: names {script}, which does not exist")
                if lang in SHELL and "sketch" not in d:
                    syntax = subprocess.run(["bash", "-n", "-c", text], capture_output=True)
                    if syntax.returncode != 0:
                        problems.append(f"{where}: not valid shell: {syntax.stderr.decode().strip()}")
                if "covered" in d:
                    for f in d["covered"].split():
                        if not os.path.exists(os.path.join(ROOT, f)):
                            problems.append(f"{where}: covered by {f}, which does not exist")
                    marked += 1
                    continue
                if "sketch" in d:
                    marked += 1
                    continue
                if "slow" in d and not SLOW:
                    skipped.append(f"{where} (slow: DOCS_SLOW=1 runs it)")
                    continue
                tool = d.get("needs")
                if tool and shutil.which(tool) is None and subprocess.run(["bash", "-c", f"{tool} --version"], capture_output=True, env=env).returncode != 0:
                    (problems if STRICT else skipped).append(f"{where}: needs {tool}, which is missing")
                    continue
                if lang == "":
                    problems.append(f"{where}: a block without a language tag: tag it (text, console, sh, ...) or mark it (<!-- docs-test: sketch: why -->)")
                elif lang in DATA:
                    continue
                elif lang == "json":
                    try:
                        json.loads(text)
                    except ValueError as e:
                        problems.append(f"{where}: not valid JSON: {e}")
                elif lang == "dotenv":
                    with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as f:
                        f.write(text + "\n")
                    r = subprocess.run(["envshim", "check", "--env-file", f.name], env=env, capture_output=True, cwd=bindir)
                    os.unlink(f.name)
                    ran += 1
                    if r.returncode != 0:
                        problems.append(f"{where}: envshim check rejects this env file: {r.stderr.decode().strip()}")
                elif lang in SHELL:
                    r = run(text, cwd, env)
                    ran += 1
                    if r.returncode != 0:
                        problems.append(f"{where}: exit {r.returncode}\n    {text}\n" + r.stderr.decode(errors="replace")[-2000:])
                    elif r.stderr.strip():
                        problems.append(f"{where}: printed on stderr what the docs do not show (show it in a console block, or fix the command):\n" + r.stderr.decode(errors="replace")[-2000:])
                elif lang == "console":
                    steps = transcript(body)
                    code, last, outputs = session(steps, cwd, env)
                    ran += len(steps)
                    for i, ((cmd, expected), out) in enumerate(zip(steps, outputs)):
                        if code != 0 and i == last:
                            problems.append(f"{where}: `{cmd}` exit {code}\n" + "\n".join(out)[-2000:])
                            break
                        if not shows(expected, out):
                            shown = "\n".join(e for e in expected if e.strip())
                            problems.append(f"{where}: `{cmd}` printed what the docs do not show; shown:\n{shown}\nprinted:\n" + "\n".join(l for l in out if l.strip())[-2000:])
                else:
                    problems.append(f"{where}: unknown language tag {lang!r}: add it to tests/docs.py or mark the block")
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
    for s in skipped:
        print(f"docs: not run: {s}")
    for p in problems:
        print(f"docs: FAIL {p}", file=sys.stderr)
    print(f"docs: {ran} commands run, {marked} blocks marked as run elsewhere or sketches, {len(skipped)} not run, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    files = sys.argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs/*.md"))) + sorted(glob.glob(os.path.join(ROOT, "examples/**/*.md"), recursive=True)) + [os.path.join(ROOT, "bench/README.md")]
    sys.exit(main([os.path.abspath(f) for f in files]))
