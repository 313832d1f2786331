#!/usr/bin/env python3
"""How envshim's start-up grows with its input: each dimension (env entries,
envFrom entries, inherited variables, platform-resolved valueFrom entries,
--file-env names, distinct files, keys per file, value sizes) at N and at 4N,
everything else held small. Each input runs `envshim check` five times; the
table shows the best wall time at N and 4N, less that of `true` started with
the same environment, and their ratio. Linear work gives
about 4x (less while the fixed cost of a start, ~1 ms, dominates); quadratic
work gives 16x. The 4N column is also the largest input of its kind within
the documented limits (a manifest of 1 MiB, env files of 64 KiB, values of
32 KiB, an environment that `execve` takes), or close to it. With valgrind
installed, the instructions of each run (callgrind) are counted too: they
measure the work itself, where the time also grows with cache misses.

    cargo build --release && python3 bench/scaling.py [BINARY] [WORKDIR]

The converter (`kubectl-envshim convert`, beside BINARY) gets the same
treatment: documents, containers, env entries, volumes, nesting depth and
aliases, each grown 4x in a YAML stream it converts.

Exits 1 when a dimension grows more than 5.5x (in instructions when counted,
else in time), or a 4N input takes more than half a second (the converter's:
two seconds).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/envshim"
WORK = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="envshim-scaling-")
VOL = os.path.join(WORK, "vol")
RUNS = 5
MOUNTS = [{"name": "v", "mountPath": VOL}]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def manifest(name, obj):
    path = os.path.join(WORK, f"{name}.json")
    text = json.dumps(obj, separators=(",", ":"))
    assert len(text) <= 1 << 20, (name, len(text))
    write(path, text)
    return ["--manifest", path]


def key_ref(name, path, key):
    return {"name": name, "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": path, "key": key}}}


# Each dimension: (name, N, make(n) -> (args, extra environment)).

def env_entries(n):
    # A chain: each value expands the one before it.
    env = [{"name": "E0", "value": "x"}] + [{"name": f"E{i}", "value": f"$(E{i - 1})"} for i in range(1, n)]
    return manifest(f"env-{n}", {"env": env}), {}


def envfrom_entries(n):
    write(f"{VOL}/keys.env", "".join(f"K{i}=v\n" for i in range(100)))
    env_from = [{"fileRef": {"volumeName": "v", "path": "keys.env"}, "prefix": f"P{i}_"} for i in range(n)]
    return manifest(f"envfrom-{n}", {"volumeMounts": MOUNTS, "envFrom": env_from}), {}


def inherited(n):
    # With 3,000 platform entries naming the first inherited variables.
    env = [{"name": f"I{i}", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}} for i in range(3000)]
    return manifest(f"inherited-{n}", {"env": env}), {f"I{i}": "v" for i in range(n)}


def platform_entries(n):
    # With 30,000 inherited variables.
    env = [{"name": f"I{i}", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}} for i in range(n)]
    return manifest(f"platform-{n}", {"env": env}), {f"I{i}": "v" for i in range(30000)}


def platform_and_inherited(n):
    # n platform entries and 8n inherited variables: the two grow together.
    env = [{"name": f"I{8 * i}", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} for i in range(n)]
    return manifest(f"both-{n}", {"env": env}), {f"I{i}": "v" for i in range(8 * n)}


def file_env_names(n):
    write(f"{WORK}/secret", "s3cret\n")
    names = [f"S{i}" for i in range(n)]
    return ["--file-env", ",".join(names)], {f"{s}_FILE": f"{WORK}/secret" for s in names}


def files(n):
    for i in range(n):
        if not os.path.exists(f"{VOL}/f/{i}"):
            write(f"{VOL}/f/{i}", f"A=1\nB={i}\n")
    return manifest(f"files-{n}", {"volumeMounts": MOUNTS, "env": [key_ref(f"F{i}", f"f/{i}", "B") for i in range(n)]}), {}


def keys_per_file(n):
    # 30 files of n keys each, each imported twice (with two prefixes).
    for f in range(30):
        write(f"{VOL}/k{n}/{f}", "".join(f"KEY_{i:05}=v\n" for i in range(n)))
    env_from = [{"fileRef": {"volumeName": "v", "path": f"k{n}/{f}"}, "prefix": p} for f in range(30) for p in ("A_", "B_")]
    return manifest(f"keys-{n}", {"volumeMounts": MOUNTS, "envFrom": env_from}), {}


def value_sizes(n):
    # A value of n bytes, taken by 25 fileKeyRefs and expanded by 25 env
    # values (at 32 KiB, 1.6 MB: close to what execve takes).
    write(f"{VOL}/value-{n}.env", "B=" + "b" * n + "\n")
    env = [key_ref(f"R{i}", f"value-{n}.env", "B") for i in range(25)]
    env += [{"name": f"X{i}", "value": "$(R0)"} for i in range(25)]
    return manifest(f"value-{n}", {"volumeMounts": MOUNTS, "env": env}), {}


# Linear work grows 4x, quadratic 16x; the allocator's and the caches' share
# grows a little faster than the input (past envshim's 4 MiB arena, musl's
# allocator takes over): up to 5.1x in instructions and 6x in time on
# linear code, measured.
LINEAR = 5.5

DIMENSIONS = [
    ("env entries (a chain of $(VAR))", 4000, env_entries),
    ("envFrom entries (100 keys each)", 250, envfrom_entries),
    ("inherited variables (3,000 platform entries)", 25000, inherited),
    ("platform-resolved valueFrom entries (30,000 inherited)", 3500, platform_entries),
    ("platform entries and 8x as many inherited variables", 3000, platform_and_inherited),
    ("--file-env names", 5000, file_env_names),
    ("distinct files (one fileKeyRef each)", 2000, files),
    ("keys per file (30 files, each imported twice)", 1000, keys_per_file),
    ("value size in bytes (25 fileKeyRefs, 25 expansions)", 8192, value_sizes),
]


# The converter's dimensions: each makes a YAML stream of size n.
CONVERTER = os.path.join(os.path.dirname(BIN), "kubectl-envshim")
KEY_REF = "{name: T, valueFrom: {fileKeyRef: {volumeName: v, path: a.env, key: T}}}"


def pod(name, containers, volumes="  - {name: v, emptyDir: {}}\n", extra=""):
    return f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{extra}spec:\n  containers:\n{containers}  volumes:\n{volumes}"


def container(name, env=KEY_REF):
    return f"  - name: {name}\n    image: app:1\n    command: [/app, --flag]\n    env: [{env}]\n"


def stream(name, text):
    path = os.path.join(WORK, f"convert-{name}.yaml")
    write(path, text)
    return ["convert", "-f", path], {}


def yaml_documents(n):
    return stream(f"docs-{n}", "---\n".join(pod(f"p{i}", container("app")) for i in range(n)))


def yaml_containers(n):
    return stream(f"containers-{n}", pod("p", "".join(container(f"c{i}") for i in range(n))))


def yaml_env_entries(n):
    env = ", ".join([f"{{name: E{i}, value: \"v$(E{i - 1})\"}}" for i in range(n)] + [KEY_REF])
    return stream(f"env-{n}", pod("p", container("app", env)))


def yaml_late_entries(n):
    # The fileKeyRef first: every entry is envshim's, each refers to a new name (n names recorded).
    env = ", ".join([KEY_REF] + [f"{{name: E{i}, value: \"v$(E{i - 1})$(R{i})\"}}" for i in range(n)])
    return stream(f"late-{n}", pod("p", container("app", env)))


def yaml_volumes(n):
    # n volumes, each named by one fileKeyRef.
    env = ", ".join(f"{{name: T{i}, valueFrom: {{fileKeyRef: {{volumeName: v{i}, path: a.env, key: T}}}}}}" for i in range(n))
    volumes = "".join(f"  - {{name: v{i}, emptyDir: {{}}}}\n" for i in range(n))
    return stream(f"volumes-{n}", pod("p", container("app", env), volumes))


def yaml_nesting(n):
    # A block sequence n deep in an annotation-like field of the converted pod.
    return stream(f"nesting-{n}", pod("p", container("app"), extra=f"  x:\n  {'- ' * n}x\n"))


def yaml_aliases(n):
    # One anchored env list of 20 entries, referenced by n containers.
    env = "\n".join(f"      - {{name: E{i}, value: \"{i}\"}}" for i in range(20))
    first = f"  - name: c0\n    image: app:1\n    command: [/app]\n    env: &env\n{env}\n      - {KEY_REF}\n"
    rest = "".join(f"  - name: c{i}\n    image: app:1\n    command: [/app]\n    env: *env\n" for i in range(1, n))
    return stream(f"aliases-{n}", pod("p", first + rest))


CONVERTER_DIMENSIONS = [
    ("converter: documents (one converted Pod each)", 500, yaml_documents),
    ("converter: containers in one Pod (each converted)", 250, yaml_containers),
    ("converter: env entries of one container", 2000, yaml_env_entries),
    ("converter: env entries after the first fileKeyRef (each recorded)", 400, yaml_late_entries),
    ("converter: volumes (one fileKeyRef each)", 200, yaml_volumes),
    ("converter: nesting depth (a block sequence)", 2000, yaml_nesting),
    ("converter: aliases (containers sharing one anchored env)", 250, yaml_aliases),
]


def best_time(command, env):
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    best = None
    for _ in range(RUNS):
        start = time.perf_counter()
        p = subprocess.run(command, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        took = time.perf_counter() - start
        if p.returncode != 0:
            sys.exit(f"scaling: {command[0]} exited {p.returncode}: {p.stderr.decode(errors='replace').strip()[:300]}")
        best = took if best is None else min(best, took)
    return best


def envshim_time(args, env):
    """envshim's own time: `envshim check` less `true` started with the same
    environment (passing 100,000 variables to a process costs ~0.1 s by itself)."""
    return max(best_time([BIN, "check", *args], env) - best_time(["true"], env), 0.0)


def converter_time(args, env):
    return max(best_time([CONVERTER, *args], env) - best_time(["true"], env), 0.0)


def instructions(args, env, command=(BIN, "check")):
    """Instructions of `envshim check` (callgrind), or None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    out = os.path.join(WORK, "callgrind.out")
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command, *args],
                       env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    counts = [line.split()[-1] for line in p.stderr.splitlines() if "Collected" in line]
    return int(counts[-1].replace(",", "")) if counts else None


def main():
    print("| dimension | N | time at N | 4N | time at 4N | ratio | instructions ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    bad = []
    base = envshim_time([], {})
    rows = [(d, envshim_time, (BIN, "check"), 0.5) for d in DIMENSIONS]
    if os.path.exists(CONVERTER):
        rows += [(d, converter_time, (CONVERTER,), 2.0) for d in CONVERTER_DIMENSIONS]
    else:
        print(f"(no {CONVERTER}: the converter's rows are left out)")
    for (name, n, make), timed, command, most in rows:
        small, large = make(n), make(4 * n)
        t1, t4 = timed(*small), timed(*large)
        # Below 0.5 ms a time is mostly the noise of starting a process.
        ratio = max(t4, 0.0005) / max(t1, 0.0005)
        i1, i4 = instructions(*small, command=command), instructions(*large, command=command)
        iratio = i4 / i1 if i1 and i4 else None
        shown = f"{iratio:.1f}x" if iratio else "(no valgrind)"
        print(f"| {name} | {n:,} | {t1 * 1000:.1f} ms | {4 * n:,} | {t4 * 1000:.1f} ms | {ratio:.1f}x | {shown} |", flush=True)
        # The work is judged by the instructions where they are counted: time
        # also grows with cache misses once the tables outgrow the caches.
        if (iratio or ratio) > LINEAR or t4 > most:
            bad.append(name)
    print(f"\nTimes are the programs' own: the best of {RUNS} runs less the best of {RUNS} `true` with the same")
    print(f"environment. `envshim check` with no input: {base * 1000:.2f} ms over `true`.")
    if bad:
        sys.exit(f"scaling: worse than linear, or over 0.5 s: {', '.join(bad)}")


if __name__ == "__main__":
    main()
