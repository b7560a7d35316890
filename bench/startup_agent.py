#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What nanoprobe costs a program's start-up, side by side in one run.

For each command (python3.11 -c pass, true, a chain of four execs), each
row runs it ROUNDS times, the rows interleaved round by round so that the
machine's other work falls on all of them alike:

  unprobed      the command alone
  before        with --before BUILD_DIR: that build's nanoprobe (the tree
                before the scan cache), as the rows below
  cache off     nanoprobe count -o /dev/null c:malloc c:free -- CMD with
                NANOPROBE_CACHE=off: every traced process decodes libc's
                functions at its first attach
  cold cache    the same with an empty $XDG_CACHE_HOME: the first process
                scans and keeps the result, the others of a chain read it
  warm cache    the same with the cache a run before it filled

and prints the median and the least wall time of each. With --split, five
more runs of each nanoprobe row under strace (only the session's system
calls stop: --seccomp-bpf) says how long each traced process waited for
its probes (its execve to the command's GO, median of 5 runs), and how
much of that was the command answering (JOIN to the probes, READY to GO):
what remains of the overhead is the command's own start and end.

With --cpu (root, bpftrace), three more runs of each row say how much CPU
time the program's processes took (every thread's, the agent's with
them) and how much nanoprobe and its helpers took, from each thread's
run time as it exits.

  bench/startup_agent.py [--split] [--cpu] [--before BUILD_DIR] [BUILD_DIR] [ROUNDS]
"""
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROBES = ["c:malloc", "c:free"]
COMMANDS = [
    ("python3.11 -c pass", ["/usr/bin/python3.11", "-c", "pass"]),
    ("true", ["/usr/bin/true"]),
    # dash runs a bare `true` itself: /usr/bin/true is the fourth exec
    ("sh -c 'sh -c \"sh -c /usr/bin/true\"' (4 execs)",
     ["/bin/sh", "-c", "sh -c \"sh -c /usr/bin/true\""]),
]


def run(argv, env):
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - t


def rows(np, before, cmd, tmp):
    base = dict(os.environ, DEBUGINFOD_URLS="")
    traced = [np, "count", "-o", "/dev/null"] + PROBES + ["--"] + cmd
    warm = os.path.join(tmp, "warm")
    os.makedirs(warm, exist_ok=True)

    def cold():
        d = tempfile.mkdtemp(dir=tmp)
        return dict(base, XDG_CACHE_HOME=d)

    out = [("unprobed", lambda: (cmd, base))]
    if before:
        old = [before, "count", "-o", "/dev/null"] + PROBES + ["--"] + cmd
        out.append(("before", lambda: (old, base)))
    return out + [
        ("cache off", lambda: (traced, dict(base, NANOPROBE_CACHE="off"))),
        ("cold cache", lambda: (traced, cold())),
        ("warm cache", lambda: (traced, dict(base, XDG_CACHE_HOME=warm))),
    ]


def split(np, row, cmd):
    """(per process: (wait, command's share)) from one run under strace."""
    argv, env = row()
    if argv == cmd or not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile(mode="r", suffix=".strace") as log:
        subprocess.run(["strace", "-f", "--seccomp-bpf", "-ttt", "-o", log.name, "-e",
                        "trace=execve,connect,sendto,sendmsg,recvfrom,recvmsg"] + argv,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return windows(log.read().splitlines())


# Every thread's CPU time as it exits, by process, for the run bpftrace
# starts (cpid) and its descendants: a traced process is one with more
# than one thread (the agent's); the command's own are nanoprobe and its
# one-thread helpers (ldconfig).
ANCESTRY = " || ".join("curtask" + "->real_parent" * k + "->tgid == cpid" for k in range(7))
BPF = ("tracepoint:sched:sched_process_exit /" + ANCESTRY + "/ "
       "{ @cpu[pid] = sum(curtask->se.sum_exec_runtime); @threads[pid] = count(); }")


def cpu(row, cmd):
    """(CPU of the traced processes or of the command alone, of nanoprobe
    and its helpers), in seconds, from one run under bpftrace."""
    argv, env = row()
    if not shutil.which("bpftrace") or os.geteuid() != 0:
        return None
    # bpftrace splits -c at blanks, no shell: a script execs the command
    with tempfile.NamedTemporaryFile(mode="w", suffix=".sh") as script:
        script.write("exec " + " ".join(shlex.quote(a) for a in argv) + "\n")
        script.flush()
        p = subprocess.run(["bpftrace", "-q", "-e", BPF, "-c", "/bin/sh " + script.name],
                           env=env, capture_output=True, text=True)
    ns, threads = {}, {}
    for m in re.finditer(r"@(cpu|threads)\[(\d+)\]: (\d+)", p.stdout):
        (ns if m.group(1) == "cpu" else threads)[m.group(2)] = int(m.group(3))
    if argv == cmd:
        return sum(ns.values()) / 1e9, 0.0
    traced = sum(v for k, v in ns.items() if threads.get(k, 0) > 1)
    return traced / 1e9, (sum(ns.values()) - traced) / 1e9


def windows(lines):
    """Per session in an strace log: (execve to GO, the command's share)."""
    # the agent's thread: connect, JOIN, the probes ending with GO (type 3),
    # READY (type 5), GO. A call another thread interrupts shows as
    # "<unfinished ...>", then "<... NAME resumed>" with what it received.
    out, execd, agent, joined, probes, ready = [], 0.0, None, 0.0, 0.0, 0.0
    for ln in lines:
        m = re.match(r"(\d+)\s+([\d.]+) (?:<\.\.\. )?(\w+)(?: resumed>|\()(.*)", ln)
        if not m or "<unfinished" in ln and not m.group(3).startswith(("send", "connect")):
            continue
        tid, t, call, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4)
        sent = re.search(r'"\\(\d)\\0\\0\\0', rest)
        kind = int(sent.group(1)) if sent else 0
        if call == "execve" and rest.endswith("= 0"):
            execd = t
        elif call == "connect" and "nanoprobe." in rest:
            agent, joined, probes, ready = tid, t, 0.0, 0.0
        elif tid != agent:
            continue
        elif call.startswith("recv") and kind == 3 and not probes:
            probes = t
        elif call.startswith("send") and kind == 5 and probes:
            ready = t
        elif call.startswith("recv") and kind == 3 and ready:
            out.append((t - execd, (probes - joined) + (t - ready)))
            agent = None
    return out


def main():
    argv = sys.argv[1:]
    before = None
    if "--before" in argv:
        k = argv.index("--before")
        before = os.path.join(argv[k + 1], "tools/nanoprobe/nanoprobe")
        del argv[k:k + 2]
    args = [a for a in argv if a not in ("--split", "--cpu")]
    want_split = "--split" in argv
    want_cpu = "--cpu" in argv
    build = args[0] if args else "build"
    rounds = int(args[1]) if len(args) > 1 else 10
    np = os.path.join(build, "tools/nanoprobe/nanoprobe")
    with tempfile.TemporaryDirectory(prefix="np-startup-") as tmp:
        for title, cmd in COMMANDS:
            rs = rows(np, before, cmd, tmp)
            run(*rs[-1][1]())  # fill the warm cache
            times = {name: [] for name, _ in rs}
            for _ in range(rounds):
                for name, row in rs:
                    times[name].append(run(*row()))
            print(f"-- {title}  ({rounds} rounds; wall time, median and least)")
            unprobed = statistics.median(times["unprobed"])
            for name, _ in rs:
                med = statistics.median(times[name])
                extra = "" if name == "unprobed" else f"  (+{(med - unprobed) * 1e3:6.1f} ms)"
                print(f"   {name:<12} {med * 1e3:7.1f} ms  least {min(times[name]) * 1e3:7.1f} ms"
                      f"{extra}")
            if want_split:
                for name, row in rs[1:]:
                    runs = [split(np, row, cmd) for _ in range(5)]
                    runs = [r for r in runs if r]
                    n = min((len(r) for r in runs), default=0)
                    if n:
                        med = [(statistics.median(r[k][0] for r in runs),
                                statistics.median(r[k][1] for r in runs),
                                min(r[k][0] for r in runs)) for k in range(n)]
                        print(f"   {name:<12} each traced process waited for its probes, median "
                              f"of {len(runs)} (of it the command's answers; least): " +
                              ", ".join(f"{w * 1e3:.1f} ({c * 1e3:.1f}; {m * 1e3:.1f}) ms"
                                        for w, c, m in med))
            if want_cpu:
                for name, row in rs:
                    c = [cpu(row, cmd) for _ in range(3)]
                    if all(c):
                        print(f"   {name:<12} CPU, median of 3: the program's processes "
                              f"{statistics.median(x[0] for x in c) * 1e3:6.1f} ms, nanoprobe "
                              f"and its helpers {statistics.median(x[1] for x in c) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
