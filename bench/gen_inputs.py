#!/usr/bin/env python3
"""Writes the start-up benchmark's inputs into DIR (deterministic: same bytes every run).

    bench/gen_inputs.py DIR [plain|single|double]

DIR/vol/app.env      the env file: 1,000 keys, exactly 65,536 bytes (the env-file limit, docs/reference.md §4)
DIR/manifest.json    volumeMounts: cfg -> DIR/vol
                     envFrom: the whole app.env
                     env: 100 fileKeyRefs into app.env, then 50 literal values
                          with 2-3 $(VAR) references each
DIR/envdir/          1,000 files, one per key of app.env, holding the same value
                     (daemontools envdir's input for the same job)
DIR/env-args.txt     the 1,000 NAME=VALUE pairs, one a line (for coreutils env)

With `single` or `double`, app.env's values are written quoted ('v' or
"v"), each two bytes shorter so the file stays 65,536 bytes: the same job
through the quoted-value path of the parser.

Values are printable ASCII from a URL/base64-ish alphabet, the shape the
criterion bench `envfile_parse_64KiB/typical_1000_keys` times.
"""
import json
import os
import sys

LIMIT = 64 * 1024
KEYS = 1000
FILE_KEY_REFS = 100
EXPANDED_VALUES = 50
ALPHA = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:"


def value(seed: int, n: int) -> str:
    # xorshift64, the same generator as benches/envfile.rs
    mask = (1 << 64) - 1
    x = ((seed * 0x9E3779B97F4A7C15) & mask) | 1
    out = bytearray()
    for _ in range(n):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        out.append(ALPHA[x % len(ALPHA)])
    return out.decode()


def name(i: int) -> str:
    return f"APP_CONFIG_KEY_{i:04}"


def main() -> None:
    out = sys.argv[1]
    quote = {"plain": "", "single": "'", "double": '"'}[sys.argv[2] if len(sys.argv) > 2 else "plain"]
    vol = os.path.join(out, "vol")
    envdir = os.path.join(out, "envdir")
    os.makedirs(vol, exist_ok=True)
    os.makedirs(envdir, exist_ok=True)

    fixed = sum(len(f"{name(i)}={quote}{quote}\n") for i in range(KEYS))
    room = LIMIT - fixed
    each, extra = divmod(room, KEYS)
    pairs = [(name(i), value(i, each + (1 if i < extra else 0))) for i in range(KEYS)]
    text = "".join(f"{k}={quote}{v}{quote}\n" for k, v in pairs)
    assert len(text) == LIMIT, len(text)
    with open(os.path.join(vol, "app.env"), "w") as f:
        f.write(text)

    for k, v in pairs:
        with open(os.path.join(envdir, k), "w") as f:
            f.write(v + "\n")
    with open(os.path.join(out, "env-args.txt"), "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in pairs))

    env = []
    for j in range(FILE_KEY_REFS):
        env.append({
            "name": f"FK_{j:03}",
            "valueFrom": {"fileKeyRef": {
                "volumeName": "cfg", "path": "app.env",
                "key": name((j * 37) % KEYS), "optional": False}},
        })
    for j in range(EXPANDED_VALUES):
        refs = [f"$({name((j * 13) % KEYS)})", f"$(FK_{(j * 7) % FILE_KEY_REFS:03})"]
        if j > 0:
            refs.append("$(EXP_00)")  # an earlier, already expanded entry
        env.append({"name": f"EXP_{j:02}", "value": f"https://{refs[0]}:8443/{'/'.join(refs[1:])}?n={j}"})

    manifest = {
        "name": "app",
        "image": "example/app:1",
        "volumeMounts": [{"name": "cfg", "mountPath": os.path.abspath(vol)}],
        "envFrom": [{"fileRef": {"volumeName": "cfg", "path": "app.env"}}],
        "env": env,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
