#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/seeds/TARGET/) from the project's test tables.

envfile:  every input of tests/data/envfile-grammar.json
expand:   every row of tests/data/expansion-seed-table.json, encoded as
          INPUT \\xff NAME=VALUE \\xff ... (the layout fuzz_targets/expand.rs reads)
manifest: the manifest example of docs/reference.md §3 and a few variations
Run from anywhere; rewrites the seed directories.
"""
import hashlib
import json
import pathlib
import shutil

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"


def write(target, blobs):
    out = HERE / "seeds" / target
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for blob in blobs:
        (out / hashlib.sha1(blob).hexdigest()[:16]).write_bytes(blob)
    print(f"{target}: {len(set(blobs))} seeds")


def envfile():
    rows = json.loads((DATA / "envfile-grammar.json").read_text())["rows"]
    # The grammar JSON stores text; raw bytes (invalid UTF-8) are kept as surrogates.
    return [r["input"].encode("utf-8", "surrogateescape") for r in rows]


def expand():
    doc = json.loads((DATA / "expansion-seed-table.json").read_text())
    mapping = b"".join(b"\xff" + k.encode() + b"=" + v.encode() for k, v in doc["mapping"].items())
    return [r["input"].encode() + mapping for r in doc["rows"]]


MANIFESTS = [
    {
        "name": "app", "image": "x",
        "volumeMounts": [{"name": "config", "mountPath": "/data", "readOnly": True}],
        "envFrom": [
            {"fileRef": {"volumeName": "config", "path": "all.env", "optional": True}, "prefix": "APP_"},
            {"configMapRef": {"name": "cm"}},
        ],
        "env": [
            {"name": "CONFIG_VAR", "valueFrom": {"fileKeyRef": {
                "volumeName": "config", "path": "config.env", "key": "CONFIG_VAR", "optional": False}}},
            {"name": "PUBLIC_URL", "value": "http://$(GITSERVER_SERVICE_HOST):$(GITSERVER_SERVICE_PORT)"},
            {"name": "FROM_PLATFORM", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "EMPTY"},
        ],
        "command": ["/app/server"],
        "args": ["--url=$(PUBLIC_URL)"],
    },
    {"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {}}}]},
    {"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "optional": "yes"}}}]},
    {"envFrom": [{"fileRef": {"volumeName": "v", "path": "../p", "key": "k"}, "secretRef": {}}]},
    {"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "x"}, {"name": 1}]},
    {"command": ["a", 1, "b\u0000"], "args": "x"},
    {"env": None, "command": [], "args": None},
]


def manifest():
    blobs = [json.dumps(m, indent=1).encode() for m in MANIFESTS]
    blobs += [b"[]", b"{", b'{"env": [{"name": "\\u00e9\\ud800"}]}', b"[" * 200]
    return blobs


if __name__ == "__main__":
    write("envfile", envfile())
    write("expand", expand())
    write("manifest", manifest())
