#!/usr/bin/env python3
"""The worst-case table of docs/security.md: inputs within the limits (a
manifest of at most 1 MiB, env files of at most 64 KiB) built to make envshim
work, print or hold as much as it can (and an environment and a command line
of the most variables and `--file-env` names that `execve` passes). Each runs `envshim check` three times
under /usr/bin/time; the table shows the exit code, the best wall time, user
and system CPU, the peak RSS and the size of stderr.

    cargo build --release && python3 bench/worst_case.py [BINARY] [WORKDIR]
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/envshim"
WORK = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="envshim-worst-")
VOL = os.path.join(WORK, "vol")
MIB = 1 << 20


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def fits(entry):
    """How many copies of `entry` fit in a 1 MiB manifest (with room to spare)."""
    return MIB // (len(compact(entry)) + 1) - 100


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def fill(line, limit=65536):
    """Lines line(0), line(1), ... up to `limit` bytes."""
    out, i = [], 0
    size = 0
    while size + len(line(i)) <= limit:
        out.append(line(i))
        size += len(line(i))
        i += 1
    return "".join(out)


def ref(path, prefix=None):
    r = {"fileRef": {"volumeName": "v", "path": path}}
    if prefix is not None:
        r["prefix"] = prefix
    return r


def key_ref(path, key="B"):
    return {"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": path, "key": key}}}


def platform(i):
    return {"name": f"I{8 * i}", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}


def inherited():
    return {f"I{i}": "v" for i in range(120000)}


def secrets():
    write(f"{WORK}/secret", "s3cret\n")
    return {f"S{i}_FILE": f"{WORK}/secret" for i in range(30000)}


def file_env_args():
    # Lists of 10,000 names: one argument may not pass 128 KiB.
    return [a for k in range(3) for a in ("--file-env", ",".join(f"S{i}" for i in range(10000 * k, 10000 * (k + 1))))]


def inputs():
    write(f"{VOL}/keys.env", fill(lambda i: f"K{i}=\n"))
    write(f"{VOL}/dup.env", ("A=\n" * 21845)[:65536])
    write(f"{VOL}/strict.env", fill(lambda i: f"{i}=\n"))
    write(f"{VOL}/big.env", "B=" + "b" * 32768 + "\n")
    many = "B=" + "b" * 32768 + "\n" + fill(lambda i: f"F{i}=\n", 65536 - 32772)
    n_files = fits(key_ref("many/99999"))
    for i in range(n_files):
        write(f"{VOL}/many/{i}", many)
        write(f"{VOL}/tiny/{i}", "B=1\n")
    for i in range(37):
        write(f"{VOL}/wide/{i}", fill(lambda j: f"W{i}_{j}=\n"))
    wide = [ref(f"wide/{i}") for i in range(37)]
    mounts = [{"name": "v", "mountPath": VOL}]
    long_bad = "=" + "x" * 10000
    e3 = {"name": "A", "value": "$(B)$(B)$(B)"}
    e4 = {"name": "A", "value": "$(B)$(B)$(B)$(B)"}
    vm = lambda i: {"name": f"v{i}", "mountPath": VOL}
    vref = lambda i: {"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": f"v{i}", "path": "tiny/1", "key": "B"}}}
    n_vols = MIB // (len(compact(vm(99999))) + len(compact(vref(99999))) + 2) - 50
    return [
        ("one envFrom, 10 KB invalid prefix, 9,520 keys", [], {"volumeMounts": mounts, "envFrom": [ref("keys.env", long_bad)]}),
        ("104 such envFrom", [], {"volumeMounts": mounts, "envFrom": [ref("keys.env", long_bad)] * 104}),
        ("envFrom x N, keys invalid under --strict-names", ["--strict-names"], {"volumeMounts": mounts, "envFrom": [ref("strict.env")] * fits(ref("strict.env"))}),
        ("envFrom x N over 21,845 duplicate lines", [], {"volumeMounts": mounts, "envFrom": [ref("dup.env")] * fits(ref("dup.env"))}),
        ("envFrom x N, same prefix, 9,520 distinct keys", [], {"volumeMounts": mounts, "envFrom": [ref("keys.env")] * fits(ref("keys.env"))}),
        ("104 envFrom, 10 KB valid prefix", [], {"volumeMounts": mounts, "envFrom": [ref("keys.env", "P" * 10000)] * 104}),
        ("envFrom x N, distinct prefixes", [], {"volumeMounts": mounts, "envFrom": [ref("keys.env", f"P{i}_") for i in range(fits(ref("keys.env", "P99999_")))]}),
        ("env x N: $(B) x 3 of a 32 KB B", [], {"volumeMounts": mounts, "envFrom": [ref("big.env")], "env": [e3] * fits(e3)}),
        ("37 files of short keys, then env x N: $(B) x 3", [], {"volumeMounts": mounts, "envFrom": [ref("big.env")] + wide, "env": [e3] * (fits(e3) - 100)}),
        ("env x N: $(B) x 4 (over 131,071 bytes)", [], {"volumeMounts": mounts, "envFrom": [ref("big.env")], "env": [e4] * fits(e4)}),
        ("fileKeyRef x N of one 32 KB value", [], {"volumeMounts": mounts, "env": [key_ref("big.env")] * fits(key_ref("big.env"))}),
        ("fileKeyRef x N, distinct 64 KiB files", [], {"volumeMounts": mounts, "env": [key_ref(f"many/{i}") for i in range(n_files)]}),
        ("fileKeyRef x N, distinct 4-byte files", [], {"volumeMounts": mounts, "env": [key_ref(f"tiny/{i}") for i in range(n_files)]}),
        ("volumes x N, one fileKeyRef each", [], {"volumeMounts": [vm(i) for i in range(n_vols)], "env": [vref(i) for i in range(n_vols)]}),
        ("args x N of $(B)", [], {"volumeMounts": mounts, "envFrom": [ref("big.env")], "command": ["/bin/true"], "args": ["$(B)"] * ((MIB - 300) // 7)}),
        ("empty env entries", [], {"env": [{}] * (MIB // 3 - 100)}),
        ("invalid env names", [], {"env": [{"name": "="}] * (MIB // 13 - 100)}),
        ("platform valueFrom x N, 120,000 inherited variables", [], {"env": [platform(i) for i in range(fits(platform(99999)))]}, inherited),
        ("--file-env of 30,000 names", file_env_args(), {}, secrets),
    ]


def measure(args, env):
    best = None
    for _ in range(3):
        t = os.path.join(WORK, "time")
        err = os.path.join(WORK, "stderr")
        with open(err, "wb") as e:
            code = subprocess.call(["/usr/bin/time", "-f", "%e %U %S %M", "-o", t, BIN, "check", *args], stdout=subprocess.DEVNULL, stderr=e, env=env)
        wall, user, sys_, rss = open(t).read().split()[-4:]
        run = (float(wall), float(user), float(sys_), int(rss), code, os.path.getsize(err), open(err, "rb").read().count(b"\n"))
        best = run if best is None or run[0] < best[0] else best
    return best


def main():
    print("| input | exit | wall (best of 3) | user + sys | peak RSS | stderr |")
    print("|---|---|---|---|---|---|")
    for i, (name, extra, manifest, *environment) in enumerate(inputs()):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(environment[0]() if environment else {})}
        path = os.path.join(WORK, f"m{i}.json")
        text = compact(manifest)
        assert len(text) <= MIB, (name, len(text))
        write(path, text)
        wall, user, sys_, rss, code, err_bytes, err_lines = measure([*extra, "--manifest", path], env)
        print(f"| {name} | {code} | {wall:.2f} s | {user:.2f} + {sys_:.2f} s | {rss / 1024:.1f} MiB | {err_bytes} B, {err_lines} lines |")


if __name__ == "__main__":
    main()
