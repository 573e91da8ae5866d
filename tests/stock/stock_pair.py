#!/usr/bin/env python3
"""Runs a stock verbs program (ibverbs-utils, perftest) as two processes on loopback with the
verbs shim preloaded: the server (no host argument), then the client (127.0.0.1), both on an
emulated subnet of their own (a temporary $HCASIM_SUBNET) and a free TCP port for the programs'
own LID/QPN/PSN exchange. Passes when both exit 0 and each printed its summary: for
ibv_*_pingpong "N bytes in S seconds = R Mbit/sec" and "I iters in ...", for perftest its
result table's data row with the iteration count asked for.

usage: stock_pair.py SHIM PROGRAM [ARGS...]   (ARGS for both sides; -p PORT is added)
Exit status: 0 pass, 1 fail, 77 skipped (the shim lacks the device side: ibv_query_port).
"""
import ctypes
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def iterations(args):
    for flag in ("-n", "--iters"):
        if flag in args:
            return int(args[args.index(flag) + 1])
    return 1000


def summary_ok(program, out, iters):
    if program.startswith("ibv_"):
        return (re.search(r"^\d+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$", out, re.M) is not None and
                re.search(rf"^{iters} iters in [0-9.]+ seconds = [0-9.]+ usec/iter$", out, re.M) is not None)
    # perftest: "#bytes #iterations ..." then a row "SIZE ITERS numbers..."
    return re.search(rf"#bytes\s+#iterations.*\n\s*\d+\s+{iters}\s+[0-9.]+", out) is not None


# perftest's latency tests of RDMA READ and atomics print the table on the client only (the
# server's side is passive: it posts nothing and measures nothing).
CLIENT_ONLY_SUMMARY = {"ib_read_lat", "ib_atomic_lat"}


def main():
    shim, program, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    name = os.path.basename(program)
    try:
        ctypes.CDLL(shim).ibv_query_port
    except AttributeError:
        print(f"stock_pair: {shim} has no ibv_query_port (the device side, issue23-vsurf): skipped")
        return 77
    port = str(free_port())
    env = dict(os.environ, LD_PRELOAD=shim)
    with tempfile.TemporaryDirectory(prefix="hcasim-stock-") as subnet:
        env["HCASIM_SUBNET"] = subnet
        cmd = [program, *args, "-p", port]
        t0 = time.monotonic()
        srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cli = None
        # The client tries its TCP connect once: it starts when the server listens (seen in
        # /proc/net/tcp*, not by connecting: the server accepts one connection only).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and srv.poll() is None and not listening(int(port)):
            time.sleep(0.02)
        cli = subprocess.Popen([*cmd, "127.0.0.1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        try:
            cout, _ = cli.communicate(timeout=120)
            sout, _ = srv.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            cli.kill()
            srv.kill()
            print(f"stock_pair: {program} timed out")
            return 1
        wall = time.monotonic() - t0
    iters = iterations(args)
    ok = True
    for side, p, out in (("server", srv, sout), ("client", cli, cout)):
        print(f"--- {side} (exit {p.returncode})\n{out}")
        if p.returncode != 0:
            print(f"stock_pair: {program} {side} exited {p.returncode}")
            ok = False
        elif side == "server" and name in CLIENT_ONLY_SUMMARY:
            pass
        elif not summary_ok(name, out, iters):
            print(f"stock_pair: {program} {side}: no summary line for {iters} iterations")
            ok = False
    print(f"stock_pair: {name} {'passed' if ok else 'FAILED'} in {wall:.2f} s wall")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
