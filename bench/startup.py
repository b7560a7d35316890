#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a traced program's start-up costs (docs/performance.md, "Start-up"):
side by side in one run, each program unprobed and under each nanoprobe
command given, rounds interleaved so that a busy machine's slow moments
fall on every row alike. Per row: the median wall time of the whole
command, the median cpu time (user + system) of the command and every
process it waited for, and the wall time's ratio to the unprobed row;
with --to-exec, the median time from the command's start to its
program's exec (what the command spends before the program can run: its
own part of the start-up), from a further run under strace.

  bench/startup.py [-n ROUNDS] [--probes SPECS] [--to-exec] NAME=NANOPROBE...

NAME=NANOPROBE: a row's label and the nanoprobe binary it runs (each finds
its own agent beside it), e.g. before=/tmp/main/tools/nanoprobe/nanoprobe
after=build/tools/nanoprobe/nanoprobe. Each row runs
`NANOPROBE count -o /dev/null SPECS -- PROGRAM` (SPECS: c:malloc c:free).
The programs: /usr/bin/python3.11 -c pass, true, and a chain of 4 execs (sh execs
sh, which execs sh, which execs sh, which execs true: 5 images, each
traced).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def chain(n):
    """/bin/sh execs /bin/sh ... which execs true: n execs after the first image."""
    cmd = shutil.which("true")
    for _ in range(n - 1):
        cmd = "/bin/sh -c " + shlex_quote("exec " + cmd)
    return ["/bin/sh", "-c", "exec " + cmd]


def shlex_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


def programs():
    # the distribution's python itself, not a version manager's shim (a
    # chain of shell scripts: another row's matter)
    py = "/usr/bin/python3.11"
    return [("python3.11 -c pass", [py, "-c", "pass"]),
            ("true", [shutil.which("true")]),
            ("4 execs", chain(4))]


def run_once(argv):
    """(wall s, cpu s of the command and what it waited for)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({status}): {' '.join(argv)}")
    return wall, ru.ru_utime + ru.ru_stime


def to_exec(argv, program):
    """ms from the command's exec to the program's, under strace (which
    stops at execve only: --seccomp-bpf); None without strace."""
    strace = shutil.which("strace")
    if not strace:
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        subprocess.run([strace, "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-e",
                        "signal=none", "-ttt", "-o", out.name] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        stamps = [(float(l.split()[1]), l) for l in out if " execve(" in l and "= 0" in l]
    # by path and argv[0]: not the shell that popen starts ("sh")
    later = [t for t, l in stamps[1:] if f'execve("{program}", ["{program}"' in l]
    return (later[0] - stamps[0][0]) * 1e3 if stamps and later else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--rounds", type=int, default=15)
    ap.add_argument("--probes", default="c:malloc c:free")
    ap.add_argument("--to-exec", action="store_true",
                    help="also the command's own part: ms from its start to the program's "
                         "exec, in a run of its own under strace")
    ap.add_argument("rows", nargs="+", help="NAME=NANOPROBE")
    a = ap.parse_args()
    rows = [("unprobed", None)] + [tuple(r.split("=", 1)) for r in a.rows]
    progs = programs()
    res = {(p, r): [] for p, _ in progs for r, _ in rows}
    for _ in range(a.rounds):
        for pname, pargv in progs:
            for rname, np in rows:
                argv = pargv if np is None else \
                    [os.path.realpath(np), "count", "-o", "/dev/null"] + a.probes.split() + \
                    ["--"] + pargv
                wall, cpu = run_once(argv)
                ex = to_exec(argv, pargv[0]) if np is not None and a.to_exec else None
                res[(pname, rname)].append((wall, cpu, ex))
    print(f"# {a.rounds} rounds, interleaved; probes: {a.probes}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    print(f"{'program':20} {'row':10} {'wall ms':>8} {'x unprobed':>10} {'cpu ms':>7}"
          f"{' to exec ms' if a.to_exec else ''}")
    for pname, _ in progs:
        base = statistics.median(r[0] for r in res[(pname, "unprobed")])
        for rname, _ in rows:
            runs = res[(pname, rname)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            ex = [r[2] for r in runs if r[2] is not None]
            col = f" {statistics.median(ex):11.0f}" if ex else f" {'-':>11}" if a.to_exec else ""
            print(f"{pname:20} {rname:10} {wall * 1e3:8.0f} {wall / base:10.1f} {cpu * 1e3:7.0f}"
                  + col)


if __name__ == "__main__":
    main()
