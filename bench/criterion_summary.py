#!/usr/bin/env python3
"""Prints the criterion results of `cargo bench` as a markdown table.

    bench/criterion_summary.py [TARGET_DIR]     (default: target)

Reads TARGET_DIR/criterion/**/new/{estimates,benchmark}.json: for each
benchmark, the median time and the throughput it implies (criterion's own
`thrpt` line uses the same numbers).
"""
import glob
import json
import os
import sys

root = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "target", "criterion")
rows = []
for est_path in sorted(glob.glob(os.path.join(root, "**", "new", "estimates.json"), recursive=True)):
    d = os.path.dirname(est_path)
    bench = json.load(open(os.path.join(d, "benchmark.json")))
    est = json.load(open(est_path))
    median_ns = est["median"]["point_estimate"]
    lo = est["median"]["confidence_interval"]["lower_bound"]
    hi = est["median"]["confidence_interval"]["upper_bound"]
    thr = bench.get("throughput") or {}
    if "Bytes" in thr:
        rate = thr["Bytes"] / (median_ns * 1e-9)
        rate_s = f"{rate / 2**30:.2f} GiB/s" if rate >= 2**30 else f"{rate / 2**20:.0f} MiB/s"
    elif "Elements" in thr:
        rate_s = f"{thr['Elements'] / (median_ns * 1e-9) / 1e6:.2f} M/s"
    else:
        rate_s = ""
    def t(ns):
        return f"{ns / 1e3:.1f} µs" if ns >= 1e3 else f"{ns:.0f} ns"
    rows.append((bench["full_id"], t(median_ns), f"{t(lo)} – {t(hi)}", rate_s))

print("| benchmark | median | 95% CI of the median | throughput |")
print("|---|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(r) + " |")
