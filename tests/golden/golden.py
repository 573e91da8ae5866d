#!/usr/bin/env python3
"""Golden-output tests of hcasim: one command per case file, its whole stdout, stderr and exit status.

The case files (tests/golden/*.tesh) use a subset of SimGrid's tesh syntax (tools/tesh, `man tesh`)
and three lines of their own (`2> `, `! sanitizer skip`, `! no newline at end of`). Unlike tesh,
which merges stderr into stdout and drops empty lines at the end, stdout and stderr are compared
separately and exactly: hcasim's tools print their output on stdout and hcasim's own lines (notes,
fault counts, errors) on stderr. One case per file, NAME.tesh, ctest test golden.NAME:

    # comment (any line starting with '#'; kept by `update`, which writes the expectations last)
    ! setenv NAME=VALUE        environment of the command (tesh)
    ! timeout SECONDS          the run is killed and fails after that long (default 300; tesh)
    ! sanitizer skip REASON    not run in a sanitizer build (HCASIM_SANITIZE): printed, ctest SKIPPED
    $ hcasim netperf ...       the command, exactly once, split into words as a POSIX shell would
                               (quotes, backslashes; no pipes, redirections or variables); the
                               word `hcasim` is the binary under test, other programs are looked
                               up with the binary's directory first on PATH
    ! expect return N          the exit status (default 0; tesh)
    > TEXT                     one line of the expected stdout ('>' alone: an empty line)
    2> TEXT                    one line of the expected stderr
    ! no newline at end of stdout|stderr   the stream's last line has no '\\n'

Comparison is byte for byte: TEXT is everything after the '> ' (or '2> '), trailing blanks
included, and every line ends with '\\n' unless the file says otherwise. Before the comparison
the absolute path of the data directory (the source tree, given to the command as
HCASIM_DATA_DIR) is written `${HCASIM_DATA_DIR}` in the output, so that a message naming a
platform directory does not depend on where the tree was cloned. The command runs in an empty
temporary directory, stdin from /dev/null, LC_ALL=C, every other HCASIM_* variable removed.

A new case: write its comment and `$ ` line in tests/golden/NAME.tesh, run
`scripts/golden-update NAME` (it fills in the expectations), read the output it wrote, commit.
A case should take at most a few seconds in the Release build; one that takes longer (a
README example at full length) says `! sanitizer skip REASON` and starts first under ctest -j.

Examples in the documentation (`golden.py readme`, ctest golden.readme: README.md and docs/*.md).
In a fenced code block, a line `build/hcasim ARGS` (or `hcasim ARGS`, either after an optional
`$ `; a trailing backslash continues it) is a command, and the lines after it, up to the next
command or the end of the block, are what it printed; a line starting with `...` marks lines
left out. A command shown with output must be the command of a case (the same words, `hcasim
ARGS`), and every line shown (trailing blanks aside) must be in that case's expected stdout,
then stderr, in the order shown. So a figure in the documentation that no longer matches the
binary fails golden.NAME (the case) or golden.readme (the text).

Subcommands (python3 only, no packages):
    golden.py run     --hcasim BIN --data-dir DIR [--sanitizer] CASE      one case; exit 0 pass,
                      1 fail (with a unified diff, expected vs actual), 77 skipped
    golden.py update  --hcasim BIN --data-dir DIR [CASE...]               rerun the cases (default:
                      all of tests/golden/), rewrite their expectations in place, print the diff
    golden.py readme  [--cases DIR] README.md [DOC.md...]                 every example of the files
                      that shows output is a case, and its shown lines are in that case's output
    golden.py selftest --hcasim BIN --data-dir DIR CASE                   a case passes, fails when
                      one digit of its expectation changes, and `update` restores it
"""

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SKIP_CODE = 77  # ctest SKIP_RETURN_CODE (tests/golden/CMakeLists.txt)
DEFAULT_TIMEOUT = 300.0
ENCODING = dict(encoding="utf-8", errors="surrogateescape")


class CaseError(Exception):
    """A malformed case file: the message names FILE:LINE."""


class Case:
    """One parsed case file."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.command = None
        self.command_line = 0
        self.env = {}
        self.timeout = DEFAULT_TIMEOUT
        self.sanitizer_skip = None
        self.expect_return = 0
        self.stdout = []
        self.stderr = []
        self.no_eol = set()
        self.kept = []  # lines update keeps as they are (comments, directives, the command)
        self._parse()

    def _parse(self):
        with open(self.path, newline="", **ENCODING) as f:
            text = f.read()
        if text and not text.endswith("\n"):
            text += "\n"
        for number, line in enumerate(text.split("\n")[:-1], 1):
            where = f"{self.path}:{number}"
            if line.startswith("> ") or line == ">":
                self.stdout.append(line[2:])
            elif line.startswith("2> ") or line == "2>":
                self.stderr.append(line[3:])
            elif line.startswith("#") or line.strip() == "":
                self.kept.append(line)
            elif line.startswith("$ "):
                if self.command is not None:
                    raise CaseError(f"{where}: a second command (one command per case file)")
                self.command = line[2:]
                self.command_line = number
                try:
                    words = shlex.split(self.command)
                except ValueError as e:
                    raise CaseError(f"{where}: cannot split the command into words: {e}") from None
                if not words:
                    raise CaseError(f"{where}: empty command")
                self.kept.append(line)
            elif line.startswith("! "):
                self._directive(line[2:].strip(), where, line)
            else:
                raise CaseError(f"{where}: not a case line (#, $, >, 2>, !): {line!r}")
        if self.command is None:
            raise CaseError(f"{self.path}: no command (a line '$ hcasim ...')")

    def _directive(self, d, where, line):
        if d.startswith("expect return "):
            try:
                self.expect_return = int(d[len("expect return "):])
            except ValueError:
                raise CaseError(f"{where}: expect return takes an integer: {d!r}") from None
            return  # an expectation: update writes it again
        if d in ("no newline at end of stdout", "no newline at end of stderr"):
            self.no_eol.add(d.rsplit(" ", 1)[1])
            return
        if d.startswith("setenv "):
            key, sep, value = d[len("setenv "):].partition("=")
            if not sep or not key:
                raise CaseError(f"{where}: setenv takes NAME=VALUE: {d!r}")
            self.env[key] = value
        elif d.startswith("timeout "):
            try:
                self.timeout = float(d[len("timeout "):])
            except ValueError:
                raise CaseError(f"{where}: timeout takes seconds: {d!r}") from None
        elif d.startswith("sanitizer skip"):
            reason = d[len("sanitizer skip"):].strip()
            if not reason:
                raise CaseError(f"{where}: sanitizer skip needs a reason")
            self.sanitizer_skip = reason
        else:
            raise CaseError(f"{where}: unknown directive {d!r}")
        self.kept.append(line)

    def expected(self, stream):
        lines = self.stdout if stream == "stdout" else self.stderr
        text = "".join(l + "\n" for l in lines)
        if stream in self.no_eol and text.endswith("\n"):
            text = text[:-1]
        return text

    def render(self, status, out, err):
        """The case file with these expectations (what `update` writes)."""
        lines = list(self.kept)
        while lines and lines[-1].strip() == "":
            lines.pop()
        if status != 0:
            lines.append(f"! expect return {status}")
        for stream, text in (("stdout", out), ("stderr", err)):
            prefix = "> " if stream == "stdout" else "2> "
            if text == "":
                continue
            body = text[:-1] if text.endswith("\n") else text
            for l in body.split("\n"):
                lines.append((prefix + l) if l != "" else prefix.rstrip())
            if not text.endswith("\n"):
                lines.append(f"! no newline at end of {stream}")
        return "".join(l + "\n" for l in lines)


def run_command(case, hcasim, data_dir):
    """Runs the case's command; returns (status, stdout, stderr, seconds)."""
    words = shlex.split(case.command)
    hcasim = os.path.abspath(hcasim)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCASIM_")}
    env["PATH"] = os.path.dirname(hcasim) + os.pathsep + env.get("PATH", "")
    env["LC_ALL"] = "C"
    data_dir = os.path.abspath(data_dir)
    env["HCASIM_DATA_DIR"] = data_dir
    env.update(case.env)
    if words[0] == "hcasim":
        executable = hcasim
    else:
        executable = shutil.which(words[0], path=env["PATH"])
        if executable is None:
            raise CaseError(f"{case.path}:{case.command_line}: {words[0]}: not found")
    with tempfile.TemporaryDirectory(prefix=f"golden-{case.name}-") as cwd:
        start = time.monotonic()
        try:
            p = subprocess.run(words, executable=executable, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=case.timeout)
        except subprocess.TimeoutExpired:
            raise CaseError(f"{case.path}:{case.command_line}: timed out after {case.timeout:g} s") from None
        seconds = time.monotonic() - start
    out = p.stdout.decode(**ENCODING).replace(data_dir, "${HCASIM_DATA_DIR}")
    err = p.stderr.decode(**ENCODING).replace(data_dir, "${HCASIM_DATA_DIR}")
    return p.returncode, out, err, seconds


def show_status(status):
    return f"killed by signal {-status}" if status < 0 else str(status)


def udiff(expected, actual, fromfile, tofile):
    """A unified diff of two texts, lines without a final newline marked as diff(1) marks them."""
    def split(text):
        lines = text.split("\n")
        out = [l + "\n" for l in lines[:-1]]
        if lines[-1] != "":
            out.append(lines[-1] + "\n\\ No newline at end of file\n")
        return out
    return "".join(difflib.unified_diff(split(expected), split(actual), fromfile=fromfile, tofile=tofile))


def cmd_run(args):
    case = Case(args.case)
    print(f"[{case.name}] $ {case.command}")
    if args.sanitizer and case.sanitizer_skip:
        print(f"[{case.name}] SKIPPED in the sanitizer build: {case.sanitizer_skip}")
        return SKIP_CODE
    status, out, err, seconds = run_command(case, args.hcasim, args.data_dir)
    failed = []
    if status != case.expect_return:
        failed.append(f"exit status {show_status(status)}, expected {case.expect_return}")
    for stream, actual in (("stdout", out), ("stderr", err)):
        expected = case.expected(stream)
        if actual != expected:
            failed.append(f"{stream} differs:\n" + udiff(expected, actual, f"{case.path} (expected {stream})",
                                                        f"actual {stream}"))
            if actual.rstrip("\n") == expected.rstrip("\n"):
                failed.append(f"({stream}: the difference is in the newlines at its end)")
    if failed:
        for f in failed:
            print(f"[{case.name}] FAILED: {f}", end="" if f.endswith("\n") else "\n")
        print(f"[{case.name}] to accept the new output: scripts/golden-update {case.name}")
        return 1
    print(f"[{case.name}] ok ({seconds:.2f} s; exit {status}, {len(case.stdout)} stdout lines, "
          f"{len(case.stderr)} stderr lines)")
    return 0


def case_paths(cases_dir, names):
    if not names:
        paths = sorted(os.path.join(cases_dir, f) for f in os.listdir(cases_dir) if f.endswith(".tesh"))
        if not paths:
            raise CaseError(f"{cases_dir}: no *.tesh case")
        return paths
    paths = []
    for n in names:
        if os.path.exists(n):
            paths.append(n)
            continue
        p = os.path.join(cases_dir, n if n.endswith(".tesh") else n + ".tesh")
        if not os.path.exists(p):
            raise CaseError(f"{n}: no such case (looked for {p})")
        paths.append(p)
    return paths


def cmd_update(args):
    paths = case_paths(args.cases, args.names)
    changed = 0
    total = 0.0
    for path in paths:
        case = Case(path)
        status, out, err, seconds = run_command(case, args.hcasim, args.data_dir)
        total += seconds
        if status < 0:
            raise CaseError(f"{path}: {case.command}: killed by signal {-status}; not recorded as its output")
        with open(path, newline="", **ENCODING) as f:
            old = f.read()
        new = case.render(status, out, err)
        if new != old:
            changed += 1
            full = os.path.abspath(path)
            if full.startswith(args.root + os.sep):  # git's form, so that `git apply -R` can undo it
                rel = os.path.relpath(full, args.root)
                sys.stdout.write(f"diff --git a/{rel} b/{rel}\n")
                sys.stdout.write(udiff(old, new, f"a/{rel}", f"b/{rel}"))
            else:
                sys.stdout.write(udiff(old, new, path, path))
            tmp = path + ".tmp"
            with open(tmp, "w", newline="", **ENCODING) as f:
                f.write(new)
            os.replace(tmp, path)
        print(f"golden-update: {case.name}: {'rewritten' if new != old else 'unchanged'} "
              f"({seconds:.2f} s, exit {show_status(status)})", file=sys.stderr)
    print(f"golden-update: {len(paths)} cases run in {total:.1f} s, {changed} rewritten"
          + (" (review the diff above, then commit it)" if changed else ""), file=sys.stderr)
    return 0


README_COMMAND = re.compile(r"^(?:\$ )?(?:build/)?hcasim (.*)$")


def readme_examples(readme):
    """(line, command words, shown output lines) of every hcasim command in a fenced block of README."""
    with open(readme, **ENCODING) as f:
        lines = f.read().split("\n")
    examples = []
    in_block = False
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_block = not in_block
            current = None
            i += 1
            continue
        if not in_block:
            i += 1
            continue
        m = README_COMMAND.match(line)
        if m:
            number = i + 1
            text = line
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            m = README_COMMAND.match(text)
            command = "hcasim " + m.group(1)
            try:
                words = shlex.split(command, comments=True)
            except ValueError:
                words = command.split()
            current = (number, words, [])
            examples.append(current)
        elif current is not None:
            current[2].append((i + 1, line))
        i += 1
    return examples


def cmd_readme(args):
    cases = [Case(p) for p in case_paths(args.cases, [])]
    by_words = {}
    for c in cases:
        by_words.setdefault(tuple(shlex.split(c.command)), c)
    failures = []
    checked = 0
    for doc in args.docs:
        for number, words, shown in readme_examples(doc):
            where = f"{doc}:{number}"
            case = by_words.get(tuple(words))
            output = [(n, l) for n, l in shown if l.strip() != "" and not l.lstrip().startswith("...")]
            if not output:
                print(f"{where}: {' '.join(words)}: no output shown"
                      + (f" (golden case {case.name})" if case else " (no golden case; not checked)"))
                continue
            if case is None:
                failures.append(f"{where}: `{' '.join(words)}` shows its output but no case of {args.cases} "
                                "has this command: add one (tests/golden/golden.py says how)")
                continue
            actual = [l.rstrip() for l in case.stdout + case.stderr]
            pos = 0
            bad = None
            for n, l in output:
                want = l.rstrip()
                try:
                    pos = actual.index(want, pos) + 1
                except ValueError:
                    bad = (n, want)
                    break
            if bad:
                near = difflib.get_close_matches(bad[1], actual, n=1, cutoff=0.0)
                failures.append(f"{doc}:{bad[0]}: this line of the example at line {number} is not in the "
                                f"output of golden case {case.name} (in order):\n  {os.path.basename(doc)}: "
                                f"{bad[1]}\n  case: {near[0] if near else '(nothing)'}")
                continue
            checked += 1
            print(f"{where}: {' '.join(words)}: {len(output)} shown lines match golden case {case.name}")
    for f in failures:
        print(f"FAILED: {f}")
    if checked == 0 and not failures:
        print(f"FAILED: {', '.join(args.docs)}: no example with its output found (a fenced block with a line "
              "'build/hcasim ...' and the lines it printed): the check checks nothing")
        return 1
    print(f"{checked} examples checked against their golden cases, {len(failures)} failed")
    return 1 if failures else 0


def cmd_selftest(args):
    """Plants a one-digit change in a copy of CASE: the run must fail with a diff, update must restore it."""
    case = Case(args.case)
    with open(args.case, newline="", **ENCODING) as f:
        original = f.read()
    lines = original.split("\n")
    # The last digit of the last expected stdout line that has one (a figure of the result row).
    target = next((i for i in reversed(range(len(lines))) if lines[i].startswith("> ")
                   and re.search(r"\d", lines[i])), None)
    if target is None:
        print(f"FAILED: {args.case}: no expected stdout line with a digit to change")
        return 1
    at = [m.start() for m in re.finditer(r"\d", lines[target])][-1]
    digit = lines[target][at]
    lines[target] = lines[target][:at] + str((int(digit) + 1) % 10) + lines[target][at + 1:]
    with tempfile.TemporaryDirectory(prefix="golden-selftest-") as d:
        copy = os.path.join(d, os.path.basename(args.case))
        common = ["--hcasim", args.hcasim, "--data-dir", args.data_dir]
        me = [sys.executable, os.path.abspath(__file__)]

        def run(*a):
            return subprocess.run(me + list(a), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **ENCODING)

        with open(copy, "w", newline="", **ENCODING) as f:
            f.write(original)
        r = run("run", *common, copy)
        if r.returncode != 0:
            print(r.stdout + f"FAILED: the unchanged case {case.name} does not pass")
            return 1
        with open(copy, "w", newline="", **ENCODING) as f:
            f.write("\n".join(lines))
        r = run("run", *common, copy)
        print(r.stdout, end="")
        right = original.split("\n")[target][2:]
        if r.returncode != 1 or "stdout differs" not in r.stdout or f"\n+{right}\n" not in r.stdout \
                or f"\n-{lines[target][2:]}\n" not in r.stdout:
            print(f"FAILED: a planted change ({digit} -> {(int(digit) + 1) % 10} on line {target + 1}) "
                  "did not fail the case with a diff")
            return 1
        r = run("update", *common, "--cases", d, copy)
        print(r.stdout, end="")
        with open(copy, newline="", **ENCODING) as f:
            restored = f.read()
        if restored != original:
            print("FAILED: update did not restore the case file:\n" + udiff(original, restored, "original", "updated"))
            return 1
    print(f"ok: {case.name} passes, fails on a planted digit ({digit} -> {(int(digit) + 1) % 10}, line "
          f"{target + 1}), and update restores it byte for byte")
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    p = argparse.ArgumentParser(description="hcasim's golden-output tests (the format: this file's header)")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "update", "selftest"):
        s = sub.add_parser(name)
        s.add_argument("--hcasim", required=True, help="the hcasim binary under test")
        s.add_argument("--data-dir", default=root, help="HCASIM_DATA_DIR of the command (default: the source tree)")
        if name == "run":
            s.add_argument("--sanitizer", action="store_true", help="a sanitizer build: honour '! sanitizer skip'")
            s.add_argument("case")
        elif name == "update":
            s.add_argument("--cases", default=here, help="the folder of cases (default: tests/golden)")
            s.add_argument("names", nargs="*", help="case names or files (default: every case)")
        else:
            s.add_argument("case")
    s = sub.add_parser("readme")
    s.add_argument("--cases", default=here)
    s.add_argument("docs", nargs="+", help="README.md and other markdown files with examples")
    args = p.parse_args()
    args.root = root
    try:
        return {"run": cmd_run, "update": cmd_update, "readme": cmd_readme, "selftest": cmd_selftest}[args.cmd](args)
    except CaseError as e:
        print(f"golden: error: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
