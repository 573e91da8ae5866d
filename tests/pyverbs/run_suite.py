#!/usr/bin/env python3
"""rdma-core's provider test suite (pyverbs, third_party/rdma-core-v44/tests) on the emulated HCA.
ctest label `pyverbs`, one test per module, names pyverbs.MODULE; registered in CMakeLists.txt.

    run_suite.py --shim SO --suite DIR --allowed-skips FILE [--timeout S] [--python PY]
                 [--preload-first SO]... [--env NAME=VALUE]... MODULE...

Runs each MODULE (test_cq, test_qp, ...; or MODULE.CLASS[.TEST]) of the suite with Debian's python3-pyverbs (run by PY,
default /usr/bin/python3, whatever python3 is first on PATH) and the shim
LD_PRELOADed, on an emulated subnet of its own (HCASIM_SUBNET, a temporary directory, as
tests/stock/stock.py), against the device hcasim_emu0. The suite is loaded as its own
run_tests.py loads it (its tests/__init__.py, its args_parser with --dev), and run by unittest
with a result that keeps every outcome; every test's id and outcome is printed.

The device's net interface. rdma-core's RDMATestCase finds a device's IP address as
/sys/class/infiniband/DEV/device/net/IFNAME, then `ip -j addr show IFNAME`; without it every
RDMA CM test skips ("doesn't have net interface"). The shim's RDMA CM runs on the machine's IP
addresses, loopback included, so the emulated device's interface is `lo`: the suite runs in a
mount namespace of its own (unshare(1); as a user namespace's root when not root) in which
/sys/class is a tmpfs holding a link to each of the machine's own classes and
infiniband/hcasim_emu0/device/net/lo. Nothing outside the namespace changes.

Passes when no test fails or errors, none passes unexpectedly, and every skip is allowed: FILE
has one entry a line, `TEST_ID_GLOB | SKIP_MESSAGE_REGEX | REASON` (a line starting with `#` is a
comment); a skip is allowed when an entry's glob (fnmatch) matches the test's id and its regex
(re.search) the skip's message. REASON says what a ConnectX-3 with rdma-core 44's mlx4 provider lacks. A
skip with no entry fails. A module that does not exit within S seconds (default 110) fails.

Exit status: 0 passed, 1 failed, 2 bad arguments.
"""
import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEVICE = "hcasim_emu0"
NET_INTERFACE = "lo"


def read_allowed(path):
    """The entries of the allowed-skip file: (glob, compiled regex, reason), or exits 2."""
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            fields = [x.strip() for x in text.split("|")]
            if len(fields) != 3 or not all(fields):
                print(f"{path}:{n}: not 'TEST_ID_GLOB | SKIP_MESSAGE_REGEX | REASON'")
                sys.exit(2)
            try:
                rx = re.compile(fields[1])
            except re.error as ex:
                print(f"{path}:{n}: bad regex: {ex}")
                sys.exit(2)
            entries.append((fields[0], rx, fields[2]))
    return entries


def allowed(entries, test_id, message):
    for glob, rx, reason in entries:
        if fnmatch.fnmatchcase(test_id, glob) and rx.search(message):
            return reason
    return None


def make_sysfs_view(keep):
    """Inside a private mount namespace: /sys/class as a tmpfs of links to the real classes
    (bound at the empty directory `keep`), plus infiniband/DEVICE/device/net/NET_INTERFACE."""
    subprocess.run(["mount", "--bind", "/sys/class", keep], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "hcasim-sysclass", "/sys/class"],
                   check=True)
    for name in os.listdir(keep):
        if name != "infiniband":
            os.symlink(os.path.join(keep, name), os.path.join("/sys/class", name))
    os.makedirs(f"/sys/class/infiniband/{DEVICE}/device/net/{NET_INTERFACE}")


def run_inner(a):
    """Runs the modules in this process (already in its mount namespace); returns the exit
    status."""
    make_sysfs_view(a.keep_dir)
    entries = read_allowed(a.allowed_skips)
    suite_dir = os.path.abspath(a.suite)
    sys.path.insert(0, os.path.dirname(suite_dir))
    sys.path.insert(0, suite_dir)
    import unittest
    from importlib.machinery import SourceFileLoader
    from args_parser import parser
    sys.argv = [os.path.join(suite_dir, "run_tests.py"), "--dev", DEVICE]
    tests = SourceFileLoader("tests", os.path.join(suite_dir, "__init__.py")).load_module()
    parser.parse_args()

    class Result(unittest.TextTestResult):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.passed = []

        def addSuccess(self, test):
            super().addSuccess(test)
            self.passed.append(test)

    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for m in a.modules:
        if not hasattr(tests, m.split(".")[0]):
            print(f"FAIL: {m}: no such module in {suite_dir}")
            return 1
        suite.addTests(loader.loadTestsFromName(m, module=tests))
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Result)
    result = runner.run(suite)

    problems = []
    skipped_ok = []
    for test, reason in result.skipped:
        why = allowed(entries, test.id(), str(reason))
        if why is None:
            problems.append(f"{test.id()}: skipped for a reason not in the allowed list: {reason}")
        else:
            skipped_ok.append(f"{test.id()}: {reason} (allowed: {why})")
    for test, _ in result.failures:
        problems.append(f"{test.id()}: failed")
    for test, _ in result.errors:
        problems.append(f"{test.id()}: error")
    for test in result.unexpectedSuccesses:
        problems.append(f"{test.id()}: passed unexpectedly")
    print(f"--- {' '.join(a.modules)}: {result.testsRun} run, {len(result.passed)} passed, "
          f"{len(skipped_ok)} skipped as allowed, {len(problems)} problems")
    for line in skipped_ok:
        print(f"allowed skip: {line}")
    for line in problems:
        print(f"FAIL: {line}")
    failed = len(problems)
    print(f"{len(result.passed)} passed, {failed} failed, {len(skipped_ok)} skipped")
    sys.stdout.flush()
    return 1 if problems else 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shim", required=True, help="libhcasim-verbs-emu.so")
    p.add_argument("--suite", required=True, help="rdma-core's tests/ folder")
    p.add_argument("--allowed-skips", required=True)
    p.add_argument("--timeout", type=float, default=110.0)
    p.add_argument("--preload-first", action="append", default=[],
                   help="a library preloaded before the shim (ASan's runtime in a sanitizer build)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable of the suite's environment")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the Python that has python3-pyverbs (default: Debian's, /usr/bin/python3)")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--keep-dir", help=argparse.SUPPRESS)
    p.add_argument("modules", nargs="+")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if a.inner:
        return run_inner(a)

    for path, what in ((a.shim, "no such shim (build the hcasim-verbs-emu target)"),
                       (os.path.join(a.suite, "run_tests.py"), "not rdma-core's tests/ folder"),
                       (a.allowed_skips, "no such file")):
        if not os.path.exists(path):
            print(f"{path}: {what}")
            return 2
    read_allowed(a.allowed_skips)
    for tool in ("unshare", "mount", "ip"):
        if shutil.which(tool) is None:
            print(f"FAIL: {tool} is not installed (scripts/install-deps.sh installs it)")
            return 1
    probe = subprocess.run([a.python, "-c", "import pyverbs.device"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        print("FAIL: python3-pyverbs is not installed (scripts/install-deps.sh installs it): "
              + probe.stderr.strip().splitlines()[-1])
        return 1

    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(a.preload_first + [os.path.abspath(a.shim)])
    env["LC_ALL"] = "C"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for assignment in a.env:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            print(f"--env {assignment}: not NAME=VALUE")
            return 2
        env[name] = value
    subnet = tempfile.TemporaryDirectory(prefix="hcasim-pyverbs-")
    env["HCASIM_SUBNET"] = subnet.name
    keep = tempfile.TemporaryDirectory(prefix="hcasim-pyverbs-sysclass-")
    # The subnet directory must be the user's own: in a user namespace the owner maps to root.
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.append("--map-root-user")
    argv = unshare + [a.python, os.path.abspath(__file__), "--inner", "--keep-dir", keep.name,
                      "--shim", a.shim, "--suite", a.suite, "--allowed-skips", a.allowed_skips,
                      *a.modules]
    try:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            print(f"FAIL: {' '.join(a.modules)} did not finish within {a.timeout} s: killed")
            return 1
    finally:
        subnet.cleanup()
        keep.cleanup()
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
