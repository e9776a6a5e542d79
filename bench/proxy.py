#!/usr/bin/env python3
"""The network allow-list proxy against a direct loopback connection.

    python3 bench/proxy.py [--cordon target/release/cordon] [--bytes 1073741824] [--requests 200]
                           [--rounds 5]

Loopback only. A small server in this process stands in for the internet (it answers
`GET /bytes/N` with N bytes sent from one buffer, and `GET /small`); the test-only resolver
override CORDON_TEST_RESOLVE maps `bench.test` to it. A client script runs four ways:
  direct             no sandbox, straight to the server;
  sandbox --network  the helper with the network on, straight to the server;
  proxy              `--allow-domain bench.test`: CONNECT through cordon's proxy;
  floor              no sandbox, CONNECT through a bare splice(2) relay (no policy, no logging)
                     in a process of its own: what any relay costs on this machine.
The four run in turn, --rounds times (one N-byte transfer can swing by 2x on a small machine);
for each it prints the median throughput of its transfers (and the lowest and highest) and the
time of a new connection plus a small request (p50, p95 over --requests). Then, through the
proxy, it holds 1000 connections
open mid-header (slowloris) and prints cordon's resident memory (VmRSS, read from /proc)
before and while they are held, and whether a request still goes through.
Needs root or unprivileged user namespaces (the proxy needs the mount view's namespaces).
"""
import argparse
import fcntl
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CLIENT = r'''
import os, socket, statistics, sys, time
mode, host, port, nbytes, nreq, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
proxy = os.environ.get("HTTPS_PROXY")
proxy_port = int(proxy.rsplit(":", 1)[1]) if proxy else None

def open_to(target_host):
    if proxy_port is None:
        return socket.create_connection((target_host, port))
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (target_host.encode(), port, target_host.encode(), port))
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("proxy closed: %r" % answer)
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise SystemExit("proxy refused: %r" % answer[:200])
    return s

def fetch(path):
    s = open_to(host)
    s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    total = 0
    while True:
        n = s.recv_into(view)
        if n == 0:
            break
        total += n
    s.close()
    return total

if mode == "hold":
    # The bench reads cordon's memory now, then lets the connections open.
    open(os.path.join(work, "ready"), "w").close()
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(work, "go")) and time.time() < deadline:
        time.sleep(0.01)
    held = []
    for _ in range(1000):
        c = socket.create_connection(("127.0.0.1", proxy_port))
        c.sendall(b"GET http://" + host.encode() + b"/slow HTTP/1.1\r\nX-Slow: ")
        held.append(c)
    open(os.path.join(work, "holding"), "w").close()
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(work, "release")) and time.time() < deadline:
        time.sleep(0.05)
    ok = fetch(b"/small") > 0
    print("held %d ok %s" % (len(held), ok))
    raise SystemExit(0)

t0 = time.perf_counter()
got = fetch(b"/bytes/%d" % nbytes)
t1 = time.perf_counter()
lat = []
for _ in range(nreq):
    a = time.perf_counter()
    fetch(b"/small")
    lat.append((time.perf_counter() - a) * 1000)
lat.sort()
print("%d %.6f %.3f %.3f" % (got, t1 - t0, statistics.median(lat), lat[int(len(lat) * 0.95) - 1]))
'''


def serve(listener):
    block = b"\0" * (1 << 20)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn, block), daemon=True).start()


def request_target(conn):
    """The target of the request whose head arrives on conn (its second word), or None when the
    connection closes first."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        head += chunk
    return head.split(b" ", 2)[1]


def answer(conn, block):
    try:
        path = request_target(conn)
        if path is None:
            return
        if path.startswith(b"/bytes/"):
            n = int(path[len(b"/bytes/"):])
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            while n > 0:
                piece = block if n >= len(block) else block[:n]
                conn.sendall(piece)
                n -= len(piece)
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    except OSError:
        pass
    finally:
        conn.close()


def floor_relay(listener):
    """The least a relay can cost: CONNECT, then splice(2) both ways, no policy, no sandbox.
    Runs in a process of its own (as cordon's proxy does), one thread per direction."""
    def pump(src, dst):
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 256 * 1024)  # F_SETPIPE_SZ, as cordon's tunnels
        except OSError:
            pass
        try:
            while True:
                n = os.splice(src.fileno(), w, 256 * 1024, flags=1)  # SPLICE_F_MOVE
                if n == 0:
                    break
                while n:
                    n -= os.splice(r, dst.fileno(), n, flags=1)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def serve_one(client):
        target = request_target(client)
        if target is None:
            return
        host, port = target.rsplit(b":", 1)
        upstream = socket.create_connection((host.decode(), int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream)

    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve_one, args=(client,), daemon=True).start()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", default="target/release/cordon")
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cordon = os.path.abspath(args.cordon)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    port = listener.getsockname()[1]
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    work = tempfile.mkdtemp(prefix="cordon-proxy-bench-", dir="/var/tmp")
    env = dict(os.environ, CORDON_TEST_RESOLVE="bench.test=127.0.0.1:%d" % port)
    # The client takes a proxy from HTTPS_PROXY: only cordon's, in the proxy runs.
    env.pop("HTTPS_PROXY", None)
    py = sys.executable
    common = [py, "-c", CLIENT]
    floor = socket.socket()
    floor.bind(("127.0.0.1", 0))
    floor.listen(1024)
    floor_pid = os.fork()
    if floor_pid == 0:
        listener.close()
        floor_relay(floor)
        os._exit(0)
    floor_env = dict(env, HTTPS_PROXY="http://127.0.0.1:%d" % floor.getsockname()[1])
    runs = [
        ("direct (no sandbox)", common + ["direct", "127.0.0.1"], env),
        ("sandbox, --network", [cordon, "exec", "-a", "never", "--network", "-C", work, "--"] + common + ["direct", "127.0.0.1"], env),
        ("proxy, --allow-domain", [cordon, "exec", "-a", "never", "--allow-domain", "bench.test", "-C", work, "--"] + common + ["proxy", "bench.test"], env),
        ("floor: bare splice relay", common + ["proxy", "127.0.0.1"], floor_env),
    ]
    samples = {name: [] for name, _, _ in runs}
    for _ in range(args.rounds):
        for name, argv, run_env in runs:
            argv = argv + [str(port), str(args.bytes), str(args.requests), work]
            out = subprocess.run(argv, env=run_env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("%s failed: %s%s" % (name, out.stdout, out.stderr))
            got, seconds, p50, p95 = out.stdout.split()[-4:]
            samples[name].append((int(got) / float(seconds) / (1 << 20), float(p50), float(p95)))
    print("%-24s %12s %18s %10s %10s" % ("", "MiB/s", "(low .. high)", "p50 ms", "p95 ms"))
    results = {}
    os.kill(floor_pid, 9)
    os.waitpid(floor_pid, 0)
    for name, _, _ in runs:
        rounds = sorted(samples[name])
        rate, p50, p95 = rounds[len(rounds) // 2]
        results[name] = (rate, statistics.median(r[1] for r in rounds), statistics.median(r[2] for r in rounds))
        print("%-24s %12.1f %18s %10.3f %10.3f" % (
            name, rate, "(%.0f .. %.0f)" % (rounds[0][0], rounds[-1][0]), results[name][1], results[name][2]))
    direct = results["sandbox, --network"]
    proxy = results["proxy, --allow-domain"]
    floor_rate = results["floor: bare splice relay"][0]
    print("proxy throughput (medians of %d rounds): %.0f %% of the sandboxed direct connection; "
          "added per connection: p50 %.3f ms" % (args.rounds, 100 * proxy[0] / direct[0], proxy[1] - direct[1]))
    print("the bare relay reaches %.0f %% of the unsandboxed direct connection; cordon's proxy %.0f %% of the bare relay" % (
        100 * floor_rate / results["direct (no sandbox)"][0], 100 * proxy[0] / floor_rate))

    # A thousand slowloris connections held open: cordon's memory, and a request still served.
    for name in ("ready", "go", "holding", "release"):
        try:
            os.unlink(os.path.join(work, name))
        except FileNotFoundError:
            pass
    child = subprocess.Popen(
        [cordon, "exec", "-a", "never", "--allow-domain", "bench.test", "-C", work, "--"] + common
        + ["hold", "bench.test", str(port), "0", "0", work],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(work, "ready")) and time.time() < deadline:
        time.sleep(0.01)
    before = rss_kib(child.pid)  # the command runs, its proxy serves nothing yet
    open(os.path.join(work, "go"), "w").close()
    while not os.path.exists(os.path.join(work, "holding")) and time.time() < deadline:
        time.sleep(0.02)
    held = rss_kib(child.pid)
    open(os.path.join(work, "release"), "w").close()
    out, err = child.communicate(timeout=120)
    print("1000 slowloris connections: cordon VmRSS %.1f MiB before, %.1f MiB while held; %s" % (
        before / 1024, held / 1024, out.strip() or err.strip()))


if __name__ == "__main__":
    main()
