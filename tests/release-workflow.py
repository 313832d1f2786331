#!/usr/bin/env python3
"""The release workflow (.github/workflows/release.yml), read as YAML and checked:

- the signing key (secret MINISIGN_SECRET_KEY) reaches only the env of steps of a
  job that compiles nothing (no cargo, rustc, build script, make, package manager
  of a language), never a workflow's or a job's env; a job that compiles gets no
  secret at all and no write permission;
- each job installs only Debian packages, each pinned (`name=version`), each a
  package Debian bookworm's archive has (`apt-cache madison` on this Debian 12
  machine, sources from debian.org only: the check a bookworm container would
  make, without pulling one). A pinned version the archive no longer lists
  (Debian replaces a package's version with each point release and security
  update) is a warning with the version to re-pin to, not a failure: the
  workflow did not change, the archive did (STRICT_PINS=1 makes it fail, for a
  scheduled job that reports stale pins); nothing else is installed but crates pinned
  with `cargo install --locked --version`; no pip, no curl or wget, no
  tests/e2e/deps.sh (it adds kubectl and kpt, which Debian does not have);
- every action is pinned by a full commit.

Then the same checks on altered copies of the workflow (the key in the build
step's env, in a job's env, the test dependencies script, an unpinned or
missing package, an action by tag), each of which must be caught.
Usage: python3 tests/release-workflow.py [WORKFLOW]   (needs PyYAML and apt-cache)
"""
import copy
import os
import re
import shlex
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "MINISIGN_SECRET_KEY"
COMPILES = re.compile(r"\b(cargo|rustc|rustup|make|cmake|gcc|cc|go|npm|pip3?|musl-build\.sh|build\.sh)\b")
FORBIDDEN = re.compile(r"(?<![\w./-])(pip3?|curl|wget|npm|kubectl|kpt|add-apt-repository)(?![\w-])|deps\.sh|google-cloud")
PINNED_ACTION = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
_madison = {}


def text(v):
    return yaml.safe_dump(v) if v is not None else ""


def runs(job):
    return [s.get("run", "") for s in job.get("steps", [])]


def compiles(job):
    # release/sign.sh is the one script a signing job may run (minisign and sha256sum only).
    return any(COMPILES.search(r.replace("release/sign.sh", "")) for r in runs(job))


def bookworm_versions(name):
    """The versions of `name` Debian bookworm's archive lists now (none: no such package)."""
    if name not in _madison:
        out = subprocess.run(["apt-cache", "madison", name], capture_output=True, text=True, check=True).stdout
        _madison[name] = out
    versions = []
    for line in _madison[name].splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and "debian.org/debian" in parts[2] and " bookworm" in parts[2]:
            versions.append(parts[1])
    return versions


def stale_pin(where, pkg, version, versions):
    """A pin the archive replaced: a failure only with STRICT_PINS=1."""
    message = f"{where}: {pkg}={version} is no longer in bookworm's archive (it has {', '.join(versions)}): re-pin it"
    if os.environ.get("STRICT_PINS") == "1":
        return message
    print(f"release-workflow: WARNING: {message}", file=sys.stderr)
    return None


def installs(run):
    """(command, package arguments) of each install command in a step's script."""
    out = []
    for line in run.replace("\\\n", " ").splitlines():
        if "install" not in line:
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        cmds, words = [], []
        for token in lexer:
            if token in ("&&", "||", ";", "|", "&"):
                cmds, words = cmds + [words], []
            else:
                words.append(token)
        for words in cmds + [words]:
            if len(words) >= 2 and words[0] in ("apt-get", "apt") and "install" in words:
                out.append(("apt", [w for w in words[words.index("install") + 1:] if not w.startswith("-")]))
            if len(words) >= 2 and words[:2] == ["cargo", "install"]:
                out.append(("cargo", words[2:]))
    return out


def problems(wf, check_archive=True):
    found = []
    if KEY in text(wf.get("env")):
        found.append("the workflow's env holds the key")
    for name, job in wf.get("jobs", {}).items():
        if KEY in text(job.get("env")) or KEY in text(job.get("with")):
            found.append(f"job {name}: its env holds the key (every step, the build too, would see it)")
        builds = compiles(job)
        for i, step in enumerate(job.get("steps", [])):
            where = f"job {name}, step {step.get('name') or step.get('uses') or i}"
            if "secrets." + KEY in text(step.get("with")) + step.get("run", ""):
                found.append(f"{where}: the key outside a step's env")
            if KEY in text(step.get("env")) and builds:
                found.append(f"{where}: the key in the env of a job that compiles")
            uses = step.get("uses")
            if uses and not PINNED_ACTION.match(uses):
                found.append(f"{where}: action {uses} not pinned by a full commit")
            if builds and "secrets." in text(step):
                found.append(f"{where}: a secret in a job that compiles")
            run = step.get("run", "")
            m = FORBIDDEN.search(run)
            if m:
                found.append(f"{where}: runs {m.group(0)} (only pinned Debian packages and pinned crates are installed)")
            for kind, args in installs(run):
                if kind == "cargo":
                    if "--locked" not in args or "--version" not in args:
                        found.append(f"{where}: cargo install {' '.join(args)} is not pinned (--locked --version)")
                    continue
                for a in args:
                    pkg, _, version = a.partition("=")
                    if not version:
                        found.append(f"{where}: apt package {pkg} not pinned to a version")
                    elif check_archive:
                        versions = bookworm_versions(pkg)
                        if not versions:
                            found.append(f"{where}: {pkg} is not in Debian bookworm's archive")
                        elif version not in versions and (stale := stale_pin(where, pkg, version, versions)):
                            found.append(stale)
        if builds and any(v == "write" for v in (job.get("permissions") or {}).values()):
            found.append(f"job {name}: compiles with write permission")
    return found


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".github/workflows/release.yml")
    wf = yaml.safe_load(open(path, encoding="utf-8"))
    failed = problems(wf)
    for p in failed:
        print(f"release-workflow: FAIL: {p}")
    if failed:
        sys.exit(1)
    jobs = wf["jobs"]
    signing = [n for n, j in jobs.items() if any(KEY in text(s.get("env")) for s in j.get("steps", []))]
    building = [n for n, j in jobs.items() if compiles(j)]
    assert signing and building and not set(signing) & set(building), (signing, building)
    print(f"release-workflow: ok: the key only in job {', '.join(signing)}, which compiles nothing; "
          f"{', '.join(building)} compiles without secrets; every package pinned and in bookworm")

    # Altered copies: each must be caught (so the checks above can fail).
    def altered(change):
        w = copy.deepcopy(wf)
        change(w)
        return problems(w, check_archive=False)

    def build_step(w):
        return next(s for s in w["jobs"][building[0]]["steps"] if "build.sh" in s.get("run", ""))

    def install_step(w):
        return next(s for s in w["jobs"][building[0]]["steps"] if "apt-get install" in s.get("run", ""))

    cases = {
        "the key in the build step's env": lambda w: build_step(w).setdefault("env", {}).update({KEY: "${{ secrets.MINISIGN_SECRET_KEY }}"}),
        "the key in the build job's env": lambda w: w["jobs"][building[0]].setdefault("env", {}).update({KEY: "${{ secrets.MINISIGN_SECRET_KEY }}"}),
        "the key in the workflow's env": lambda w: w.setdefault("env", {}).update({KEY: "${{ secrets.MINISIGN_SECRET_KEY }}"}),
        "signing in the build job": lambda w: w["jobs"][building[0]]["steps"].append(next(s for s in w["jobs"][signing[0]]["steps"] if KEY in text(s.get("env")))),
        "the test dependencies script": lambda w: install_step(w).update(run=install_step(w)["run"] + "bash tests/e2e/deps.sh\n"),
        "pip as root": lambda w: install_step(w).update(run=install_step(w)["run"] + "python3 -m pip install kubernetes-validate\n"),
        "an unpinned package": lambda w: install_step(w).update(run=install_step(w)["run"] + "apt-get install -y minisign\n"),
        "an unpinned crate": lambda w: install_step(w).update(run=install_step(w)["run"] + "cargo install cargo-cyclonedx\n"),
        "an action by tag": lambda w: w["jobs"][building[0]]["steps"][0].update(uses="actions/checkout@v4"),
    }
    for what, change in cases.items():
        assert altered(change), f"not caught: {what}"
    # A package Debian bookworm does not have, at the archive.
    w = copy.deepcopy(wf)
    install_step(w)["run"] += "apt-get install -y kubectl=1.32.4-1.1 google-cloud-cli-kpt=1.0.0-1\n"
    missing = [p for p in problems(w) if "not in Debian bookworm" in p]
    assert len(missing) == 2, missing
    # A pin the archive replaced: a warning, a failure with STRICT_PINS=1.
    w = copy.deepcopy(wf)
    install_step(w)["run"] += "apt-get install -y jq=1.6-2.1+deb12u0\n"
    strict = os.environ.pop("STRICT_PINS", None)
    assert not problems(w), "a replaced pin failed without STRICT_PINS"
    os.environ["STRICT_PINS"] = "1"
    assert [p for p in problems(w) if "re-pin" in p], "a replaced pin passed with STRICT_PINS=1"
    os.environ.pop("STRICT_PINS")
    if strict is not None:
        os.environ["STRICT_PINS"] = strict
    print(f"release-workflow: ok: {len(cases) + 2} altered workflows caught")


if __name__ == "__main__":
    main()
