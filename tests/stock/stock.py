#!/usr/bin/env python3
"""The stock tests of the verbs shim: rdma-core's own programs (ibverbs-utils, rdmacm-utils,
perftest) run unchanged on the emulated HCA with build/libhcasim-verbs-emu.so LD_PRELOADed.
ctest label `stock`, names stock.* (`ctest -R stock`); registered in CMakeLists.txt.

    stock.py symbols --shim SO LIB...
        Compares the function symbols LIB defines (`nm -D --defined-only`, types T, W, i; the
        @VERSION / @@VERSION suffix stripped) with those the shim defines, and fails listing
        every one the shim lacks: a program calling it would run rdma-core's code on the shim's
        objects.

    stock.py run --shim SO [--timeout S] [--server 'CMD' [--server-port N] [--expect-server RE]]
                 --client 'CMD' [--expect RE]... [--expect-stderr RE]... [--reject RE]... [--status N]
                 [--env NAME=VALUE]... [--free-port] [--expect-server-stderr RE]...
        Runs CMD (a command line, split as a POSIX shell would, no pipes or variables) with the
        shim preloaded; with --server, first the server program as a second process on the same
        machine, waiting until it listens on TCP port N of loopback (from /proc/net/tcp, without
        connecting to it: a perftest server takes one connection) or, without --server-port, one
        second. Passes when the client exits with N (default 0), every --expect RE matches its
        stdout (re.MULTILINE) and every --expect-stderr RE its stderr, no --reject RE matches
        its stdout or stderr (nor the server's), and the server, if any, exits 0 with its
        --expect-server matched.
        Both are killed after S seconds (default 60): a timeout fails. A program that is not
        installed FAILS the test (it is not skipped): scripts/install-deps.sh installs them all.
        --env NAME=VALUE adds (or replaces) a variable in both processes' environment (e.g.
        HCASIM_FAULT=fault.loss=1e-3). --free-port picks a free TCP port of loopback and puts it
        for every "{port}" in the server's and the client's CMD, and is the --server-port unless
        one is given. --expect-server-stderr RE must match the server's stderr (re.MULTILINE),
        as --expect-stderr the client's.
        --preload-after LIB preloads LIB after the shim (librspreload.so, which turns a program's
        TCP sockets into rsockets). --server-stays: the server serves for ever (rcopy's); it is
        terminated once the client exited, and its exit status is not checked. "{tmp}" in either
        CMD, --make-file PATH:BYTES (a file of random bytes made first) and --same-files A B (the
        two must hold the same bytes after the run) is a scratch directory of the run's own.
        --skip-if-missing PACKAGE makes a program that is not installed a skip, not a failure:
        one line naming the program and PACKAGE, exit status 77 (ctest's SKIP_RETURN_CODE), for
        programs hcasim's CI installs but a developer may not have (ucx-utils).
        --expect-stderr-sum RE MIN: the numbers RE's first group captures in the client's stderr,
        over all its matches, add up to at least MIN (--expect-server-stderr-sum: the server's);
        the sum is printed.
        Each run has an emulated subnet of its own (HCASIM_SUBNET, a temporary directory,
        removed after it; docs/emulate.md), so that runs in parallel never see each other's
        ports; --env HCASIM_SUBNET=DIR gives one.

Exit status: 0 passed, 1 failed, 2 bad arguments, 77 skipped (--skip-if-missing). Everything run and its output is printed.
"""
import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print(f"FAIL: {msg}")
    return 1


def defined_functions(path):
    """The function symbols `path` defines, versions stripped, or None when nm fails."""
    r = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr, end="")
        return None
    names = set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in ("T", "W", "i"):
            names.add(f[2].split("@")[0])
    return names


def cmd_symbols(a):
    if shutil.which("nm") is None:
        return fail("nm (binutils) is not installed")
    shim = defined_functions(a.shim)
    if shim is None:
        return fail(f"nm -D {a.shim} failed")
    missing, total = [], 0
    for lib in a.libs:
        want = defined_functions(lib)
        if want is None:
            return fail(f"nm -D {lib} failed (is rdma-core installed?)")
        total += len(want)
        lost = sorted(want - shim)
        print(f"{lib}: {len(want)} functions, {len(want) - len(lost)} exported by the shim")
        missing += [f"{os.path.basename(lib)}: {n}" for n in lost]
    if missing:
        print("\n".join(missing))
        return fail(f"{len(missing)} of {total} functions not exported by {a.shim}")
    print(f"PASS: all {total} functions exported by the shim")
    return 0


def listening(port):
    """True when something listens on TCP `port` (any address, IPv4 or IPv6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state = fields[1], fields[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def start(argv, env, out, err):
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)


def show(name, argv, rc, out, err):
    print(f"--- {name}: {shlex.join(argv)}: exit status {rc}")
    for label, f in (("stdout", out), ("stderr", err)):
        f.seek(0)
        text = f.read().decode(errors="replace")
        if text:
            print(f"--- {name} {label}:\n{text}", end="" if text.endswith("\n") else "\n")


def free_port():
    """A TCP port of loopback that nothing uses now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_sums(name, sums, text):
    """The problems of `sums` ([RE, MIN] pairs) on `text`: RE's first group, summed over its
    matches, below MIN. Prints each sum."""
    problems = []
    for rx, least in sums:
        total = sum(int(m.group(1)) for m in re.finditer(rx, text, re.MULTILINE))
        print(f"{name} stderr: /{rx}/ adds up to {total} (at least {least} expected)")
        if total < int(least):
            problems.append(f"{name} stderr: /{rx}/ adds up to {total}, below {least}")
    return problems


def cmd_run(a):
    scratch = tempfile.TemporaryDirectory(prefix="hcasim-stock-files-")
    try:
        return run_in(a, scratch.name)
    finally:
        scratch.cleanup()


def run_in(a, scratch):
    a.client = a.client.replace("{tmp}", scratch)
    if a.server:
        a.server = a.server.replace("{tmp}", scratch)
    for spec in a.make_file:
        path, sep, size = spec.rpartition(":")
        if not sep or not size.isdigit():
            print(f"--make-file {spec}: not PATH:BYTES")
            return 2
        with open(path.replace("{tmp}", scratch), "wb") as f:
            f.write(os.urandom(int(size)))
    if a.free_port:
        port = free_port()
        a.client = a.client.replace("{port}", str(port))
        if a.server:
            a.server = a.server.replace("{port}", str(port))
        if a.server_port is None:
            a.server_port = port
    client = shlex.split(a.client)
    server = shlex.split(a.server) if a.server else None
    for argv in filter(None, (server, client)):
        if shutil.which(argv[0]) is None and a.skip_if_missing:
            print(f"SKIP: {argv[0]} is not installed (Debian package {a.skip_if_missing}; "
                  "scripts/install-deps.sh installs it)")
            return 77
        if shutil.which(argv[0]) is None:
            return fail(f"{argv[0]} is not installed (scripts/install-deps.sh installs perftest, "
                        "ibverbs-utils and rdmacm-utils)")
    if not os.path.exists(a.shim):
        return fail(f"{a.shim}: no such shim (build the hcasim-verbs-emu target)")
    env = dict(os.environ)
    for lib in a.preload_after:
        if not os.path.exists(lib):
            return fail(f"{lib}: not installed (--preload-after)")
    env["LD_PRELOAD"] = " ".join(a.preload_first + [a.shim] + a.preload_after)
    env["LC_ALL"] = "C"
    subnet = tempfile.TemporaryDirectory(prefix="hcasim-stock-")
    env["HCASIM_SUBNET"] = subnet.name
    for assignment in a.env:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            print(f"--env {assignment}: not NAME=VALUE")
            return 2
        env[name] = value
    deadline = time.monotonic() + a.timeout
    files = [tempfile.TemporaryFile() for _ in range(4)]
    sproc = None
    problems = []
    try:
        if server:
            sproc = start(server, env, files[2], files[3])
            while True:
                if a.server_port is None:
                    time.sleep(1.0)
                    break
                if listening(a.server_port):
                    break
                if sproc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if sproc.poll() is not None:
                problems.append("the server exited before the client started")
        cproc = None
        crc = None
        if not problems:
            cproc = start(client, env, files[0], files[1])
            try:
                crc = cproc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                cproc.kill()
                crc = cproc.wait()
                problems.append(f"the client did not exit within {a.timeout} s: killed")
        srv_rc = None
        if sproc is not None and a.server_stays:
            # A server that serves for ever (rcopy's): ended once the client is done.
            time.sleep(0.5)
            if sproc.poll() is None:
                sproc.terminate()
                try:
                    sproc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    sproc.kill()
            srv_rc = 0 if sproc.wait() in (0, -15, -9) else sproc.returncode
        if sproc is not None and not a.server_stays:
            try:
                srv_rc = sproc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                sproc.kill()
                srv_rc = sproc.wait()
                problems.append(f"the server did not exit within {a.timeout} s: killed")
        if cproc is not None:
            show("client", client, crc, files[0], files[1])
            if crc != a.status:
                problems.append(f"client exit status {crc}, expected {a.status}")
            files[0].seek(0)
            out = files[0].read().decode(errors="replace")
            for rx in a.expect:
                if not re.search(rx, out, re.MULTILINE):
                    problems.append(f"client stdout does not match /{rx}/")
            files[1].seek(0)
            both = out + files[1].read().decode(errors="replace")
            for rx in a.expect_stderr:
                if not re.search(rx, both[len(out):], re.MULTILINE):
                    problems.append(f"client stderr does not match /{rx}/")
            for rx in a.reject:
                if re.search(rx, both, re.MULTILINE):
                    problems.append(f"client output matches /{rx}/")
            problems += check_sums("client", a.expect_stderr_sum, both[len(out):])
        if sproc is not None:
            show("server", server, srv_rc, files[2], files[3])
            if srv_rc != 0:
                problems.append(f"server exit status {srv_rc}, expected 0")
            files[2].seek(0)
            sout = files[2].read().decode(errors="replace")
            for rx in a.expect_server:
                if not re.search(rx, sout, re.MULTILINE):
                    problems.append(f"server stdout does not match /{rx}/")
            files[3].seek(0)
            serr = files[3].read().decode(errors="replace")
            sboth = sout + serr
            for rx in a.expect_server_stderr:
                if not re.search(rx, serr, re.MULTILINE):
                    problems.append(f"server stderr does not match /{rx}/")
            for rx in a.reject:
                if re.search(rx, sboth, re.MULTILINE):
                    problems.append(f"server output matches /{rx}/")
            problems += check_sums("server", a.expect_server_stderr_sum, serr)
        for x, y in a.same_files:
            x, y = x.replace("{tmp}", scratch), y.replace("{tmp}", scratch)
            try:
                with open(x, "rb") as fx, open(y, "rb") as fy:
                    same = fx.read() == fy.read()
            except OSError as e:
                problems.append(f"--same-files: {e}")
                continue
            if same:
                print(f"{x} and {y}: the same {os.path.getsize(x)} bytes")
            else:
                problems.append(f"{x} and {y} differ")
    finally:
        if sproc is not None and sproc.poll() is None:
            sproc.kill()
            sproc.wait()
        for f in files:
            f.close()
        subnet.cleanup()
    if problems:
        return fail("; ".join(problems))
    print("PASS")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("symbols")
    s.add_argument("--shim", required=True)
    s.add_argument("libs", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("--shim", required=True)
    r.add_argument("--preload-first", action="append", default=[],
                   help="a library preloaded before the shim (ASan's runtime in a sanitizer build)")
    r.add_argument("--preload-after", action="append", default=[],
                   help="a library preloaded after the shim (librspreload)")
    r.add_argument("--server-stays", action="store_true",
                   help="the server serves for ever: terminated once the client exited, its status not checked")
    r.add_argument("--make-file", action="append", default=[], metavar="PATH:BYTES",
                   help="a file of random bytes made before the run")
    r.add_argument("--same-files", nargs=2, action="append", default=[], metavar=("A", "B"),
                   help="after the run, A and B must hold the same bytes")
    r.add_argument("--timeout", type=float, default=60.0)
    r.add_argument("--server")
    r.add_argument("--server-port", type=int)
    r.add_argument("--expect-server", action="append", default=[])
    r.add_argument("--client", required=True)
    r.add_argument("--expect", action="append", default=[])
    r.add_argument("--expect-stderr", action="append", default=[],
                   help="a regex the client's stderr must match")
    r.add_argument("--reject", action="append", default=[],
                   help="a regex that must match neither program's stdout nor stderr")
    r.add_argument("--status", type=int, default=0)
    r.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable of both processes' environment")
    r.add_argument("--free-port", action="store_true",
                   help='a free TCP port for "{port}" in the commands (and --server-port)')
    r.add_argument("--expect-server-stderr", action="append", default=[])
    r.add_argument("--skip-if-missing", metavar="PACKAGE",
                   help="a program that is not installed skips the test (exit 77), naming PACKAGE")
    r.add_argument("--expect-stderr-sum", nargs=2, action="append", default=[], metavar=("RE", "MIN"),
                   help="RE's first group summed over the client's stderr is at least MIN")
    r.add_argument("--expect-server-stderr-sum", nargs=2, action="append", default=[], metavar=("RE", "MIN"),
                   help="as --expect-stderr-sum, on the server's stderr")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    return cmd_symbols(a) if a.cmd == "symbols" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
