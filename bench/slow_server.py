#!/usr/bin/env python3
"""A test server for bench/handover.sh: an HTTP/1.0 server with a slow start
and a drain, the kind of program `--listen` and `--on-change handover` are for.

- Starts slowly: START_SECONDS (default 0.6) before it listens.
- Listens on descriptor 3 when envshim hands it a socket (LISTEN_FDS, and
  LISTEN_PID its own pid: systemd's socket activation), else binds
  127.0.0.1:$PORT itself (SO_REUSEADDR, as servers do).
- Says READY=1 on $NOTIFY_SOCKET once it listens (an `@` name is abstract).
- On SIGTERM: accepts no more, finishes the requests it has, exits 0.
- Answers every request with `version $VERSION` after WORK_SECONDS (default 0.002).
"""
import os
import signal
import socket
import sys
import threading
import time

START = float(os.environ.get("START_SECONDS", "0.6"))
WORK = float(os.environ.get("WORK_SECONDS", "0.002"))
VERSION = os.environ.get("VERSION", "?")


def listener():
    if os.environ.get("LISTEN_FDS") == "1" and os.environ.get("LISTEN_PID") == str(os.getpid()):
        return socket.socket(fileno=3), "fd 3 from envshim"
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(os.environ["PORT"])))
    s.listen(128)
    return s, "bound itself"


def notify_ready():
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"READY=1", address)


def serve(conn):
    with conn:
        conn.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        time.sleep(WORK)
        body = f"version {VERSION}\n".encode()
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def main():
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    time.sleep(START)
    sock, how = listener()
    sock.settimeout(0.05)
    print(f"slow_server: version {VERSION} listening ({how}), pid {os.getpid()}", file=sys.stderr, flush=True)
    notify_ready()
    workers = []
    while not stopping.is_set():
        try:
            conn, _ = sock.accept()
        except (socket.timeout, BlockingIOError):
            continue
        conn.setblocking(True)
        t = threading.Thread(target=serve, args=(conn,))
        t.start()
        workers = [w for w in workers if w.is_alive()] + [t]
    # The drain: no more accepts (this copy of the socket closed; envshim's stays open), the requests in hand finished.
    sock.close()
    for w in workers:
        w.join()
    print(f"slow_server: version {VERSION} drained, pid {os.getpid()}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
