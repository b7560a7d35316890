#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""System calls of a traced program come back as they would have
(docs/reliability.md, "Signals that interrupt a sleep").

tests/cli/progs/sleepers.c waits in every kind of call of tests/blocked.h
(nanosleep, clock_nanosleep, epoll_wait, poll, select, futex,
sigtimedwait, sigwaitinfo, read, sigsuspend; with and without a timeout)
and reports how each came back. Around those waits:
  1. -p with a few probes, the main thread (the one the injection
     borrows) in each kind in turn;
  2. -p 'c:*', every kind waiting at once, then a second session with a
     few probes (the main thread's sleep is a restarted one by then);
  3. -- CMD with 'c:*', libm's probes placed by the agent when the
     program loads it while every kind waits, then -d ends the session.
In 2 and 3 the program also forks a child that loads libm: the agent's
dlopen hook then runs in a child, whose control thread is its parent's
(it must not wait for it: docs/reliability.md, "Children of a probed
process").
Every call must report "ok": nanosleep 0 with its remaining-time buffer
untouched, epoll_wait its one event, sigtimedwait EAGAIN, and so on.
Nothing here measures time; a call whose timeout ran out before the
session was over is still checked (it just was not disturbed).

Environment (meson sets it): NP_CLI, NP_PROG_SLEEPERS.
"""
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results  # noqa: E402
from session import clean_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("NP_BUILD_DIR", os.path.join(ROOT, "build"))
NANOPROBE = os.environ.get("NP_CLI") or os.path.join(BUILD, "tools/nanoprobe/nanoprobe")
SLEEPERS = os.environ.get("NP_PROG_SLEEPERS") or os.path.join(BUILD, "tests/cli/sleepers")
TIMEOUT = 120  # reaching it is a failure, never a measure

KINDS = ["nanosleep", "clock_nanosleep", "epoll_wait-timeout", "epoll_wait", "poll-timeout",
         "poll", "select-timeout", "select", "futex-timeout", "futex", "sigtimedwait",
         "sigwaitinfo", "read", "sigsuspend"]

ENV = clean_env()

R = Results()


class Program:
    """A process whose stdout lines are read on a thread."""

    def __init__(self, args):
        self.p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=ENV, start_new_session=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self, pred, timeout=TIMEOUT):
        """The next line pred accepts (lines before it are kept in seen)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                return None
            self.seen.append(line)
            if pred(line):
                return line
        return None

    def say(self, text):
        try:
            self.p.stdin.write(text + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def finish(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, 9)
            self.p.wait()
        while self.line(lambda _: False, timeout=1) is not None:
            pass
        return self.p.returncode, "".join(self.seen), self.p.stderr.read()


def sleepers(kind, secs, *more):
    prog = Program([SLEEPERS, kind, secs] + list(more))
    line = prog.line(lambda l: l.startswith("pid "))
    return prog, int(line.split()[1]) if line else None


def blocked(pid, tid):
    """Is the thread asleep in a system call?"""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            line = f.read()
    except OSError:
        return False
    return not line.startswith(("running", "-"))


def wait_all_blocked(pid):
    for _ in range(3000):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return False
        if tids and all(blocked(pid, t) for t in tids):
            return True
        time.sleep(0.01)
    return False


def agent_mapped(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libnanoprobe-agent" in f.read()
    except OSError:
        return False


def nanoprobe(*args):
    return subprocess.run([NANOPROBE] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=ENV, timeout=TIMEOUT)


def results(out):
    """{kind: "ok" or what differs} from the program's report."""
    got = {}
    for line in out.splitlines():
        if line.startswith("ok "):
            got[line[3:].strip()] = "ok"
        elif line.startswith("BAD "):
            kind, _, why = line[4:].partition(": ")
            got[kind] = why
    return got


def check_all(prog, label, kinds):
    rc, out, err = prog.finish()
    got = results(out)
    for kind in kinds:
        R.eq(got.get(kind), "ok", f"{label}: {kind} came back as it would have",
             f"program output:\n{out}\nstderr:\n{err}")
    R.eq(rc, 0, f"{label}: the program exits 0", err)


def injected_into_each_kind():
    R.case = "-p, main thread"
    progs = []
    for kind in KINDS:
        prog, pid = sleepers(kind, 5)
        if not R.check(pid and wait_all_blocked(pid), f"{kind}: waits"):
            progs.append((kind, prog, None))
            continue
        res = nanoprobe("count", "-p", pid, "-d", "0.3", "c:malloc", "c:free")
        R.eq(res.returncode, 0, f"{kind}: nanoprobe count -p exits 0",
             res.stdout[-2000:] + res.stderr[-2000:])
        progs.append((kind, prog, blocked(pid, pid)))
    waited = sum(1 for *_, b in progs if b)
    print(f"# {waited} of {len(progs)} main threads were still waiting when their session ended")
    for kind, prog, _ in progs:
        prog.say("release")
        check_all(prog, kind, [kind])


def injected_into_all_kinds():
    R.case = "-p 'c:*'"
    prog, pid = sleepers("nanosleep", 15, "threads")
    R.check(pid and wait_all_blocked(pid), "every thread waits")
    if pid:
        session = subprocess.Popen([NANOPROBE, "count", "-p", str(pid), "-d", "3", "c:*"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=ENV)
        for _ in range(1000):  # the agent is there (its socket name is in maps)
            if agent_mapped(pid):
                break
            time.sleep(0.01)
        prog.say("fork")
        child = prog.line(lambda l: l.startswith("child "))
        out, err = session.communicate(timeout=TIMEOUT)
        R.eq(session.returncode, 0, "nanoprobe count -p 'c:*' exits 0",
             out[-2000:] + err[-2000:])
        R.eq(child, "child 0\n", "a child that loads a library under the agent exits 0",
             "".join(prog.seen))
        # the main thread's sleep is a restarted one now
        res = nanoprobe("count", "-p", pid, "-d", "0.3", "c:malloc")
        R.eq(res.returncode, 0, "a second session exits 0", res.stderr[-2000:])
        still = sum(blocked(pid, t) for t in os.listdir(f"/proc/{pid}/task"))
        print(f"# {still} threads were still waiting after both sessions")
    prog.say("release")
    check_all(prog, "c:*", KINDS)


def preloaded():
    R.case = "-- CMD"
    prog = Program([NANOPROBE, "count", "-d", "4", "c:*", "libm.so.6:cos", "libm.so.6:sin",
                    "--", SLEEPERS, "nanosleep", 10, "threads"])
    line = prog.line(lambda l: l.startswith("pid "))
    pid = int(line.split()[1]) if line else None
    R.check(pid and wait_all_blocked(pid), "every thread waits")
    prog.say("dlopen")  # the agent places libm's probes around the waits
    R.check(prog.line(lambda l: l.startswith("dlopened")) == "dlopened ok\n",
            "libm is loaded and cos(0) is 1", "".join(prog.seen))
    prog.say("fork")
    R.eq(prog.line(lambda l: l.startswith("child ")), "child 0\n",
         "a child that loads a library under the agent exits 0", "".join(prog.seen))
    R.check(prog.line(lambda l: l.split()[:1] == ["libm.so.6:cos"]) is not None,
            "the session ends (-d 4) and counts libm's cos", "".join(prog.seen))
    prog.say("release")
    check_all(prog, "preloaded", KINDS)


def main():
    for case in (injected_into_each_kind, injected_into_all_kinds, preloaded):
        if len(sys.argv) > 1 and not any(a in case.__name__ for a in sys.argv[1:]):
            continue
        try:
            case()
        except Exception as e:  # a broken case is a failed check, not a crash
            R.check(False, f"{case.__name__} ran", repr(e))
    R.case = ""
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
