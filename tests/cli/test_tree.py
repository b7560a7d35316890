#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Process trees: the children a traced program makes (fork, vfork,
posix_spawn, fork+exec, system(), exec chains, a fork from a threaded
process, and the copies no fork handler prepares: the clone and clone3
system calls, glibc's _Fork) keep their probes and report under their own
pid, with -- CMD and
with -p; several -p make one session; --no-follow traces the process
alone and says what it left out; a program that cannot take the agent (a
static one, or any exec'd program of a -p session) is said to be
untraced; a child that outlives the session has its probes removed.

Against tests/cli/progs/forker.c, whose every process says how many calls
it made (`pid=PID items=N`): the counts per pid must be exactly those.
Output: TAP lines and `N passed, M failed`.

Environment (tests/cli/meson.build): NP_CLI, NP_PROG_FORKER,
NP_PROG_STATIC (empty without a static libc). Arguments: names
(substrings) of the cases to run.
"""
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results, run_cases  # noqa: E402
from session import clean_env, ptrace_allowed, session_ready  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("NP_BUILD_DIR", os.path.join(ROOT, "build"))
NANOPROBE = os.environ.get("NP_CLI") or os.path.join(BUILD, "tools/nanoprobe/nanoprobe")
FORKER = os.environ.get("NP_PROG_FORKER") or os.path.join(BUILD, "tests/cli/forker")
STATIC = os.environ.get("NP_PROG_STATIC", os.path.join(BUILD, "tests/cli/static_hello"))
TIMEOUT = 60
ENV = clean_env()

R = Results()
CASES = []
PER_PID = f"uprobe:{FORKER}:add_item {{ @[pid] = count(); }}"
MODES = ("fork", "vfork", "spawn", "exec", "system", "chain", "threads")
RAW_MODES = ("clone", "clone3", "_Fork")  # no fork handler runs in the child
NO_RAW = 3  # forker's status where this libc or kernel cannot make one that way


def case(fn):
    CASES.append(fn)
    return fn


def run(args, input=None):
    p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE if input else
                         subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=ENV, start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\n[test: killed after {TIMEOUT} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def describe(p):
    return (f"command: {' '.join(map(str, p.args))}\nstatus: {p.returncode}\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def ran(text, mode=None):
    """{pid: calls} as the processes said; a threads parent made 1000 more."""
    got = {}
    for pid, n in re.findall(r"^pid=(\d+) items=(\d+)$", text, re.M):
        got[int(pid)] = got.get(int(pid), 0) + int(n)
    if mode == "threads" and got:
        first = min(got)  # the parent is the first to say so, and the lowest pid here
        got[first] += 1000
    return got


def counted(text):
    """{pid: count} from `@[PID]: N` lines."""
    return {int(p): int(n) for p, n in re.findall(r"^@\[(\d+)\]: (\d+)$", text, re.M)}


def untraced_lines(err):
    return [l for l in err.splitlines() if "was not traced" in l or "were not traced" in l]


# --------------------------------------------------------------------------


@case
def every_way_of_making_a_child_is_followed():
    for mode in MODES:
        p = run([NANOPROBE, "run", "-e", PER_PID, "--", FORKER, mode, "3"])
        want = ran(p.stdout, mode)
        R.eq(p.returncode, 0, f"{mode}: exits 0", describe(p))
        R.check(len(want) >= 2, f"{mode}: a child ran", describe(p))
        R.eq(counted(p.stdout), want, f"{mode}: every process, its own pid", describe(p))
        R.eq(untraced_lines(p.stderr), [], f"{mode}: nothing left out", describe(p))


def raw_modes(p_of):
    """(mode, run) for each way without fork's handlers that this machine has."""
    for mode in RAW_MODES:
        p = p_of(mode)
        if p.returncode == NO_RAW and not ran(p.stdout):
            R.skip(mode, "this libc or kernel cannot make a child that way")
            continue
        yield mode, p


@case
def a_child_made_without_fork_handlers_is_followed():
    """clone, clone3 and _Fork run no pthread_atfork handler: the child's
    first thread went on writing into its parent thread's buffer, and its
    calls were counted under the parent's pid."""
    for mode, p in raw_modes(lambda m: run([NANOPROBE, "run", "-e", PER_PID, "--", FORKER, m,
                                            "3"])):
        want = ran(p.stdout)
        R.eq(p.returncode, 0, f"{mode}: exits 0", describe(p))
        R.eq(len(want), 2, f"{mode}: a child ran", describe(p))
        R.eq(counted(p.stdout), want, f"{mode}: every process, its own pid", describe(p))
        R.eq(untraced_lines(p.stderr), [], f"{mode}: nothing left out", describe(p))
    for mode, p in raw_modes(lambda m: run([NANOPROBE, "trace", "add_item", "--", FORKER, m,
                                            "2"])):
        events = re.findall(r"^\s*forker-(\d+)\s+\[", p.stdout, re.M)
        R.eq(sorted(int(e) for e in events), sorted([min(ran(p.stdout))] +
                                                    [max(ran(p.stdout))] * 2),
             f"trace {mode}: the child's two calls under its pid", describe(p))


@case
def a_copy_without_following_is_counted_untraced():
    for mode, p in raw_modes(lambda m: run([NANOPROBE, "run", "--no-follow", "-e", PER_PID,
                                            "--", FORKER, m, "3"])):
        R.eq(counted(p.stdout), {min(ran(p.stdout)): 1}, f"{mode}: the parent alone",
             describe(p))
        R.check(any("1 process the traced program forked was not traced" in l
                    for l in untraced_lines(p.stderr)), f"{mode}: said", describe(p))


@case
def a_copy_that_outlives_its_parent_is_traced_to_its_end():
    """Its parent exits at once; the copy calls once, sleeps, calls again."""
    p = run([NANOPROBE, "run", "-e", PER_PID, "--", FORKER, "clone-linger", "1"])
    R.eq(counted(p.stdout), ran(p.stdout), "both calls of the copy, under its pid",
         describe(p))
    R.eq(len(ran(p.stdout)), 2, "parent and copy", describe(p))


@case
def a_copy_that_outlives_the_session_is_said_to_keep_its_probes():
    """No thread of the agent's runs in a copy: it cannot remove its probes
    when the session ends (-d), and the session says so; its code still
    holds them."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        # files, not pipes: the copy holds them after nanoprobe has gone
        p = subprocess.Popen([NANOPROBE, "run", "-d", "1", "-e", PER_PID, "--", FORKER,
                              "clone-linger", "30"], stdout=fo, stderr=fe, text=True, env=ENV,
                             start_new_session=True)
        p.wait(timeout=TIMEOUT)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    m = re.search(r"^child=(\d+)$", out, re.M)
    child = int(m.group(1)) if m else -1
    try:
        R.check(m and any(f"process {child} (" in l and "keeps its probes" in l
                          for l in err.splitlines()), "said", out + err)
        if m:
            now, orig = site_bytes(child)
            R.check(now != orig, "and it does", out + err)
    finally:
        if m:
            os.kill(child, signal.SIGKILL)


@case
def stacks_are_named_with_their_own_process_mappings():
    """A program the tree execs has its own layout: its stacks are named
    with its mappings (the stack key holds the pid, as bpftrace's does)."""
    p = run([NANOPROBE, "run", "-e", f"uprobe:{FORKER}:add_item {{ @[pid, ustack(2)] = count(); }}",
             "--", FORKER, "exec", "2"])
    stacks = re.findall(r"^@\[(\d+), \n((?:    .*\n)+)\]: (\d+)$", p.stdout, re.M)
    want = ran(p.stdout)
    R.eq({int(pid): int(n) for pid, _, n in stacks}, want, "a stack per process", describe(p))
    frames = [f.strip() for _, fs, _ in stacks for f in fs.splitlines()]
    R.check(frames and all(f.startswith(("add_item+", "items+", "run+", "main+"))
                           for f in frames),
            "every frame named", describe(p))


@case
def symbols_are_named_with_their_own_process_mappings():
    """usym() of a function pointer in a program and in the program it
    execs (each image at its own address): each named add_item, in a map
    key and in printf. The exec'd one was named with the first process's
    mappings, and came out as a bare address."""
    prog = (f"uprobe:{FORKER}:items_with {{ @[pid, usym(arg0)] = count(); "
            f"printf(\"%d %s\\n\", pid, usym(arg0)); }}")
    p = run([NANOPROBE, "run", "-e", prog, "--", FORKER, "exec", "2"])
    pids = sorted(ran(p.stdout))
    keys = re.findall(r"^@\[(\d+), (.*)\]: (\d+)$", p.stdout, re.M)
    R.eq(len(pids), 2, "a program and the one it execs", describe(p))
    R.eq(sorted((int(k), name, int(n)) for k, name, n in keys),
         [(pid, "add_item", 1) for pid in pids], "map keys", describe(p))
    lines = re.findall(r"^(\d+) (\S+)$", p.stdout, re.M)
    R.eq(sorted((int(k), name) for k, name in lines), [(pid, "add_item") for pid in pids],
         "printf", describe(p))


@case
def count_adds_up_the_tree():
    """The issue's case: count printed the parent's calls only."""
    for mode in ("fork", "spawn", "chain"):
        p = run([NANOPROBE, "count", f"{FORKER}:add_item", "--", FORKER, mode, "8"])
        total = sum(ran(p.stdout).values())
        R.check(re.search(rf"^add_item\s+{total}$", p.stdout, re.M) is not None,
                f"{mode}: {total} calls", describe(p))


@case
def trace_names_each_process():
    p = run([NANOPROBE, "trace", "add_item", "--", FORKER, "fork", "2"])
    pids = sorted(ran(p.stderr + p.stdout))
    events = re.findall(r"^\s*forker-(\d+)\s+\[", p.stdout, re.M)
    R.eq(sorted(set(int(e) for e in events)), pids, "events of parent and child", describe(p))
    R.eq(len(events), 3, "three calls", describe(p))


@case
def no_follow_traces_the_process_alone_and_says_so():
    for mode, said in (("fork", "1 process the traced program forked was not traced"),
                       ("spawn", "the session does not follow the programs it runs"),
                       ("exec", "the session does not follow the programs it runs")):
        p = run([NANOPROBE, "run", "--no-follow", "-e", PER_PID, "--", FORKER, mode, "3"])
        parent = min(ran(p.stdout))
        R.eq(counted(p.stdout), {parent: 1}, f"{mode}: the parent alone", describe(p))
        R.check(any(said in l for l in untraced_lines(p.stderr)), f"{mode}: said",
                describe(p))
    p = run([NANOPROBE, "count", "--no-follow", f"{FORKER}:add_item", "--", FORKER, "exec", "3"])
    R.check(re.search(r"^add_item\s+1$", p.stdout, re.M) is not None and
            untraced_lines(p.stderr), "count --no-follow: the parent's call, the rest said",
            describe(p))


@case
def a_static_program_is_said_untraced():
    if not STATIC or not os.path.exists(STATIC):
        R.skip("static", "no static libc to build static_hello")
        return
    p = run([NANOPROBE, "run", "-e", PER_PID, "--", FORKER, "run", "1", STATIC])
    lines = untraced_lines(p.stderr)
    R.check("static hello" in p.stdout, "it ran", describe(p))
    R.check(len(lines) == 1 and STATIC in lines[0] and "statically linked" in lines[0],
            "said, with why", describe(p))


class Serve:
    """forker --serve: a line in, its processes' lines out, then "done"."""

    def __init__(self, under=(), stderr=subprocess.DEVNULL):
        self.p = subprocess.Popen([*under, FORKER, "--serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr, text=True,
                                  env=ENV, start_new_session=True)
        self.pid = self.p.pid
        self.buf = b""
        while (line := self.readline()) != "ready":  # after what a command above says
            assert line is not None and under, line

    def readline(self):
        """A line, read with os.read: a buffered reader may hold lines that
        select() then does not see."""
        fd = self.p.stdout.fileno()
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode().strip()

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            l = self.readline()
            if l in (None, "done"):
                return "\n".join(out)
            out.append(l)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=TIMEOUT)


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


@case
def a_note_read_after_its_sender_went_is_said():
    """An untraced child says so as it starts, and may have exited and been
    reaped before the session reads it: nanoprobe is stopped meanwhile."""
    srv = Serve([NANOPROBE, "run", "--no-follow", "-e", PER_PID, "--"], subprocess.PIPE)
    nano = srv.p
    if not R.check(session_ready(nano), "session set up"):
        nano.kill()
        return
    os.kill(nano.pid, signal.SIGSTOP)
    try:
        said = srv.ask("exec 3")
        srv.p.stdin.close()
        pids = sorted(ran(said))
        deadline = time.monotonic() + TIMEOUT
        while pids and not zombie(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.01)  # the program exits while nanoprobe is stopped
        R.check(len(pids) == 2 and zombie(pids[0]), "parent and child ran and went", said)
    finally:
        os.kill(nano.pid, signal.SIGCONT)
    out = srv.buf.decode() + nano.stdout.read()
    err = nano.stderr.read()
    nano.wait(timeout=TIMEOUT)
    child = f"process {pids[-1]} " if len(pids) == 2 else "?"
    R.check(any(child in l and "does not follow the programs it runs" in l
                for l in untraced_lines(err)), "the child is said untraced", out + err)






@case
def a_fork_read_after_its_child_went_is_taken():
    """A forked child's agent joins, the child execs a program that cannot
    take the agent (-p), which ends, and is reaped, all while nanoprobe is
    stopped: the JOIN is read when the child's /proc is gone. It was
    refused then, and the exec's note behind it on the same connection
    lost: the program went unsaid."""
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    srv = Serve()
    try:
        proc, ready = attach(srv.pid)
        if not R.check(ready, "session set up"):
            proc.kill()
            return
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            execd = ran(srv.ask("exec-late 2"))
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        out, err = end(proc)
        pid = max(execd)
        R.check(any(f"process {pid} " in l for l in untraced_lines(err)),
                f"the program exec'd as {pid} said untraced", f"{out}\n{err}")
    finally:
        srv.close()


def attach(*pids, extra=()):
    args = [NANOPROBE, "run", "-e", PER_PID, *extra]
    for pid in pids:
        args += ["-p", str(pid)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, start_new_session=True)
    return proc, session_ready(proc)


def end(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    return out, err


@case
def a_running_process_and_its_children():
    """-p: forked children are followed; programs they exec cannot take the
    agent (no agent in their environment), and are said to be untraced."""
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    srv = Serve()
    try:
        proc, ready = attach(srv.pid)
        R.check(ready, "session set up")
        forked = ran(srv.ask("fork 3"))
        execd = ran(srv.ask("exec 2"))
        spawned = ran(srv.ask("spawn 2"))
        out, err = end(proc)
        child = max(forked)
        got = counted(out)
        R.eq(got.get(srv.pid), 3, "the process's own calls", f"{out}\n{err}")
        R.eq(got.get(child), 3, "its forked child's, under the child's pid", f"{out}\n{err}")
        lines = untraced_lines(err)
        for pid in (max(execd), max(spawned)):
            R.check(any(f"process {pid} " in l and "-p" in l for l in lines),
                    f"the program exec'd as {pid} said untraced", f"{out}\n{err}")
        R.eq(set(got) - {srv.pid, child}, set(), "nobody else", f"{out}\n{err}")
        after = ran(srv.ask("fork 2"))
        R.eq(len(after), 2, "the process goes on after the session")
    finally:
        srv.close()


@case
def several_running_processes_are_one_session():
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    a, b = Serve(), Serve()
    try:
        orig = site_bytes(a.pid)[1]
        proc, ready = attach(a.pid, b.pid)
        deadline = time.monotonic() + TIMEOUT  # the second agent joins after the first
        while ready and time.monotonic() < deadline and (site_bytes(a.pid)[0] == orig or
                                                          site_bytes(b.pid)[0] == orig):
            time.sleep(0.01)
        R.check(ready and site_bytes(b.pid)[0] != orig, "both processes probed")
        ra = ran(a.ask("fork 2"))
        rb = ran(b.ask("fork 4"))
        out, err = end(proc)
        R.eq(counted(out), {**ra, **rb}, "both processes and their children", out + err)
    finally:
        a.close()
        b.close()


def site_bytes(pid):
    """add_item's first bytes in pid's memory, and in the file."""
    out = subprocess.run(["nm", FORKER], capture_output=True, text=True).stdout
    vaddr = int(re.search(r"^([0-9a-f]+) T add_item$", out, re.M).group(1), 16)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 6 and cols[5] == FORKER and cols[2] == "00000000":
                base = int(cols[0].split("-")[0], 16)
                break
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(base + vaddr)
        now = m.read(5)
    with open(FORKER, "rb") as f:
        f.seek(vaddr)  # a PIE's text: file offset == vaddr for the first segments
        orig = f.read(5)
    return now, orig


@case
def a_child_that_outlives_the_session_gets_its_code_back():
    """-d ends the session while a forked child sleeps: the child's own agent
    thread removes its probes, as the parent's does."""
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    srv = Serve()
    try:
        proc, ready = attach(srv.pid, extra=("-d", "1"))
        R.check(ready, "session set up")
        child = int(re.search(r"child=(\d+)", srv.ask("linger 3")).group(1))
        now, orig = site_bytes(child)
        R.check(now != orig, "the child has the probe while the session runs")
        out, err = proc.communicate(timeout=TIMEOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and site_bytes(child)[0] != orig:
            time.sleep(0.01)
        R.eq(site_bytes(child)[0], orig, "and not after", f"{out}\n{err}")
    finally:
        srv.close()


def main():
    return run_cases(R, CASES, [NANOPROBE, FORKER], sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
