#!/usr/bin/env bash
# What a live update costs the clients of a server behind `envshim run --watch`:
# bench/slow_server.py (a 600 ms start, a drain on SIGTERM) serves on
# 127.0.0.1 while CLIENTS threads request all along (one connection a
# request) and the watched env file changes CHANGES times, GAP seconds
# apart. For each way of applying a change: the requests, how many failed
# (refused, reset, timed out), and the median, p99 and worst latency of
# those that succeeded, how many took over 100 ms, and how many programs started
# (docs/performance.md, "--listen and handover: what a change costs the clients").
#
#   cargo build --release && bench/handover.sh
#
# Environment: ENVSHIM (default target/release/envshim), CLIENTS (4),
# CHANGES (6), GAP (2 seconds), MODES (default "restart listen handover").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENVSHIM=${ENVSHIM:-$ROOT/target/release/envshim}
[ -x "$ENVSHIM" ] || { echo "missing $ENVSHIM: cargo build --release" >&2; exit 1; }
export ENVSHIM SERVER=$ROOT/bench/slow_server.py CLIENTS=${CLIENTS:-4} CHANGES=${CHANGES:-6} GAP=${GAP:-2}
export MODES=${MODES:-restart listen handover}

python3 - <<'EOF'
import os, signal, socket, statistics, subprocess, sys, tempfile, threading, time

ENVSHIM, SERVER = os.environ["ENVSHIM"], os.environ["SERVER"]
CLIENTS, CHANGES, GAP = int(os.environ["CLIENTS"]), int(os.environ["CHANGES"]), float(os.environ["GAP"])
MAX_REQUESTS = 50_000  # per client: bounded whatever the speed
ARGS = {
    "restart": ("restart, no --listen", []),
    "listen": ("restart, --listen", ["--listen", "tcp:127.0.0.1:{port}"]),
    "handover": ("handover, --listen", ["--listen", "tcp:127.0.0.1:{port}", "--on-change", "handover"]),
}

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def request(port):
    """(ok, seconds, why)"""
    t = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"GET / HTTP/1.0\r\n\r\n")
            data = b""
            while chunk := c.recv(4096):
                data += chunk
        ok = data.startswith(b"HTTP/1.0 200")
        return ok, time.monotonic() - t, "" if ok else "bad answer"
    except ConnectionRefusedError:
        return False, time.monotonic() - t, "refused"
    except ConnectionResetError:
        return False, time.monotonic() - t, "reset"
    except OSError as e:
        return False, time.monotonic() - t, type(e).__name__

def write(path, version):
    with open(path + ".tmp", "w") as f:
        f.write(f"VERSION={version}\n")
    os.rename(path + ".tmp", path)

def measure(mode):
    name, extra = ARGS[mode]
    port = free_port()
    d = tempfile.mkdtemp()
    env_file = os.path.join(d, "app.env")
    write(env_file, 0)
    cmd = [ENVSHIM, "run", "--watch", "--watch-settle", "200ms", "--env-file", env_file]
    cmd += [a.format(port=port) for a in extra] + ["--", "python3", SERVER]
    log = open(os.path.join(d, "stderr"), "w+")
    proc = subprocess.Popen(cmd, env={**os.environ, "PORT": str(port)}, stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while not request(port)[0]:
        if time.monotonic() > deadline or proc.poll() is not None:
            sys.exit(f"{name}: the server never answered")
        time.sleep(0.05)
    results, stop = [], threading.Event()
    def client():
        mine = []
        while not stop.is_set() and len(mine) < MAX_REQUESTS:
            mine.append(request(port))
        results.extend(mine)
    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(1)
    for v in range(1, CHANGES + 1):
        write(env_file, v)
        time.sleep(GAP)
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    log.seek(0)
    text = log.read()
    starts = text.count("listening (")
    ok = sorted(s for good, s, _ in results if good)
    failed = [why for good, _, why in results if not good]
    kinds = ", ".join(f"{k} {failed.count(k)}" for k in sorted(set(failed))) or "-"
    p99 = ok[min(len(ok) - 1, int(len(ok) * 0.99))] if ok else float("nan")
    worst_failed = max((s for good, s, _ in results if not good), default=0)
    slow = sum(1 for s in ok if s > 0.1)
    print(f"| {name} | {len(results)} | {len(failed)} ({kinds}) | {statistics.median(ok)*1000:.1f} ms | {p99*1000:.0f} ms | {ok[-1]*1000:.0f} ms | {slow} | {starts} |", flush=True)
    if worst_failed > 1:
        print(f"  ({name}: a failed request took {worst_failed*1000:.0f} ms)", file=sys.stderr)

print(f"{CLIENTS} clients, {CHANGES} changes {GAP:g} s apart, {os.path.basename(SERVER)} (600 ms start)")
print("| how a change is applied | requests | failed | median | p99 | worst | over 100 ms | programs started |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for mode in os.environ["MODES"].split():
    measure(mode)
EOF
