#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The documentation, run as written (issue 21): every `$ COMMAND` in the
code blocks of docs/cli.md is run from a folder where `build/` is the
build tree and `nanoprobe` the command built, and what it prints (stdout
and stderr together, as a terminal shows them) is compared in shape with
the lines the docs show below it. README.md's command lines are checked
against the verbs' --help (their programs are the reader's).

Shape: each line with the paths of the tree, hex numbers, decimal numbers
and histogram bars replaced by tokens, blanks collapsed; the words, the
JSON keys and the punctuation stay. Every line the docs show must have a
line of its shape in the output; unless the block cuts lines (a `...`
line), every output line must have one in the docs. The order is not
compared: the program's output and nanoprobe's reach the terminal in
either order.

A command is left out only for a reason named in SKIP (a process id of
the writer's machine, an arm64 build, minutes of benchmarks).

Environment: NP_BUILD_DIR (the build tree), NP_CLI. With NP_DOCTEST_SHOW
set, each command's output is printed too (to update the docs).
Arguments: substrings of the commands to run; none: all of them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("NP_BUILD_DIR") or os.path.join(ROOT, "build")
NANOPROBE = os.environ.get("NP_CLI") or os.path.join(BUILD, "tools/nanoprobe/nanoprobe")
DOCS = [os.path.join(ROOT, "docs/cli.md")]
README = os.path.join(ROOT, "README.md")
TIMEOUT = 120  # one command; reaching it is a failure, never a measure
SHOW = bool(os.environ.get("NP_DOCTEST_SHOW"))

# Commands the test does not run, each with why (a regular expression on
# the command as the docs write it).
SKIP = [
    (r"-p (?!999999)\d+", "a process id of the machine the docs were written on"),
    (r"build-arm64", "needs the arm64 build (make check-arm64)"),
    (r"^nanoprobe bench", "benchmarks: minutes, and figures, not shapes"),
    (r"/usr/riscv64-linux-gnu/lib/libc.so.6", "a cross libc: cli-analyze checks this report"),
]

# Files the docs' commands name that the reader makes (docs/cli.md says
# what they hold).
SCRIPTS = {
    "wrap.sh": "#!/bin/sh\nexec {build}/tests/cli/counter 10\n",
    "child.sh": "#!/bin/sh\n{build}/tests/cli/counter 10\n{build}/tests/cli/counter 5\n",
}

failures = 0
checks = 0


def check(ok, what, detail=""):
    global failures, checks
    checks += 1
    if ok:
        print(f"ok {checks} - {what}")
    else:
        failures += 1
        print(f"not ok {checks} - {what}")
        for line in str(detail).splitlines():
            print(f"#   {line}")


def blocks(path):
    """(line number, command, [expected lines], cut) for each `$ ` line of
    the file's code blocks."""
    out, inside, cur = [], False, None
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            if inside and cur:
                out.append(cur)
            inside, cur = not inside, None
        elif inside and line.startswith("$ "):
            if cur:
                out.append(cur)
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            cur = [i + 1, cmd, [], False]
        elif inside and cur:
            if line.strip() in ("...", "(rows cut)") or line.startswith("# ("):
                cur[3] = True
            else:
                cur[2].append(line)
        i += 1
    return [tuple(b) for b in out]


HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
NUM = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:[KMG](?=[,)\]]))?")


# The clock latency and trace read (docs/cli.md, "Clock"): the TSC where
# the kernel vouches for it, the vDSO elsewhere; the docs show the TSC.
CLOCKS = ("tsc", "vdso")
CLOCK = "CLOCK"
CLOCK_LINE = re.compile(r"^Clock: (?:tsc at [\d.]+ MHz, calibrated to |vdso clock_gettime\()"
                        r"CLOCK_MONOTONIC\b.*")


def json_shape(v):
    """A JSON value's shape: its keys in order, numbers as N, strings by
    shape(), the distinct shapes of an array's elements."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{CLOCK if k == 'clock' and x in CLOCKS else json_shape(x)}"
                              for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + "|".join(sorted({json_shape(x) for x in v})) + "]"
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return "N"
    return json.dumps(text_shape(v))


def shape(line):
    if line.startswith("{"):
        try:
            return json_shape(json.loads(line))
        except ValueError:
            pass
    return text_shape(line)


CWD = None  # the folder the commands run in, which stands for the root


def text_shape(line):
    # this checkout's own paths first: a clone at /check/work/main holds
    # /work/main/ as a part of its paths
    if CLOCK_LINE.match(line):
        return "Clock: CLOCK"
    s = line.replace(CWD + "/", "ROOT/") if CWD else line
    s = s.replace(os.path.realpath(BUILD) + "/", "ROOT/build/").replace(ROOT + "/", "ROOT/")
    s = s.replace("/work/main/", "ROOT/")  # the root where the docs were written
    s = re.sub(r"/work/[^/\s\"]+/(?:[^/\s\"]+/)?(?=build/)", "ROOT/", s)
    s = re.sub(r"/tmp/[^\s\"]*/", "TMP/", s)
    s = re.sub(r"\|[@ ]*\|", "|BAR|", s)
    # the implementation an ifunc picked for this CPU (__strcmp_evex, _avx2)
    s = re.sub(r"\b(__\w+?)_(?:evex|avx2|avx512\w*|sse\w*|erms)\b", r"\1_IFUNC", s)
    s = HEX.sub("H", s)
    s = NUM.sub("N", s)
    s = re.sub(r"\[\d\d:\d\d:\d\d(\.\d+)?\]", "[TIME]", s)
    s = re.sub(r"N:N:N", "TIME", s)
    return " ".join(s.split())


def run_cmd(cmd, cwd):
    env = dict(os.environ, LC_ALL="C", DEBUGINFOD_URLS="",
               PATH=os.path.join(cwd, ".bin") + ":" + os.environ.get("PATH", ""))
    try:
        p = subprocess.run(["bash", "-c", "exec 2>&1\n" + cmd], cwd=cwd, env=env, capture_output=True,
                           text=True, errors="replace", timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
        return p.stdout
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode(errors="replace") + "\n[test: timed out]"


def docs_commands(wanted):
    global CWD
    with tempfile.TemporaryDirectory() as d:
        CWD = d
        os.symlink(BUILD, os.path.join(d, "build"))
        os.makedirs(os.path.join(d, ".bin"))
        os.symlink(NANOPROBE, os.path.join(d, ".bin", "nanoprobe"))
        for name, text in SCRIPTS.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text.format(build=os.path.realpath(BUILD)))
            os.chmod(os.path.join(d, name), 0o755)
        for path in DOCS:
            rel = os.path.relpath(path, ROOT)
            for lineno, cmd, want, cut in blocks(path):
                if wanted and not any(w in cmd for w in wanted):
                    continue
                why = next((w for pat, w in SKIP if re.search(pat, cmd)), None)
                label = f"{rel}:{lineno}: {cmd}"
                if why:
                    print(f"ok {checks + 1} - {label} # SKIP {why}")
                    continue
                got = run_cmd(cmd, d).splitlines()
                if SHOW:
                    print(f"# ---- {label}\n" + "\n".join(got))
                have = {shape(l) for l in got if l.strip()}
                shown = {shape(l) for l in want if l.strip()}
                missing = [l for l in want if l.strip() and shape(l) not in have]
                extra = [l for l in got if l.strip() and shape(l) not in shown]
                detail = ("lines the docs show that the command did not print:\n  " +
                          "\n  ".join(missing) + "\nwhat it printed:\n  " + "\n  ".join(got))
                check(not missing, f"{label}: prints what the docs show", detail)
                if not cut:
                    check(not extra, f"{label}: and nothing the docs leave out (no '...')",
                          "printed, not in the docs:\n  " + "\n  ".join(extra))


def help_options(verb):
    p = subprocess.run([NANOPROBE, verb, "--help"], capture_output=True, text=True)
    return set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", p.stdout.split("\noptions:\n")[-1]))


def readme_commands():
    """README's command lines: each verb exists and takes each option."""
    text = open(README).read()
    for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            words = line.split("#")[0].split()
            if len(words) < 2 or words[0] != "nanoprobe":
                continue
            verb = words[1]
            opts = help_options(verb)
            check(opts, f"README.md: {line.strip()}: '{verb}' is a verb with --help")
            for w in words[2:]:
                if w == "--":
                    break
                if w.startswith("-") and not re.match(r"-\d", w):
                    check(w in opts, f"README.md: {verb} takes {w}", sorted(opts))


def main():
    if not os.path.exists(NANOPROBE):
        print(f"not ok 1 - missing: {NANOPROBE}")
        return 1
    wanted = sys.argv[1:]
    docs_commands(wanted)
    if not wanted:
        readme_commands()
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
