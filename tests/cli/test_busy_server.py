#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`nanoprobe count -p PID 'c:*'` on a busy server, again and again (issue 17,
item 10; docs/reliability.md): redis-server on loopback under redis-benchmark.

Each session must set up, run and end; the server must answer a PING while
the session's probes are in place and between sessions; a session killed or
interrupted while the agent places its probes must leave the server
attachable at once; at the end the server's threads must have the signal
masks they had but for the engine's signals, and it must shut down normally.

What broke here: a second session waited 2 s per site for jemalloc's
background threads, which block every signal, while redis served nothing;
the command gave up after 60 s and the agent kept the process busy for
hours; a thread that blocks SIGTRAP met a breakpoint and redis died.

redis-server and redis-benchmark come from the Debian packages redis-server
and redis-tools (the Makefile's DEB_PKGS); without them the test is skipped
(exit 77) with a message saying so. Output: TAP lines (tests/tap.py).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results  # noqa: E402
from session import clean_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
NANOPROBE = os.path.abspath(os.environ.get("NP_CLI") or
                            os.path.join(ROOT, "build/tools/nanoprobe/nanoprobe"))
TIMEOUT = 120  # for one step; reaching it is a failure, never a measure
SESSIONS = 4
ENV = clean_env()

R = Results()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(port, timeout=TIMEOUT):
    """PONG from the server within timeout (generous: a loaded machine)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"PING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(64)
                if not chunk:
                    break
                got += chunk
            return got == b"+PONG\r\n"
    except OSError:
        return False


def masks(pid):
    """{tid: SigBlk} of the process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                out[int(tid)] = re.search(r"^SigBlk:\s+(\w+)", f.read(), re.M).group(1)
        except (OSError, AttributeError):
            pass
    return out


ENGINE_SIGNALS = sum(1 << (sig - 1) for sig in (signal.SIGTRAP, signal.SIGSEGV, signal.SIGBUS,
                                               signal.SIGRTMAX - 3))


def masks_as_before(srv, before, unblocked, label):
    """Each thread's signal mask as it was, or without the signals in
    `unblocked`; a thread born since has a mask one of them had."""
    if srv.poll() is not None:
        R.check(False, f"{label}: the server runs")
        return
    had = {int(v, 16) for v in before.values()}
    allowed = had | {m & ~unblocked for m in had}

    def ok(tid, v):
        if tid not in before:
            return v in allowed
        b = int(before[tid], 16)
        return v in (b, b & ~unblocked)

    now = masks(srv.pid)
    wrong = {tid: v for tid, v in now.items() if not ok(tid, int(v, 16))}
    R.eq(wrong, {}, f"{label}: the threads' signal masks are as they were, but for the "
         "engine's signals", f"before: {before}\nnow: {now}")


def start_np(*args):
    return subprocess.Popen([NANOPROBE] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True)


def finish(p, sig=None):
    if sig is not None and p.poll() is None:
        p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\n[test: killed after {TIMEOUT} s]"
    return p.returncode, out, err


def maps_rings(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "nanoprobe-rings" in f.read()
    except OSError:
        return False


def wait_until(cond, proc, timeout=TIMEOUT):
    """cond() within timeout, while proc (the command) runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


def describe(rc, out, err):
    return f"status: {rc}\nstdout:\n{out[-2000:]}\nstderr:\n{err[-2000:]}"


def counted(out):
    """Total hits of count -j's table, and how many probes were placed."""
    import json
    for line in reversed(out.splitlines()):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "counts" in obj:
            rows = obj["counts"]
            return sum(r["count"] for r in rows), sum(bool(r.get("placed", True)) for r in rows)
    return 0, 0


def session(srv, port, label):
    """A whole session: set up, PING while attached, SIGINT, results."""
    proc = start_np("count", "-j", "-p", srv.pid, "c:*")
    ready = wait_until(lambda: maps_rings(proc.pid), proc)
    R.check(ready, f"{label}: the session sets up", describe(*finish(proc)) if not ready else "")
    if not ready:
        return
    R.check(ping(port) and proc.poll() is None, f"{label}: the server answers while traced")
    rc, out, err = finish(proc, signal.SIGINT)
    hits, placed = counted(out)
    R.eq(rc, 0, f"{label}: the session ends, status 0", describe(rc, out, err))
    R.check(placed > 1000 and hits > 0, f"{label}: thousands of probes placed, hits counted",
            f"placed {placed}, hits {hits}\n" + describe(rc, out, err))


def killed_while_placing(srv, port, label, sig):
    """The command ended by sig once the agent places its probes (its rings
    exist in the server, not yet in the command); a new session then."""
    proc = start_np("count", "-j", "-p", srv.pid, "c:*")
    placing = wait_until(lambda: maps_rings(srv.pid) or maps_rings(proc.pid), proc)
    R.check(placing, f"{label}: the agent starts placing probes")
    rc, out, err = finish(proc, sig)
    if sig == signal.SIGKILL:
        R.eq(rc, -signal.SIGKILL, f"{label}: the command was killed", describe(rc, out, err))
    else:  # interrupted in set-up, or after it if the set-up was quick
        R.check(rc == 1 and "interrupted while the agent placed the probes" in err and
                "removed those it had placed" in err or rc == 0,
                f"{label}: set-up interrupted, probes removed (or a session ended)",
                describe(rc, out, err))
    R.check(srv.poll() is None and ping(port), f"{label}: the server answers after")
    session(srv, port, f"{label}, then a new session")


def main():
    tools = {t: shutil.which(t) for t in ("redis-server", "redis-benchmark")}
    if not all(tools.values()):
        print("# SKIP: redis-server and redis-benchmark are not installed "
              "(Debian: apt-get install redis-server redis-tools; make deps does)")
        return 77
    if not os.path.exists(NANOPROBE):
        R.check(False, f"the command exists: {NANOPROBE}")
        return R.summary()
    port = free_port()
    srv = subprocess.Popen([tools["redis-server"], "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--daemonize", "no"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    bench = None
    try:
        deadline = time.monotonic() + TIMEOUT
        while not ping(port, timeout=1) and time.monotonic() < deadline and srv.poll() is None:
            time.sleep(0.05)
        R.check(ping(port), "redis-server answers")
        bench = subprocess.Popen([tools["redis-benchmark"], "-h", "127.0.0.1", "-p", str(port),
                                  "-c", "8", "-l", "-q", "-t", "set,get,incr,lpush,lpop"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        time.sleep(0.5)
        before = masks(srv.pid)
        for i in range(SESSIONS):
            session(srv, port, f"session {i + 1}")
            R.check(srv.poll() is None and ping(port), f"session {i + 1}: the server answers after")
        killed_while_placing(srv, port, "SIGINT while placing", signal.SIGINT)
        killed_while_placing(srv, port, "SIGKILL while placing", signal.SIGKILL)
        # Only the engine's signals may be left unblocked: by the killed
        # command, or in a thread of jemalloc's that saved its mask during
        # a session and set it again after (making a background thread
        # across a session's end). cli-e2e checks the masks exactly.
        masks_as_before(srv, before, ENGINE_SIGNALS, "after the sessions")
        R.check(bench.poll() is None, "redis-benchmark kept running")
    finally:
        if bench is not None and bench.poll() is None:
            bench.kill()
            bench.wait()
        if srv.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
                    s.sendall(b"SHUTDOWN NOSAVE\r\n")
            except OSError:
                pass
        try:
            rc = srv.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            srv.kill()
            rc = srv.wait()
        R.eq(rc, 0, "redis-server shuts down normally (not killed by a signal)")
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
