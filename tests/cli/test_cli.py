#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the nanoprobe command (trace, count, latency, list)
against the programs in tests/cli/progs/.

Every assertion is exact (counts, values, names, exit statuses, output
bytes); none depends on how fast anything runs. A program run under
nanoprobe is always compared with the same program run plainly.

Output: one `ok N - name` / `not ok N - name` line per check, details of a
failure on `# ` lines, and a last line `N passed, M failed` (read by
tools/test-summary.py). Exit status 1 if any check failed.

Paths come from the environment meson gives (tests/cli/meson.build); run
by hand, they default to the build tree in ROOT/build:
  NP_CLI            the nanoprobe command
  NP_CLI_AGENT      the agent (only checked for; the command finds it itself)
  NP_PROG_COUNTER, NP_PROG_COUNTER_NOPIE, NP_PROG_THREADS,
  NP_PROG_PLUGIN_HOST, NP_PROG_SERVER, NP_PLUGIN, NP_PROG_AGENT_HEAP
Arguments: names (substrings) of the cases to run; none: all of them.

"""
import functools
import json
import os
import queue
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results, run_cases  # noqa: E402
from session import clean_env, ptrace_allowed, session_ready  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("NP_BUILD_DIR", os.path.join(ROOT, "build"))


def _path(var, rel):
    return os.path.abspath(os.environ.get(var) or os.path.join(BUILD, rel))


NANOPROBE = _path("NP_CLI", "tools/nanoprobe/nanoprobe")
AGENT = _path("NP_CLI_AGENT", "src/agent/libnanoprobe-agent.so")
COUNTER = _path("NP_PROG_COUNTER", "tests/cli/counter")
COUNTER_NOPIE = _path("NP_PROG_COUNTER_NOPIE", "tests/cli/counter_nopie")
THREADS = _path("NP_PROG_THREADS", "tests/cli/threads")
PLUGIN_HOST = _path("NP_PROG_PLUGIN_HOST", "tests/cli/plugin_host")
SERVER = _path("NP_PROG_SERVER", "tests/cli/server")
SIGMASK = _path("NP_PROG_SIGMASK", "tests/cli/sigmask")
JUMPER = _path("NP_PROG_JUMPER", "tests/cli/jumper")
DEEP = _path("NP_PROG_DEEP", "tests/cli/deep")
UNPLACED_ONE_BY_ONE = 3  # session.c: more probes of one file take one line
PLUGIN = _path("NP_PLUGIN", "tests/cli/libplugin.so")
CART = os.environ.get("NP_PROG_CART", os.path.join(BUILD, "tests/cli/cart"))
AGENT_HEAP = os.environ.get("NP_PROG_AGENT_HEAP", os.path.join(BUILD, "tests/e2e/e2e-agent-heap"))
SESSION_FAULTS = _path("NP_SESSION_FAULTS", "tests/cli/session_faults")
DEAF_THREADS = _path("NP_PROG_DEAF_THREADS", "tests/cli/deaf_threads")
INJECT_TARGET = _path("NP_INJECT_TARGET", "tests/cli/inject_target")
if not os.path.exists(AGENT_HEAP):
    AGENT_HEAP = ""

TIMEOUT = 60  # for one command; reaching it is a failure, never a measure

# The environment every command runs in: no agent or preload from outside,
# and no debuginfod server asked for libc's debug file.
ENV = clean_env()

# --------------------------------------------------------------------------
# Results


R = Results()
# A sanitizer build: the programs' malloc is the sanitizer's.
SANITIZED = (any(rt in open(COUNTER, "rb").read() for rt in (b"libasan", b"libclang_rt.asan"))
             if os.path.exists(COUNTER) else False)
CLANG_ASAN = (b"libclang_rt.asan" in open(COUNTER, "rb").read()) if os.path.exists(COUNTER) else False

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def describe(p, extra=""):
    """A finished command, for failure details."""
    s = f"command: {' '.join(map(str, p.args))}\nstatus: {p.returncode}\n"
    s += f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    return s + ("\n" + extra if extra else "")


# --------------------------------------------------------------------------
# Processes. Every command gets a session of its own so that, should it hang,
# it and the program it started can be ended together by its group id.


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(args, timeout=TIMEOUT, env=None, input=None):
    p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE if input is not None
                         else subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env or ENV,
                         start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, err = p.communicate()
        err += f"\n[test: killed after {timeout} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def np(*args, **kw):
    return run([NANOPROBE] + list(args), **kw)


def start_np(*args):
    return subprocess.Popen([NANOPROBE] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, start_new_session=True)


def finish(p, sig=None, timeout=TIMEOUT):
    """Signal a started command (if sig), wait for it, return its results."""
    if sig is not None:
        try:
            p.send_signal(sig)
        except ProcessLookupError:
            pass
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, err = p.communicate()
        err += f"\n[test: killed after {timeout} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


class Server:
    """tests/cli/progs/server.c started plainly, with pipes: one line in, one
    answer out. `prefix`: a command that execs it (setpriv, to run it as
    another user)."""

    def __init__(self, prefix=(), prog=SERVER):
        self.p = subprocess.Popen(list(prefix) + [prog], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                                  start_new_session=True)
        self.pid = self.p.pid
        self.buf = b""
        self.out = b""  # everything it printed
        self.inputs = []
        first = self.readline()
        if first != "ready":
            self.kill()
            raise RuntimeError(f"server did not say ready: {first!r}")

    def readline(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.buf += chunk
            self.out += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def ask(self, v):
        self.inputs.append(v)
        try:
            self.p.stdin.write(f"{v}\n".encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            return None
        return self.readline()

    def close(self):
        """End of input: the server prints its totals and exits."""
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        fd = self.p.stdout.fileno()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], deadline - time.monotonic())[0]:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self.out += chunk
        try:
            rc = self.p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            rc = None
        self.p.stdout.close()
        self.p.stderr.close()
        return rc, self.out.decode()

    def alive(self):
        return self.p.poll() is None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def maps(self):
        with open(f"/proc/{self.pid}/maps") as f:
            return f.read()


def unprobed_server_output(inputs):
    p = run([SERVER], input="".join(f"{v}\n" for v in inputs))
    return p.stdout


def handle_answers(inputs):
    return [f"ok {i + 1}" for i in range(len(inputs))]


# --------------------------------------------------------------------------
# ELF files, read here rather than through nanoprobe: nm for symbols, the
# program headers for file offsets.


def nm(path):
    """name -> (address, size) of the defined symbols, as nm -S shows them."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms.setdefault(f[3], (int(f[0], 16), int(f[1], 16)))
        elif len(f) == 3:
            syms.setdefault(f[2], (int(f[0], 16), 0))
    return syms


def pt_loads(path):
    """[(offset, vaddr, filesz)] of the PT_LOAD program headers (ELF64 LE)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads = []
    for i in range(phnum):
        p_type, _flags, off, vaddr, _paddr, filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((off, vaddr, filesz))
    return loads


def vaddr_to_offset(path, vaddr):
    for off, va, filesz in pt_loads(path):
        if va <= vaddr < va + filesz:
            return vaddr - va + off
    raise ValueError(f"{vaddr:#x} is in no PT_LOAD of {path}")


def file_bytes(path, offset, n):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def runtime_addr(pid, path, vaddr):
    """Where vaddr of the file `path` is in process pid, from its maps."""
    off = vaddr_to_offset(path, vaddr)
    real = os.path.realpath(path)
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or os.path.realpath(fields[5]) != real:
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            moff = int(fields[2], 16)
            if moff <= off < moff + (hi - lo):
                return lo + off - moff
    raise ValueError(f"{path} is not mapped in {pid}")


def read_mem(pid, addr, n):
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr)
        return f.read(n)


class Site:
    """The first bytes of a function in a running process, against the file's:
    a probe there changes them, removing it puts them back."""

    def __init__(self, pid, path, func, n=8):
        vaddr = nm(path)[func][0]
        self.pid = pid
        self.addr = runtime_addr(pid, path, vaddr)
        self.orig = file_bytes(path, vaddr_to_offset(path, vaddr), n)

    def now(self):
        try:
            return read_mem(self.pid, self.addr, len(self.orig))
        except OSError:
            return None  # the process is gone

    def patched(self):
        return self.now() != self.orig

    def wait(self, patched, timeout=TIMEOUT, proc=None):
        """Until the site is (or is no longer) patched; False on timeout or
        when `proc` (the nanoprobe command) ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.patched() == patched:
                return True
            if proc is not None and proc.poll() is not None:
                return self.patched() == patched
            time.sleep(0.005)
        return False




def start_attached(site, *args):
    """Start `nanoprobe ARGS` (a -p session) and wait until its session is
    set up. Returns (process, whether it is and the site's code is patched)."""
    proc = start_np(*args)
    return proc, session_ready(proc) and site.patched()


def agent_mapped(maps):
    return "libnanoprobe-agent" in maps


# --------------------------------------------------------------------------
# Output of the commands

TEXT_EVENT = re.compile(
    r"^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d{3})\]\s+(?P<ts>\d+\.\d{6}): "
    r"(?P<group>[^:\s]+):(?P<event>[^:\s]+): "
    r"\((?P<addr>0x[0-9a-f]+)(?: <- (?P<func>0x[0-9a-f]+))?\)(?P<args>.*)$")
TEXT_ARG = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|\(fault\)|\S+)')


def parse_text_events(text):
    """The event lines of `trace`; any other line is returned apart."""
    events, other = [], []
    for line in text.splitlines():
        m = TEXT_EVENT.match(line)
        if not m:
            other.append(line)
            continue
        ev = m.groupdict()
        ev["tid"] = int(ev["tid"])
        ev["args"] = dict(TEXT_ARG.findall(ev["args"]))
        events.append(ev)
    return events, other


def parse_json_lines(text):
    """JSON objects of -j output; lines that are not JSON are returned apart."""
    objs, other = [], []
    for line in text.splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError:
            other.append(line)
    return objs, other


COUNT_ROW = re.compile(r"^(\S+)\s+(\d+)$")


def parse_count_table(text):
    """{func: count} from count's text table, and the lines outside it."""
    counts, other, in_table = {}, [], False
    for line in text.splitlines():
        if re.match(r"^FUNC\s+COUNT$", line):
            in_table = True
            continue
        m = COUNT_ROW.match(line) if in_table else None
        if m:
            counts[m.group(1)] = int(m.group(2))
        else:
            in_table = False
            other.append(line)
    return counts, other


def json_counts(text):
    """{func: count} from count -j (the last {"counts": ...} object)."""
    objs, other = parse_json_lines(text)
    tables = [o for o in objs if isinstance(o, dict) and "counts" in o]
    if not tables:
        return None, other
    return {row["func"]: row["count"] for row in tables[-1]["counts"]}, other


def program_lines(stderr):
    """What a program started with `-j` and no `-o` printed: its stdout goes
    to nanoprobe's stderr, so that nanoprobe's stdout holds JSON only."""
    return [l for l in stderr.splitlines() if not l.startswith("nanoprobe ")]


def trace_out(*args):
    """`nanoprobe trace -o FILE ARGS`: its results, the program's stdout
    alone in their stdout (the two would interleave on one pipe), and the
    text of FILE."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace.out")
        p = np("trace", "-o", out, *args)
        text = ""
        if os.path.exists(out):
            with open(out) as f:
                text = f.read()
    return p, text


def plain(args):
    p = run(args)
    assert p.returncode == 0, describe(p)
    return p.stdout


def s8(v):
    v &= 0xff
    return v - 256 if v >= 128 else v


# --------------------------------------------------------------------------
# 1. count: exact, and the program's output unchanged


@case
def count_exact():
    n = 1000
    want_out = plain([COUNTER, n])
    p = np("count", "work", "--", COUNTER, n)
    R.eq(p.returncode, 0, "count work -- counter exits 0", describe(p))
    counts, other = parse_count_table(p.stdout)
    R.eq(counts, {"work": n}, f"count of work is exactly {n}", describe(p))
    R.eq(other, want_out.splitlines(), "program's stdout is that of a plain run", describe(p))

    p = np("count", "-j", "work", "--", COUNTER, n)
    counts, other = json_counts(p.stdout)
    R.eq(counts, {"work": n}, f"count -j: work is exactly {n}", describe(p))
    R.eq(other, [], "count -j: JSON lines alone on stdout", describe(p))
    R.eq(program_lines(p.stderr), want_out.splitlines(),
         "count -j: the program's stdout, that of a plain run, went to stderr", describe(p))

    # trace -o: nanoprobe's output in a file, the program's alone on stdout
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "trace.txt")
        p = np("trace", "-o", out, "work", "--", COUNTER, 50)
        R.eq(p.returncode, 0, "trace -o exits 0", describe(p))
        R.eq(p.stdout, plain([COUNTER, 50]), "trace -o: stdout is exactly the plain run's")
        with open(out) as f:
            events, other = parse_text_events(f.read())
        R.eq(len(events), 50, "trace -o: the file holds one line per call", other)
        R.eq(other, [], "trace -o: nothing but event lines in the file")

    # probes are in place before main: main itself is counted
    p = np("count", "-j", "main", "work", "--", COUNTER, 3)
    counts, _ = json_counts(p.stdout)
    R.eq(counts, {"main": 1, "work": 3}, "a probe on main is hit: in place before main",
         describe(p))

    # -i: counts per interval; however the intervals fall, they add up
    p = np("count", "-j", "-i", "0.05", "work", "--", COUNTER, 200000)
    objs, _ = parse_json_lines(p.stdout)
    tables = [o for o in objs if isinstance(o, dict) and "counts" in o]
    R.check(tables, "count -i -j prints JSON tables", describe(p))
    R.eq(sum(r["count"] for t in tables for r in t["counts"] if r["func"] == "work"), 200000,
         "count -i: the intervals add up to the calls", describe(p))

    # the program found in $PATH, the spec naming it by its file name
    env = dict(ENV, PATH=os.path.dirname(COUNTER) + os.pathsep + ENV.get("PATH", ""))
    name = os.path.basename(COUNTER)
    p = np("count", "-j", f"{name}:work", "--", name, 7, env=env)
    counts, _ = json_counts(p.stdout)
    R.eq(counts, {"work": 7}, "program in $PATH, spec by its file name", describe(p))


@case
def an_agent_of_another_isa_goes_to_the_emulated_program():
    """NANOPROBE_AGENT built for another ISA: CMD is qemu-user, and the agent
    goes into the guest's LD_PRELOAD through QEMU_SET_ENV, never into the
    host loader's (which would print an error on the program's stderr).
    `env` stands in for qemu here: it shows the environment it was given."""
    foreign = "/usr/aarch64-linux-gnu/lib/libc.so.6"  # any aarch64 ELF
    if not os.path.exists(foreign):
        R.skip("an agent of another ISA", f"{foreign} is not installed")
        return
    env = dict(ENV, NANOPROBE_AGENT=foreign, LD_PRELOAD="")
    p = run([NANOPROBE, "count", "-o", "/dev/null", "c:malloc", "--", "/usr/bin/env"], env=env)
    lines = p.stdout.splitlines()
    R.check(f"QEMU_SET_ENV=LD_PRELOAD={foreign}" in lines,
            "a foreign agent is in QEMU_SET_ENV", describe(p))
    R.check(not [l for l in lines if l.startswith("LD_PRELOAD=") and l != "LD_PRELOAD="],
            "a foreign agent is not in the host's LD_PRELOAD", describe(p))
    R.check(any(l.startswith("NANOPROBE_AGENT_SOCK=") for l in lines),
            "the socket's variable is passed as usual", describe(p))
    R.check(p.returncode == 1 and "exited before the agent started" in p.stderr,
            "no agent connected: said so, exit 1", describe(p))


@case
def the_preloaded_agent_frees_no_block_of_the_program():
    """tests/e2e/agent_heap.c replaces malloc and counts blocks freed by a
    thread other than the one that allocated them; --at-main prints that
    count when main starts, after the preloaded agent's constructor has set
    its session up. The agent's thread must never free one of the
    program's blocks (it did: the socket name, strdup'ed by the
    constructor; docs/reliability.md, grep under qemu-aarch64)."""
    if not AGENT_HEAP:
        R.skip("the preloaded agent and the program's heap",
               "e2e-agent-heap is not built (sanitizer build)")
        return
    R.eq(plain([AGENT_HEAP, "--at-main"]), "foreign frees: 0\n", "a plain run frees nothing")
    p = np("count", "main", "--", AGENT_HEAP, "--at-main")
    R.eq(p.returncode, 0, "count main -- e2e-agent-heap exits 0", describe(p))
    counts, other = parse_count_table(p.stdout)
    R.eq(counts, {"main": 1}, "main counted once", describe(p))
    R.eq(other, ["foreign frees: 0"], "the agent freed no block of the program's thread",
         describe(p))


@case
def count_output_file_status_and_probe_names():
    n = 40
    want_out = plain([COUNTER, n])
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "counts.json")
        p = np("count", "-j", "-o", out, "work", "--", COUNTER, n)
        R.eq(p.stdout, want_out, "count -o: stdout is exactly the plain run's", describe(p))
        with open(out) as f:
            counts, other = json_counts(f.read())
        R.eq(counts, {"work": n}, "count -o: the file holds the counts", other)
        out = os.path.join(d, "hist.json")
        p = np("latency", "-j", "-o", out, "work", "--", COUNTER, n)
        R.eq(p.stdout, want_out, "latency -o: stdout is exactly the plain run's", describe(p))
        with open(out) as f:
            objs, _ = parse_json_lines(f.read())
        stats = [o["data"] for o in objs if isinstance(o, dict) and o.get("type") == "stats"]
        R.check(stats and stats[0]["count"] == n, "latency -o: the file holds the histogram",
                str(objs))
        p = np("count", "-o", os.path.join(d, "no/such/dir"), "work", "--", COUNTER, 1)
        R.check(p.returncode == 1 and "no/such/dir" in p.stderr and p.stdout == "",
                "count -o into a missing directory: refused before the program runs",
                describe(p))

    # the program's exit status is nanoprobe's, as with time and strace
    p = np("count", "-o", "/dev/null", "c:malloc", "--", "/bin/sh", "-c", "exit 7")
    R.eq(p.returncode, 7, "a program exiting 7: nanoprobe exits 7", describe(p))
    p = np("count", "-o", "/dev/null", "c:malloc", "--", "/bin/sh", "-c", "kill -9 $$")
    R.eq(p.returncode, 128 + 9, "a program killed by SIGKILL: 137", describe(p))

    # several probes on one function: told apart by offset and %return
    listing = np("list", "-j", COUNTER, "work")
    addrs = [int(json.loads(l)["addr"], 16) for l in listing.stdout.splitlines()
             if '"insn"' in l]
    R.check(len(addrs) >= 2, "list -j work: instructions", describe(listing))
    if len(addrs) >= 2:
        off = addrs[1] - addrs[0]
        p = np("count", "-j", "work", "work%return", f"work+{off}", "--", COUNTER, n)
        objs, _ = parse_json_lines(p.stdout)
        rows = [o for o in objs if isinstance(o, dict) and "counts" in o][-1:] or [{}]
        got = {r["probe"]: (r["count"], r["placed"], r["missed"])
               for r in rows[0].get("counts", [])}
        R.eq(got, {"work": (n, True, 0), "work%return": (n, True, 0),
                   f"work+0x{off:x}": (n, True, 0)},
             "count -j: 'probe' names each probe; placed; nothing missed", describe(p))

    # %return counts returns, not calls: exit() is called and never returns
    # (it was counted at the entry, so that the differential runs' "every
    # return" placed no return probe at all)
    p = np("count", "-j", "c:exit", "c:exit%return", "--", COUNTER, "1")
    objs, _ = parse_json_lines(p.stdout)
    rows = [o for o in objs if isinstance(o, dict) and "counts" in o][-1:] or [{}]
    got = {r["probe"]: (r["count"], r["placed"]) for r in rows[0].get("counts", [])}
    R.eq(got, {"exit": (1, True), "exit%return": (0, True)},
         "count 'f%return' counts returns: exit() returns none", describe(p))


@case
def misses_reported_while_running():
    # A program killed by SIGKILL never reaches the agent's exit report: the
    # command knows of the returns it missed (recursion deeper than the
    # return-probe stack) only from the agent's periodic report, which sums
    # the probes' counts only when some miss was counted since the last.
    depth, limit = 20000, 16384
    p = np("count", "-j", "descend", "descend%return", "--", DEEP, depth)
    objs, _ = parse_json_lines(p.stdout)
    rows = [o for o in objs if isinstance(o, dict) and "counts" in o][-1:] or [{}]
    got = {r["probe"]: (r["count"], r["missed"]) for r in rows[0].get("counts", [])}
    R.eq(p.returncode, 128 + 9, "deep: killed by SIGKILL, 137", describe(p))
    R.eq(got, {"descend": (depth + 1, 0), "descend%return": (limit, depth + 1 - limit)},
         "deep: the returns beyond the stack are missed, per probe, before the kill",
         describe(p))
    R.check(f"{depth + 1 - limit} return events not recorded" in p.stderr,
            "deep: the missed returns are said, with their reason", describe(p))


@case
def trap_on_every_libc_function():
    # Every libc function under a breakpoint: the agent's own thread is
    # made before any is placed (pthread_create blocks SIGTRAP around
    # clone3), the hit path calls no libc (__errno_location under a
    # breakpoint sent the SIGTRAP handler into itself), and the signal
    # return trampoline is never offered.
    if CLANG_ASAN:
        R.skip("count --strategy trap 'c:*'", "clang's ASan runtime calls libc's memset and "
               "memcpy for its shadow memory: under breakpoints, set-up outlasts its timeout")
        return
    p = np("count", "--strategy", "trap", "-j", "-o", "/dev/null", "c:*", "--", COUNTER, 3)
    R.eq(p.returncode, 0, "count --strategy trap 'c:*': the program exits 0", describe(p))
    R.eq(p.stdout, plain([COUNTER, 3]), "count --strategy trap 'c:*': same stdout")
    R.check("not recorded" not in p.stderr, "no hit missed", describe(p))
    # libc names __restore_rt only in its debug file (libc6-dbg)
    if '"__restore_rt"' not in np("list", "-j", "c").stdout:
        R.skip("c:__restore_rt is refused", "libc's debug symbols are not installed")
        return
    p = np("count", "c:__restore_rt", "--", COUNTER, 1)
    R.check(p.returncode == 1 and "signal return trampoline" in p.stderr,
            "c:__restore_rt is refused with its reason", describe(p))


# --------------------------------------------------------------------------
# 2. wildcards and libraries


@case
def count_wildcard_and_libc():
    p = np("count", "-j", "greet*", "--", COUNTER, 5)
    counts, _ = json_counts(p.stdout)
    R.eq(counts, {"greet": 3, "greet_ptr": 1}, "'greet*' matches greet=3, greet_ptr=1",
         describe(p))
    p = np("count", "greet*", "--", COUNTER, 5)
    counts, _ = parse_count_table(p.stdout)
    R.eq(counts, {"greet": 3, "greet_ptr": 1}, "the same in the text table", describe(p))

    p = np("count", "-j", "c:malloc", "--", COUNTER, 5)
    R.eq(p.returncode, 0, "count -j c:malloc exits 0", describe(p))
    objs, other = parse_json_lines(p.stdout)
    R.check(len(objs) == 1 and isinstance(objs[0], dict) and "counts" in objs[0],
            "count -j prints one JSON object", describe(p))
    row = objs[0]["counts"][0] if objs and objs[0].get("counts") else {}
    # an ASan build's malloc is the sanitizer's, not libc's: only the row
    R.check(row.get("func") == "malloc" and isinstance(row.get("count"), int)
            and (row["count"] > 0 or SANITIZED), "c:malloc counted (> 0)", describe(p))
    R.check(str(row.get("path", "")).startswith("/") and "libc" in row.get("path", ""),
            "the row names libc by its full path", describe(p))
    R.check(re.fullmatch(r"0x[0-9a-f]+", str(row.get("addr", ""))) is not None,
            "the row has the address as a hex string", describe(p))
    libc_path = row.get("path")
    for short in ("libc", "libc.so.6"):
        q = np("count", "-j", f"{short}:malloc", "--", COUNTER, 5)
        objs, _ = parse_json_lines(q.stdout)
        got = objs[0]["counts"][0]["path"] if objs and objs[0].get("counts") else None
        R.eq(got, libc_path, f"'{short}:malloc' is the same file as 'c:malloc'", describe(q))

    # The agent's own calls to malloc while it places the probes (in the
    # program's main thread, before main) are not the program's: counter
    # calls malloc once from main on (stdout's buffer). gdb measures the
    # plain run.
    want = None if SANITIZED else gdb_mallocs_from_main([COUNTER, 5])
    if want is None:
        R.skip("c:malloc counts only the program's own calls",
               "sanitizer build" if SANITIZED else "gdb unavailable")
    else:
        R.eq(row.get("count"), want,
             "c:malloc counts only the program's own calls (as gdb counts from main)",
             describe(p))

    # libc's functions have versioned names (pthread_create@@GLIBC_2.34):
    # the plain name is what perf probe, bpftrace and uprobe users write.
    # threads 3 1 creates exactly 3 threads.
    p = np("count", "-j", "c:pthread_create", "--", THREADS, 3, 1)
    counts, _ = json_counts(p.stdout)
    # A symbol versioned @@ (pthread_create@@GLIBC_2.34) is found by its
    # plain name.
    R.eq(sum((counts or {}).values()), 3,
         "c:pthread_create (default-versioned symbol) by its plain name counts 3",
         describe(p))
    p = np("count", "-j", "c:pthread_create*", "--", THREADS, 3, 1)
    counts, _ = json_counts(p.stdout)
    # The agent's own pthread_create (its session thread, started in its
    # constructor once the probes are placed) is not counted.
    R.eq(sum((counts or {}).values()), 3,
         "'c:pthread_create*' counts only the program's 3 threads, not the agent's",
         describe(p))


def inside_an_instruction(path, func):
    """An offset into func that is not an instruction boundary."""
    out = subprocess.run(["objdump", "-d", f"--disassemble={func}", str(path)],
                         capture_output=True, text=True).stdout
    starts = [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\t", out, re.M)]
    for a, b in zip(starts, starts[1:]):
        if b - a > 1:
            return a + 1 - starts[0]
    return 1


def last_instruction(path, func):
    """The offset of func's last instruction (a jump cannot fit there)."""
    out = subprocess.run(["objdump", "-d", f"--disassemble={func}", str(path)],
                         capture_output=True, text=True).stdout
    starts = [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\t", out, re.M)]
    return starts[-1] - starts[0] if starts else 0


def jump_too_long(path, func):
    """An offset in func where `list` says a jump does not fit (the code
    layout is the compiler's: ask the planner), or None."""
    p = np("list", path, func)
    rows = [l.split() for l in p.stdout.splitlines()[2:]]
    addrs = [int(r[0], 16) for r in rows if r and re.fullmatch(r"[0-9a-f]+", r[0])]
    for line, r in zip(p.stdout.splitlines()[2:], rows):
        if "before the 5 bytes a jump needs" in line and addrs:
            return int(r[0], 16) - addrs[0]
    return None


def gdb_mallocs_from_main(cmd):
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    script = ("set pagination off\nset confirm off\nbreak main\n"
              f"run {' '.join(map(str, cmd[1:]))} > /dev/null\n"
              "set $n = 0\nbreak malloc\ncommands\nsilent\nset $n = $n + 1\ncontinue\nend\n"
              "continue\nprintf \"MALLOCS %d\\n\", $n\n")
    with tempfile.NamedTemporaryFile("w", suffix=".gdb") as f:
        f.write(script)
        f.flush()
        p = run([gdb, "-q", "-nx", "-batch", "-x", f.name, cmd[0]])
    m = re.search(r"^MALLOCS (\d+)$", p.stdout, re.M)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------
# 3. trace: values of every kind, names, formats


def greet_expect():
    names = ["ada", "grace", "linus"]
    return [(nm_, i + 1, sum(map(ord, nm_)) * (i + 1)) for i, nm_ in enumerate(names)]


@case
def trace_values_text():
    n = 44  # work(43) = 130: -126 as s8
    syms = nm(COUNTER)
    specs = [
        "counter:greet name=+0(%di):string times=%si:s32 $arg2:u32 %si:x16 "
        "tail=+1($arg1):string c=+0(%di):u8 pre=-2(%di):x16 p=%di:x64",
        "r counter:greet $retval:s32",
        "counter:greet_ptr s=+0($arg1):string p=%di:x64 n=+0(%di):u64",
        "p:grp/ev counter:work i=$arg1:s64 ra=$stack0:x64 sp=$stack",
        "r:myret counter:work%return rv=$retval:s8 u=$retval:u8 x=%ax:x8 w=$retval:u64",
    ]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.txt")
        p = np("trace", "-o", out, *specs, "--", COUNTER, n)
        with open(out) as f:
            text = f.read()
    R.eq(p.returncode, 0, "trace exits 0", describe(p))
    R.eq(p.stdout, plain([COUNTER, n]),
         "the program completes normally, its stdout that of a plain run "
         "(greet_ptr's bad pointer did not crash it)", describe(p))
    events, other = parse_text_events(text)
    R.eq(other, [], "every line is an event line: TASK-TID [CPU] TS: GRP:EVENT: (0x..) ...",
         text[:2000])
    tids = {e["tid"] for e in events}
    R.check(len(tids) == 1 and all(e["task"] == "counter" for e in events),
            "one task, named counter", text[:1000])

    greets = [e for e in events if (e["group"], e["event"]) == ("probe_counter", "greet")]
    rets = [e for e in events if (e["group"], e["event"]) == ("probe_counter", "greet__return")]
    R.eq(len(greets), 3, "default names: probe_counter:greet, three hits", text[:2000])
    R.eq(len(rets), 3, "default names: probe_counter:greet__return, three hits")
    want = greet_expect()
    R.eq([e["args"].get("name") for e in greets], [f'"{w[0]}"' for w in want],
         "string fetch +0(%di):string")
    R.eq([e["args"].get("tail") for e in greets], [f'"{w[0][1:]}"' for w in want],
         "string at an offset +1($arg1):string")
    R.eq([e["args"].get("times") for e in greets], [str(w[1]) for w in want], "%si:s32")
    R.eq([e["args"].get("arg3") for e in greets], [str(w[1]) for w in want],
         "unnamed $arg2:u32 is named arg3 (its position)")
    R.eq([e["args"].get("arg4") for e in greets], [hex(w[1]) for w in want],
         "unnamed %si:x16 is named arg4, printed in hex")
    R.eq([e["args"].get("c") for e in greets], [str(ord(w[0][0])) for w in want],
         "+0(%di):u8 is the first character")
    # -2(%di): the two bytes before the name, whatever .rodata has there:
    # read them from the file, at the name's address less the load bias
    bias = int(greets[0]["addr"], 16) - syms["greet"][0] if greets else 0
    pre_want = []
    for e in greets:
        at = vaddr_to_offset(COUNTER, int(e["args"].get("p", "0x0"), 16) - bias)
        pre_want.append(hex(struct.unpack("<H", file_bytes(COUNTER, at - 2, 2))[0]))
    R.eq([e["args"].get("pre") for e in greets], pre_want,
         "negative offset -2(%di):x16 (bytes before the string, as in the file)")
    R.eq([e["args"].get("arg1") for e in rets], [str(w[2]) for w in want],
         "$retval:s32 of greet (sum of the name's bytes times `times`)")

    base = bias
    R.check(greets and base % 4096 == 0, "entry address is the load bias + greet's nm address",
            greets[:1])
    R.check(all(e["func"] == greets[0]["addr"] for e in rets) and rets,
            "return line (0xRET <- 0xFUNC): FUNC is greet's entry", rets[:1])
    main_lo = base + syms["main"][0]
    R.check(rets and all(main_lo <= int(e["addr"], 16) < main_lo + syms["main"][1] for e in rets),
            "return line: RET is inside main", rets)

    gp = [e for e in events if e["event"] == "greet_ptr"]
    R.eq([(e["args"].get("s"), e["args"].get("p"), e["args"].get("n")) for e in gp],
         [("(fault)", "0x10", "(fault)")], "bad pointer: (fault), the pointer itself 0x10")

    works = [e for e in events if (e["group"], e["event"]) == ("grp", "ev")]
    R.eq([e["args"].get("i") for e in works], [str(i) for i in range(n)],
         "explicit p:grp/ev names the event; $arg1:s64 is i")
    wrets = [e for e in events if (e["group"], e["event"]) == ("probe_counter", "myret")]
    R.eq(len(wrets), n, "r:myret ...%return: default group, explicit event")
    R.eq([e["args"].get("rv") for e in wrets], [str(s8(3 * i + 1)) for i in range(n)],
         "$retval:s8 sign-extends (work(43) = 130 -> -126)")
    R.eq([e["args"].get("u") for e in wrets], [str((3 * i + 1) & 0xff) for i in range(n)],
         "$retval:u8")
    R.eq([e["args"].get("x") for e in wrets], [hex((3 * i + 1) & 0xff) for i in range(n)],
         "%ax:x8 at the return")
    R.eq([e["args"].get("w") for e in wrets], [str(3 * i + 1) for i in range(n)],
         "$retval:u64")
    R.eq([e["args"].get("ra") for e in works], [e["addr"] for e in wrets],
         "$stack0 at entry is the return address the return probe reports")
    sps = {e["args"].get("sp") for e in works}
    R.check(len(sps) == 1 and re.fullmatch(r"0x[0-9a-f]+", sps.pop() or ""),
            "$stack is one hex stack address for every call from the same loop")
    R.check(works and all(e["addr"] == hex(base + syms["work"][0]) for e in works),
            "work's probe address is its nm address plus the bias")


@case
def trace_values_json():
    p, out = trace_out("-j",
                       "counter:greet name=+0(%di):string t=%si:s32 x=%si:x32 u=%si:u8",
                       "r counter:greet $retval:s32",
                       "counter:greet_ptr s=+0($arg1):string", "--", COUNTER, 1)
    R.eq(p.returncode, 0, "trace -j exits 0", describe(p))
    R.eq(p.stdout, plain([COUNTER, 1]), "the program's output unchanged", describe(p))
    objs, other = parse_json_lines(out)
    R.eq(other, [], "every line is a JSON object", out)
    R.eq(len(objs), 7, "seven events (3 greet, 3 returns, 1 greet_ptr)", describe(p, out[:3000]))
    keys_entry = {"type", "task", "pid", "tid", "cpu", "ts", "group", "event", "addr", "args",
                  "clock"}
    keys_ret = {"type", "task", "pid", "tid", "cpu", "ts", "group", "event", "ret", "func",
                "args", "clock"}
    for o in objs:
        want = keys_ret if o.get("event", "").endswith("__return") else keys_entry
        if not R.eq(set(o), want, f"fields of {o.get('event')}"):
            break
    want = greet_expect()
    greets = [o for o in objs if o.get("event") == "greet"]
    R.eq([o["args"] for o in greets],
         [{"name": w[0], "t": w[1], "x": hex(w[1]), "u": w[1]} for w in want],
         "args: string as a JSON string, s/u as numbers, x as \"0x..\" strings")
    R.eq([o["args"] for o in objs if o.get("event") == "greet__return"],
         [{"arg1": w[2]} for w in want], "$retval in JSON")
    R.eq([o["args"] for o in objs if o.get("event") == "greet_ptr"], [{"s": None}],
         "a fault is null in JSON")
    R.check(all(o["group"] == "probe_counter" and o["task"] == "counter"
                and o["pid"] == o["tid"] and isinstance(o["cpu"], int)
                and isinstance(o["ts"], (int, float)) for o in objs),
            "group, task, pid == tid, numeric cpu and ts")
    R.check(all(o["func"] == greets[0]["addr"] for o in objs if "func" in o),
            "a return's func is the entry's addr")
    R.check(all(re.fullmatch(r"0x[0-9a-f]+", o.get("addr", o.get("ret", ""))) for o in objs),
            "addresses are hex strings")


@case
def trace_file_offset():
    n = 9
    for path in (COUNTER, COUNTER_NOPIE):
        name = os.path.basename(path)
        if not os.path.exists(path):
            R.skip(f"{name}:0xOFFSET", "not built")
            continue
        vaddr = nm(path)["work"][0]
        off = vaddr_to_offset(path, vaddr)
        if path == COUNTER_NOPIE:
            R.check(off != vaddr, f"{name}: work's file offset differs from its address "
                    f"(the test means something)", f"{off:#x} {vaddr:#x}")
        p, out = trace_out("-j", f"p:a/byoff {name}:{off:#x} v=%di:s64",
                           f"p:a/bysym {name}:work v=%di:s64", "--", path, n)
        objs, _ = parse_json_lines(out)
        byoff = [o for o in objs if o.get("event") == "byoff"]
        bysym = [o for o in objs if o.get("event") == "bysym"]
        R.eq(len(byoff), n, f"{name}:{off:#x} hits work {n} times", describe(p, out[:3000]))
        R.eq([(o["addr"], o["args"]) for o in byoff], [(o["addr"], o["args"]) for o in bysym],
             f"{name}:{off:#x} is the same site as {name}:work")
        p = np("count", "-j", f"{name}:{off:#x}", "--", path, n)
        counts, _ = json_counts(p.stdout)
        R.eq(counts, {"work": n}, f"count {name}:{off:#x} names the function work", describe(p))


@case
def trace_memory_fetches():
    """@SYMBOL (a static variable, a pointer to itself) and @ADDR (a fault) on
    threads, one thread. (@ADDR that reads: attach_trace_args.)"""
    syms = nm(THREADS)
    p, out = trace_out("-j", "threads:tick v=%di:s64 pt=@per_thread:s64 "
                       "dso=@__dso_handle:x64 bad=@0x10:u64", "--", THREADS, 1, 3)
    R.eq(p.returncode, 0, "trace exits 0", describe(p))
    objs, _ = parse_json_lines(out)
    R.eq(len(objs), 3, "three calls", describe(p, out[:3000]))
    R.eq([o["args"]["v"] for o in objs], [0, 1, 2], "%di")
    R.eq([o["args"]["pt"] for o in objs], [3] * 3, "@per_thread (a static variable) is 3")
    if objs:
        bias = int(objs[0]["addr"], 16) - syms["tick"][0]
        R.eq(objs[0]["args"]["dso"], hex(bias + syms["__dso_handle"][0]),
             "@__dso_handle holds its own run-time address")
    R.eq([o["args"]["bad"] for o in objs], [None] * 3, "@0x10 is a fault (null)")


# --------------------------------------------------------------------------
# 4. threads


@case
def threads_exact():
    nthreads, m = 8, 2000
    want_out = plain([THREADS, nthreads, m])
    p = np("count", "-j", "tick", "--", THREADS, nthreads, m)
    counts, other = json_counts(p.stdout)
    R.eq(counts, {"tick": nthreads * m}, f"count tick over {nthreads} threads is {nthreads * m}",
         describe(p))
    R.eq(program_lines(p.stderr), want_out.splitlines(), "threads' output unchanged")

    m = 200
    p, out = trace_out("-j", "tick v=%di:s64", "--", THREADS, nthreads, m)
    objs, other = parse_json_lines(out)
    R.eq(p.returncode, 0, "trace -j exits 0", describe(p))
    R.eq(p.stdout, plain([THREADS, nthreads, m]), "threads' output unchanged")
    R.eq(other, [], "JSON lines only", out[:2000])
    R.check("lost" not in p.stderr, "no events lost", p.stderr)
    per = {}
    for o in objs:
        per.setdefault(o["tid"], []).append(o["args"]["v"])
    R.eq(len(per), nthreads, f"events from {nthreads} distinct threads", sorted(per))
    R.eq(sorted(len(v) for v in per.values()), [m] * nthreads, f"{m} events per thread")
    pid = {o["pid"] for o in objs}
    R.check(len(pid) == 1 and not (pid & set(per)), "the main thread makes no call", pid)
    # thread k calls tick(i + k) for i in 0..m-1, in order
    firsts = sorted(v[0] for v in per.values())
    R.eq(firsts, list(range(nthreads)), "each thread's first argument is its index")
    R.check(all(v == list(range(v[0], v[0] + m)) for v in per.values()),
            "each thread's events are in its call order")

    # a tiny ring: whatever is lost is reported, and nothing is invented
    m = 5000
    p, out = trace_out("-j", "--buffer-kb", "4", "tick", "--", THREADS, nthreads, m)
    objs, _ = parse_json_lines(out)
    lost = re.search(r"(\d+) events lost to full buffers \(--buffer-kb\), (\d+) hits of "
                     r"threads that found every buffer taken", p.stderr)
    if lost:
        dropped, no_ring = map(int, lost.groups())
        R.eq(len(objs) + dropped + no_ring, nthreads * m,
             "--buffer-kb 4: printed + lost = calls", p.stderr)
        R.check("corrupt" not in p.stderr, "--buffer-kb 4: no corrupt record", p.stderr)
    else:
        R.eq(len(objs), nthreads * m, "--buffer-kb 4: nothing lost, so every call printed",
             p.stderr)


# --------------------------------------------------------------------------
# 5. a library loaded with dlopen after the probes were asked for


@case
def dlopen_plugin():
    n = 77
    want_out = plain([PLUGIN_HOST, PLUGIN, n])
    p = np("count", f"{PLUGIN}:plugin_fn", "--", PLUGIN_HOST, PLUGIN, n)
    counts, other = parse_count_table(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"plugin_fn": n}, f"plugin_fn counted exactly {n} times", describe(p))
    R.eq(other, want_out.splitlines(), "plugin_host's output unchanged")

    p, out = trace_out("-j", f"{PLUGIN}:plugin_fn x=%di:s32",
                       f"r {PLUGIN}:plugin_fn $retval:s32", "--", PLUGIN_HOST, PLUGIN, 4)
    objs, _ = parse_json_lines(out)
    R.eq([o["args"] for o in objs],
         [a for x in range(4) for a in ({"x": x}, {"arg1": 7 * x + 3})],
         "arguments and return values in the plugin", describe(p, out[:3000]))
    R.check(all(o["group"] == "probe_libplugin" for o in objs), "group probe_libplugin")


@case
def stub_library_names():
    # glibc 2.34 moved libpthread's functions into libc: pthread:NAME still
    # finds them, through what libpthread needs, as the loader would
    p = np("count", "-j", "pthread:pthread_create", "--", THREADS, 3, 1)
    counts, _ = json_counts(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"pthread_create": 3}, "pthread:pthread_create counts the 3 threads",
         describe(p))
    p = np("count", "pthread:no_such_function", "--", THREADS, 1, 1)
    R.eq(p.returncode, 1, "an unknown name still fails", describe(p))
    R.check("unknown symbol 'no_such_function'" in p.stderr, "and says so", describe(p))


@case
def cxx_names():
    if not CART or not os.path.exists(CART):
        R.skip("C++ names", "no C++ compiler: no cart program")
        return
    # a C++ name without its parameters names every overload; the rows
    # show the whole signature, as nm -C does
    p = np("count", "-j", "shop::Cart::price", "--", CART)
    counts, other = json_counts(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"shop::Cart::price(char const*, int)": 10, "shop::Cart::price(int)": 10},
         "both overloads, by their demangled signatures", describe(p))
    R.eq(program_lines(p.stderr), plain([CART]).splitlines(), "cart's output unchanged")
    p = np("count", "-j", f"{CART}:shop::*", "--", CART)
    counts, _ = json_counts(p.stdout)
    R.eq(sorted((counts or {}).values()), [10, 10], "PATH:shop::* (the path ends at the lone ':')",
         describe(p))
    p, out = trace_out("shop::Cart::price(int) c=%si:s32", "--", CART)
    events, _ = parse_text_events(out)
    R.eq([e["group"] + ":" + e["event"] for e in events][:1], ["probe_cart:shop__Cart__price"],
         "an event name is one word", out[:500])
    R.eq([e["args"].get("c") for e in events], [str(i) for i in range(10)],
         "one overload by its signature, with its argument", out[:500])


@case
def libc_wide_patterns():
    # hundreds of libc functions at once, among them syscall (which the
    # engine itself must not call before a thread has its state), the
    # string functions that jump into each other's middle, and the ones
    # the agent calls while it places probes: the program runs unchanged
    for pattern in (["c:s*", "c:__mem*", "c:__str*"], ["c:*"]):
        p = np("count", "-j", *pattern, "--", COUNTER, 50)
        counts, other = json_counts(p.stdout)
        label = " ".join(pattern)
        R.eq(p.returncode, 0, f"{label}: exits 0", describe(p))
        R.eq(program_lines(p.stderr), plain([COUNTER, 50]).splitlines(),
             f"{label}: counter's output unchanged", describe(p))
        R.check(counts is not None and len(counts) > 100, f"{label}: many functions counted",
                describe(p))
    # entries and returns of every libc function (the PLT, which has unwind
    # info but pushes an index the loader reads off the stack, is no
    # function; setjmp and vfork return twice: refused)
    p = np("latency", "-j", "c:*", "--", COUNTER, 50)
    objs, other = parse_json_lines(p.stdout)
    R.eq(p.returncode, 0, "latency c:*: exits 0", describe(p))
    R.eq(program_lines(p.stderr), plain([COUNTER, 50]).splitlines(),
         "latency c:*: counter's output unchanged", describe(p))
    stats = [o["data"] for o in objs if o.get("type") == "stats"]
    R.check(len(stats) > 100 and sum(st["count"] for st in stats) > 50,
            "latency c:*: calls timed, a histogram per function", describe(p))
    R.check("returns twice" in p.stderr, "latency c:*: setjmp's return refused, with why",
            describe(p))


@case
def latency_leaves_the_entry_point_alone():
    # The kernel enters _start with argc where a return address would be:
    # a return probe there (latency times every call to its return) made
    # argc a trampoline's address before main read it (the corpus's
    # sqlite3 asserted argc >= 1; counter ran with its default n).
    p = np("latency", f"{COUNTER}:_start", "--", COUNTER, 5)
    R.check(p.returncode != 0 and "no return address" in p.stderr,
            "latency _start: refused by name, with why", describe(p))
    p = np("latency", "-j", f"{COUNTER}:*", "--", COUNTER, 5)
    objs, other = parse_json_lines(p.stdout)
    R.eq(p.returncode, 0, "latency PROG:*: exits 0", describe(p))
    R.eq(other, [], "latency PROG:*: JSON lines only on stdout", describe(p))
    # with -j and no -o, the program's stdout is nanoprobe's stderr
    R.eq(program_lines(p.stderr), plain([COUNTER, 5]).splitlines(),
         "latency PROG:*: argc and output unchanged", describe(p))


@case
def dlclose_rounds():
    # the plugin is unloaded and loaded again: its probe follows it
    n, rounds = 10, 5
    want_out = plain([PLUGIN_HOST, PLUGIN, n, rounds])
    p = np("count", f"{PLUGIN}:plugin_fn", "--", PLUGIN_HOST, PLUGIN, n, rounds)
    counts, other = parse_count_table(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"plugin_fn": n * rounds}, f"plugin_fn counted in all {rounds} loads",
         describe(p))
    R.eq(other, want_out.splitlines(), "plugin_host's output unchanged")


@case
def never_loaded_is_reported():
    # counter never loads the plugin: the probe waits, and says so at the end
    p = np("count", "work", f"{PLUGIN}:plugin_fn", "--", COUNTER, 7)
    counts, _ = parse_count_table(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"counter:work": 7}, "work counted (two files: labelled with theirs)",
         describe(p))
    R.check("was never placed" in p.stderr and "libplugin" in p.stderr,
            "the waiting probe is reported as never placed", describe(p))
    # a wildcard over a library nothing loaded: one line, with the count
    # and the first three probes, not a line per function
    p = np("count", "-o", "/dev/null", "work", f"{PLUGIN}:*", "--", COUNTER, 7)
    m = re.search(r"Tracing (\d+) functions", p.stderr)
    lines = [l for l in p.stderr.splitlines() if "never placed" in l]
    n = int(m.group(1)) - 1 if m else -1  # all but work
    R.check(n > UNPLACED_ONE_BY_ONE and len(lines) == 1 and
            re.search(rf"^nanoprobe count: {n} probes were never placed \(probe_libplugin:"
                      rf"[^ ]+, probe_libplugin:[^ ]+, probe_libplugin:[^ ]+, and {n - 3} more\): "
                      rf"no traced process loaded .*libplugin", lines[0]) is not None,
            f"{PLUGIN}:* never loaded: one line for its {n} probes", describe(p))


@case
def exec_is_followed():
    # a wrapper that execs the program (as pyenv's shims do): the probes
    # follow the process into its new image; a child it starts is traced
    # too, unless --no-follow, which says what it left out
    p = np("count", f"{COUNTER}:work", "--", "sh", "-c", f'exec "{COUNTER}" 9')
    counts, other = parse_count_table(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"work": 9}, "work counted in the exec'd image", describe(p))
    R.eq(other, plain([COUNTER, 9]).splitlines(), "the program's output unchanged")
    p = np("count", f"{COUNTER}:work", "--", "sh", "-c", f'"{COUNTER}" 9; true')
    counts, _ = parse_count_table(p.stdout)
    R.eq(p.returncode, 0, "fork+exec: exits 0", describe(p))
    R.eq((counts or {}).get("work", 0), 9, "a child is traced", describe(p))
    p = np("count", "--no-follow", f"{COUNTER}:work", "--", "sh", "-c", f'"{COUNTER}" 9; true')
    counts, _ = parse_count_table(p.stdout)
    R.eq((counts or {}).get("work", 0), 0, "--no-follow: a child is not traced", describe(p))
    R.check("was not traced" in p.stderr and "--no-follow" in p.stderr,
            "--no-follow: and that is said", describe(p))


@case
def thread_burst():
    # 300 threads that all hit the probe for the first time at once
    nthreads, m = 300, 10
    p = np("count", "-j", "tick", "--", THREADS, nthreads, m)
    counts, other = json_counts(p.stdout)
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.eq(counts, {"tick": nthreads * m}, f"every one of {nthreads * m} calls counted",
         describe(p))
    R.check("not recorded" not in p.stderr and "lost" not in p.stderr, "nothing lost",
            describe(p))


def started_pid(proc):
    """The program nanoprobe started (its one child); None if not known."""
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if len(kids) == 1 else None


def inside_session(proc):
    """Is the probe still in the started server's handle()? True: every
    call it returned from so far was made with the probe in place, and
    counted; False: the session ended first; None: cannot be read here
    (yama, no /proc children list)."""
    pid = started_pid(proc)
    try:
        site = Site(pid, SERVER, "handle") if pid else None
    except (OSError, ValueError):
        site = None
    now = site.now() if site else None
    return None if now is None else now != site.orig


def count_for_a_while():
    """count -d 1 on the server, fed 1 and 2, then 3 once the count is out:
    (the lines up to the count's table, with its row when both calls were
    made inside the session; whether they were (False too when the table
    came before their answers: a count of 0 has no row); the lines after;
    the status; stderr)."""
    proc = subprocess.Popen([NANOPROBE, "count", "-d", "1", "handle", "--", SERVER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True)
    lines = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] and None,
                              daemon=True)
    reader.start()
    proc.stdin.write("1\n2\n")
    proc.stdin.flush()
    seen, inside = [], False

    def line():
        seen.append(lines.get(timeout=TIMEOUT))
        return seen[-1]
    try:
        while not line().startswith("FUNC"):  # the table's header, at the end
            if seen[-1] == "ok 2\n":
                inside = inside_session(proc)
        while inside is not False and not re.match(r"^handle\s+\d+$", line()):
            pass
    except queue.Empty:
        pass
    proc.stdin.write("3\n")
    proc.stdin.close()
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
    reader.join(timeout=TIMEOUT)  # the program's last lines, written before it exited
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    return seen, inside, rest, proc.returncode, proc.stderr.read()


@case
def duration_with_a_started_program():
    # -d ends the session while the program goes on: the results come then,
    # not when the program exits; the program finishes unchanged. Both
    # calls count when they returned inside the session (the probe still in
    # place after "ok 2"): a machine that kept the program waiting for the
    # whole second runs it again, rather than expect what it cannot know.
    for _ in range(3):
        seen, inside, rest, status, err = count_for_a_while()
        if inside is not False:
            break
    R.check(any(l.startswith("FUNC") for l in seen),
            "-d 1: the count is printed while the program still runs", "".join(seen))
    if inside is False:
        R.skip("-d 1: both calls counted", "the session ended before the program's calls, "
               "3 times: this machine is too busy to tell")
    else:
        R.eq(seen[-1].split(), ["handle", "2"], "-d 1: both calls counted", "".join(seen))
    R.eq(status, 0, "-d 1: exits 0", err)
    R.check("server: handled=3 sum=17\n" in rest, "-d 1: the program handled its later "
            "input too", "".join(rest))


@case
def agent_exit_work_not_counted():
    # The agent's destructor runs on the program's exiting thread and takes
    # its lock with pthread_mutex_trylock; the counter program calls no
    # trylock of its own, so a count here would be the agent's (and whether
    # its lock is free depends on the control thread's tick, which made the
    # differential runs' counts vary from run to run).
    p = np("count", "-j", "c:pthread_mutex_trylock", "work", "--", COUNTER, 5)
    counts, _ = json_counts(p.stdout)
    R.eq(counts, {"work": 5, "pthread_mutex_trylock": 0},
         "the agent's exit work is not counted as the program's", describe(p))


@case
def signals_blocked_and_handled_by_the_program():
    # Servers block every signal in their threads; runtimes set SIGTRAP's
    # disposition and raise it. A breakpoint under either would be fatal
    # (the kernel forces a blocked SIGTRAP to its default): the agent keeps
    # SIGTRAP unblocked and the program's SIGTRAP handler behind the
    # engine's, which hands it the traps that are not ours.
    n = 1000
    want = plain([SIGMASK, n])
    for strategy in ("auto", "trap"):
        p = np("count", "-j", "--strategy", strategy, "work", "--", SIGMASK, n)
        counts, other = json_counts(p.stdout)
        R.eq(p.returncode, 0, f"{strategy}: the program exits 0", describe(p))
        R.eq(program_lines(p.stderr), want.splitlines(), f"{strategy}: its output is a plain run's "
             "(its mask reads back as it set it; its SIGTRAP handler saw its own traps)",
             describe(p))
        R.eq(counts, {"work": 2 * n + 3}, f"{strategy}: every call counted, blocked "
             "threads and a handler with a full sa_mask included", describe(p))
    # the agent's symbols: its entry point and the calls it interposes
    rows = [l.split() for l in subprocess.run(["nm", "-D", "--defined-only", AGENT],
                                              capture_output=True, text=True).stdout.splitlines()]
    names = sorted(r[2].split("@")[0] for r in rows if len(r) == 3 and r[1] != "A")
    R.eq(names, sorted(["__sysv_signal", "bsd_signal", "nanoprobe_agent_start", "pthread_sigmask",
                 "sigaction", "signal", "sigprocmask", "sigsuspend", "sysv_signal"]),
         "the agent exports its entry point and the interposed signal calls only", rows)


@case
def program_descriptors_unchanged():
    # the agent keeps its descriptors high: the program's open() gets the
    # number it gets without nanoprobe
    p, out = trace_out("r c:open fd=$retval:s32", "--", "cat", "/etc/hostname")
    R.eq(p.returncode, 0, "exits 0", describe(p))
    R.check(re.search(r"fd=3$", out, re.M) is not None, "cat's open returns fd 3", out)


# --------------------------------------------------------------------------
# 6. latency

HIST_ROW = re.compile(r"^(\[\d+[KMGTPE]?(?:, \d+[KMGTPE]?\))?\]?)\s+(\d+) \|([@ ]*)\|$")


@case
def latency():
    n = 500
    p = np("latency", "-u", "work", "--", COUNTER, n)
    R.eq(p.returncode, 0, "latency -u exits 0", describe(p))
    lines = p.stdout.splitlines()
    R.check("@usecs:" in lines, "@usecs: header", describe(p))
    rows = [HIST_ROW.match(l) for l in lines]
    rows = [r for r in rows if r]
    R.check(rows, "histogram rows", describe(p))
    R.eq(sum(int(r.group(2)) for r in rows), n, f"histogram rows add up to {n}", describe(p))
    R.check(all(re.fullmatch(r"\[\d+\]|\[\d+[KMGTPE]?, \d+[KMGTPE]?\)", r.group(1))
                for r in rows), "labels [N] or [lo, hi)")
    R.check(all(len(r.group(3)) == 52 and re.fullmatch(r"@* *", r.group(3)) for r in rows),
            "bars |@...| of width 52")
    top = max((int(r.group(2)) for r in rows), default=0)
    R.check(all((r.group(3).count("@") == 52) == (int(r.group(2)) == top) for r in rows),
            "the largest bucket has the full bar", describe(p))
    plain_rows = [l for l in lines if l.startswith("counter: ")]
    R.eq(plain_rows, plain([COUNTER, n]).splitlines(), "program output unchanged")
    stats = re.search(r"^count (\d+), average ([\d.]+) usecs, min ([\d.]+) usecs, "
                      r"max ([\d.]+) usecs", p.stdout, re.M)
    R.check(stats and int(stats.group(1)) == n, f"stats line: count {n}", describe(p))
    if stats:
        avg, lo, hi = map(float, stats.groups()[1:])
        R.check(lo <= avg <= hi, "min <= average <= max")

    p = np("latency", "-m", "work", "--", COUNTER, n)
    rows = [r for r in map(HIST_ROW.match, p.stdout.splitlines()) if r]
    R.check("@msecs:" in p.stdout.splitlines() and sum(int(r.group(2)) for r in rows) == n
            and re.search(rf"^count {n}, average \d+\.\d\d msecs", p.stdout, re.M),
            f"latency -m: @msecs, {n} calls", describe(p))

    p = np("latency", "-j", "-u", "work", "--", COUNTER, n)
    objs, other = parse_json_lines(p.stdout)
    hist = [o for o in objs if o.get("type") == "hist"]
    stats = [o for o in objs if o.get("type") == "stats"]
    R.eq((len(hist), len(stats)), (1, 1), "-j: one hist and one stats object", describe(p))
    if hist and stats:
        buckets = hist[0]["data"].get("@usecs")
        R.check(isinstance(buckets, list), "-j: hist data under @usecs", hist)
        R.eq(sum(b["count"] for b in buckets or []), n, f"-j: buckets add up to {n}")
        R.check(all(b["min"] <= b["max"] for b in buckets or []), "-j: min <= max per bucket")
        st = stats[0]["data"]
        R.eq((st.get("unit"), st.get("count")), ("usecs", n), f"-j: stats count {n}")
        # min, max and total are whole units (rounded down), the average is not
        R.check(st["min"] <= st["average"] < st["max"] + 1 and st["min"] * n <= st["total"],
                "-j: min <= average <= max, total consistent")


@case
def latency_says_why_returns_were_lost():
    # longjmp out of every call: none returns, each is counted, and the
    # report names longjmp, not a handler or an untracked thread
    n = 200
    p = np("latency", "-o", os.devnull, "leap", "--", JUMPER, n)
    R.eq(p.returncode, 0, "latency over longjmps exits 0", describe(p))
    R.eq(p.stdout, plain([JUMPER, n]), "jumper's output unchanged", describe(p))
    m = re.search(r"nanoprobe latency: (\d+) return events not recorded: the call was left "
                  r"without returning \(longjmp", p.stderr)
    R.check(m, "the lost returns are said to be left by longjmp", describe(p))
    # the last round's four frames may wait for a later call to be found
    R.check(m and 4 * n - 4 <= int(m.group(1)) <= 4 * n, f"about {4 * n} of them", describe(p))
    R.check("inside a handler" not in p.stderr and "while a handler" not in p.stderr
            and "could not track" not in p.stderr, "and no other reason", describe(p))


def kernel_vouches_for_tsc():
    """What src/arch/x86_64/runtime.c asks the kernel: its clocksource is
    the TSC, which runs at a constant rate and does not stop."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            source = f.read().strip()
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return False
    return source == "tsc" and "constant_tsc" in flags and "nonstop_tsc" in flags


@case
def latency_and_trace_name_their_clock():
    # The agent reads CLOCK_MONOTONIC from the TSC where the kernel vouches
    # for it, through the vDSO otherwise or when NANOPROBE_CLOCK=vdso asks;
    # either way a call that sleeps 10 ms takes between 5 ms and 1 s (an
    # order of magnitude, not a timing), and trace's time stamps fall
    # within the test's own CLOCK_MONOTONIC reads around the command.
    auto = "tsc" if kernel_vouches_for_tsc() else "vdso"
    for env, want in (({}, auto), ({"NANOPROBE_CLOCK": "vdso"}, "vdso")):
        label = f"NANOPROBE_CLOCK={env.get('NANOPROBE_CLOCK', '')}"
        p = np("latency", "-j", "c:nanosleep", "--", "sleep", "0.01", env=dict(ENV, **env))
        objs, other = parse_json_lines(p.stdout)
        R.eq(p.returncode, 0, f"{label} latency: exits 0", describe(p))
        R.eq(sorted({o.get("clock") for o in objs}), [want],
             f"{label} latency -j: every line says the clock is {want}", describe(p))
        stats = [o["data"] for o in objs if o.get("type") == "stats"]
        R.check(len(stats) == 1 and stats[0]["count"] >= 1 and
                5000000 <= stats[0]["min"] <= stats[0]["max"] <= 1000000000,
                f"{label} latency: a 10 ms sleep reads between 5 ms and 1 s", describe(p))
        p = np("latency", "c:nanosleep", "--", "sleep", "0.01", env=dict(ENV, **env))
        R.check(re.search(rf"^Clock: {want}\b.*CLOCK_MONOTONIC", p.stderr, re.M),
                f"{label} latency: the header names the clock", describe(p))
        before = time.monotonic_ns()
        p = np("trace", "-j", "work i=%di:u64", "--", COUNTER, 20, env=dict(ENV, **env))
        after = time.monotonic_ns()
        objs, other = parse_json_lines(p.stdout)
        R.eq(p.returncode, 0, f"{label} trace: exits 0", describe(p))
        R.eq(sorted({o.get("clock") for o in objs}), [want],
             f"{label} trace -j: every event says the clock is {want}", describe(p))
        ts = [round(o["ts"] * 1e9) for o in objs]
        R.check(len(ts) == 20 and all(before - 1000000 <= t <= after + 1000000 for t in ts),
                f"{label} trace: every time stamp is CLOCK_MONOTONIC, the test's own clock",
                describe(p, f"test's clock: {before} .. {after}"))
    p = np("trace", "work", "--", COUNTER, 3, env=dict(ENV, NANOPROBE_CLOCK="rdtsc"))
    R.check(p.returncode == 1 and "NANOPROBE_CLOCK=rdtsc" in p.stderr and p.stdout == "",
            "NANOPROBE_CLOCK=rdtsc: refused by name, before the program runs", describe(p))


# --------------------------------------------------------------------------
# 7. Chrome trace export


@case
def export_trace():
    nthreads, m = 3, 5
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        p = np("trace", "-o", os.path.join(d, "t.txt"), "--export-trace", path,
               "r tick", "threads:tick", "--", THREADS, nthreads, m)
        R.eq(p.returncode, 0, "exits 0", describe(p))
        try:
            with open(path) as f:
                doc = json.load(f)
            ok = True
        except (OSError, ValueError) as e:
            doc, ok = {}, False
            R.check(False, "the file is valid JSON", repr(e))
        if ok:
            R.check(True, "the file is valid JSON")
    evs = doc.get("traceEvents", []) if isinstance(doc, dict) else []
    xs = [e for e in evs if e.get("ph") == "X"]
    ms = [e for e in evs if e.get("ph") == "M"]
    R.eq(len(xs), nthreads * m, "one X span per return", evs[:3])
    R.check(all(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0
                and isinstance(e.get("ts"), (int, float)) and e.get("name") == "tick"
                for e in xs), "X spans: name tick, ts, dur >= 0", xs[:3])
    tids = {e["tid"] for e in xs}
    R.eq(len(tids), nthreads, "spans on each thread")
    named = {e["tid"]: e["args"]["name"] for e in ms if e.get("name") == "thread_name"}
    R.check(tids <= set(named) and all(v == "threads" for v in named.values()),
            "thread_name metadata for every thread", ms)
    R.eq(len([e for e in evs if e.get("ph") not in ("X", "M")]), nthreads * m,
         "entries are instant events")
    R.check(all(e.get("args", {}).get("event") == "tick__return" for e in xs),
            "spans name their event", xs[:3])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.json")
        np("trace", "-o", os.path.join(d, "t.txt"), "--export-trace", path,
           f"{COUNTER}:greet name=$arg1:string", "r greet n=$retval:s32", "--", COUNTER, 1)
        with open(path) as f:
            evs = json.load(f)["traceEvents"]
    names = [e["args"].get("name") for e in evs if e.get("ph") == "i"]
    R.eq(names, ["ada", "grace", "linus"], "instants carry their fetched arguments", evs[:4])
    R.eq([e["args"].get("n") for e in evs if e.get("ph") == "X"], [294, 1028, 1665],
         "spans carry the return value", evs[:4])


# --------------------------------------------------------------------------
# 8. -p: attach to a running process, detach leaving it as it was

def needs_ptrace(fn):
    """A case that attaches to a process it did not start."""
    @functools.wraps(fn)
    def run():
        if not ptrace_allowed():
            R.skip("-p", "ptrace of non-children is not allowed here (yama)")
            return None
        return fn()
    return run




def attach_session(how, k=5):
    """count -p on server, k lines while attached, then end the session `how`
    (SIGINT, SIGTERM, SIGKILL or 'duration'). Returns (server, nanoprobe
    results, site) for more checks; the server is still running."""
    srv = Server()
    site = Site(srv.pid, SERVER, "handle")
    args = ["count", "-j", "-p", srv.pid, "handle"]
    if how == "duration":
        args[1:1] = ["-d", "2"]
    proc, ok = start_attached(site, *args)
    R.check(ok, f"{how}: the probe appears in the server", proc.args)
    confirmed = 0
    answers = []
    for i in range(k):
        live = site.patched()
        answers.append(srv.ask(10 + i))
        confirmed += live and site.patched()
    R.eq(answers, handle_answers(range(k)), f"{how}: the server answers while traced")
    if how == "duration":
        res = finish(proc)
    elif how == signal.SIGKILL:
        proc.kill()
        res = finish(proc)
    else:
        res = finish(proc, how)
    return srv, res, site, confirmed


def server_goes_on(srv, site, label, more=(7, -3, 1000)):
    # Detach restores the original code (docs/design.md, "Detach"), so a
    # later session starts from the file's bytes again.
    R.eq(site.now(), site.orig, f"{label}: handle's code is the file's again")
    R.check(srv.alive(), f"{label}: the server is still running")
    answers = [srv.ask(v) for v in more]
    n0 = len(srv.inputs) - len(more)
    R.eq(answers, [f"ok {n0 + i + 1}" for i in range(len(more))],
         f"{label}: the server answers after detach")


def server_final(srv, label):
    rc, out = srv.close()
    R.eq(rc, 0, f"{label}: the server exits 0")
    R.eq(out, unprobed_server_output(srv.inputs),
         f"{label}: its whole output is that of an unprobed server given the same input")


@case
@needs_ptrace
def attach_sigint_sigterm_duration():
    k = 5
    for how, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"),
                      ("duration", "-d 2")):
        R.case = f"attach/{name}"
        srv, res, site, confirmed = attach_session(how, k)
        try:
            R.eq(res.returncode, 0, "nanoprobe exits 0", describe(res))
            counts, _ = json_counts(res.stdout)
            if how == "duration" and confirmed < k:
                # the machine stalled for longer than -d: exact for what we know
                R.check(counts and confirmed <= counts.get("handle", -1) <= k,
                        f"count within [{confirmed}, {k}] (slow machine)", describe(res))
            else:
                R.eq(counts, {"handle": k}, f"count of handle is exactly {k}", describe(res))
            server_goes_on(srv, site, name)
            server_final(srv, name)
        finally:
            srv.kill()
    R.case = "attach"


@case
@needs_ptrace
def attach_sigkill_then_reattach():
    srv, res, site, _ = attach_session(signal.SIGKILL, 4)
    try:
        R.eq(res.returncode, -signal.SIGKILL, "nanoprobe was killed")
        R.check(site.wait(False, timeout=30),
                "the agent sees the socket close and removes its probe by itself",
                site.now().hex() + " vs " + site.orig.hex())
        server_goes_on(srv, site, "after SIGKILL", more=(2, 3, 4, 5))
        # a new session attaches again and counts exactly
        k = 6
        proc, ok = start_attached(site, "count", "-j", "-p", srv.pid, "handle")
        R.check(ok, "a new session attaches", proc.args)
        answers = [srv.ask(100 + i) for i in range(k)]
        n0 = len(srv.inputs) - k
        R.eq(answers, [f"ok {n0 + i + 1}" for i in range(k)], "answers while re-attached")
        res = finish(proc, signal.SIGINT)
        R.eq(res.returncode, 0, "the new session exits 0", describe(res))
        counts, _ = json_counts(res.stdout)
        R.eq(counts, {"handle": k}, f"the new session counts exactly {k}", describe(res))
        server_goes_on(srv, site, "after the second session")
        server_final(srv, "SIGKILL")
    finally:
        srv.kill()


@case
@needs_ptrace
def attach_trace_args():
    srv = Server()
    try:
        syms = nm(SERVER)
        site = Site(srv.pid, SERVER, "handle")
        dso = runtime_addr(srv.pid, SERVER, syms["__dso_handle"][0])
        dso_off = vaddr_to_offset(SERVER, syms["__dso_handle"][0])
        proc, ok = start_attached(site, "trace", "-p", srv.pid,
                        f"handle v=%di:s64 a=@{dso:#x}:x64 s=@__dso_handle:x64 "
                        f"f=@+{dso_off:#x}:x64", "r server:handle $retval:s64")
        R.check(ok, "trace -p: the probe appears", proc.args)
        values = [3, -2, 10, 0]
        answers = [srv.ask(v) for v in values]
        R.eq(answers, handle_answers(values), "the server answers")
        res = finish(proc, signal.SIGINT)
        R.eq(res.returncode, 0, "trace -p exits 0 on SIGINT", describe(res))
        events, other = parse_text_events(res.stdout)
        R.eq(other, [], "only event lines", describe(res))
        entries = [e for e in events if e["event"] == "handle"]
        rets = [e for e in events if e["event"] == "handle__return"]
        R.eq([e["args"].get("v") for e in entries], [str(v) for v in values],
             "the argument of each call")
        R.eq([e["args"].get("arg1") for e in rets], [str(v * v + 1) for v in values],
             "the return value of each call")
        R.check(all(e["tid"] == srv.pid and e["task"] == "server" for e in events) and events,
                "task server, tid the server's pid")
        R.check(all(e["group"] == "probe_server" for e in events), "group probe_server")
        R.eq({(e["args"].get("a"), e["args"].get("s"), e["args"].get("f")) for e in entries},
             {(hex(dso),) * 3}, "@ADDR, @SYMBOL and @+FILEOFFSET read the same word")
        R.eq([e["addr"] for e in entries], [hex(site.addr)] * len(values),
             "the probe address is handle's in the process")
        server_goes_on(srv, site, "trace -p")
        server_final(srv, "trace -p")
    finally:
        srv.kill()


@case
@needs_ptrace
def attach_target_exits():
    """The traced process ends during the session: nanoprobe ends too."""
    srv = Server()
    try:
        site = Site(srv.pid, SERVER, "handle")
        proc, ok = start_attached(site, "count", "-j", "-p", srv.pid, "handle")
        R.check(ok, "the probe appears", proc.args)
        answers = [srv.ask(v) for v in (1, 2, 3)]
        R.eq(answers, handle_answers(range(3)), "the server answers")
        rc, out = srv.close()
        R.eq((rc, out), (0, unprobed_server_output([1, 2, 3])),
             "the server ends normally with the output of an unprobed run")
        res = finish(proc)
        R.eq(res.returncode, 0, "nanoprobe ends by itself, status 0", describe(res))
        counts, _ = json_counts(res.stdout)
        R.eq(counts, {"handle": 3}, "count 3", describe(res))
    finally:
        srv.kill()


@case
@needs_ptrace
def attach_busy_and_malloc():
    srv = Server()
    try:
        site = Site(srv.pid, SERVER, "handle")
        first, ok = start_attached(site, "count", "-j", "-p", srv.pid, "handle")
        R.check(ok, "first session attached", first.args)
        second = np("count", "-j", "-p", srv.pid, "handle")
        R.eq(second.returncode, 1, "a second session on the same process fails with 1",
             describe(second))
        R.check("another nanoprobe" in second.stderr and len(second.stderr.splitlines()) == 1,
                "one line saying another nanoprobe is tracing it", describe(second))
        answers = [srv.ask(v) for v in range(4)]
        R.eq(answers, handle_answers(range(4)), "the server answers")
        res = finish(first, signal.SIGINT)
        counts, _ = json_counts(res.stdout)
        R.eq(counts, {"handle": 4}, "the first session still counts exactly", describe(res))

        # the server allocates nothing per line (its stdio buffers exist
        # since "ready" and the first fgets), so c:malloc must stay 0.
        # The agent's session thread calls malloc while it patches malloc:
        # it must take the patch window's breakpoint like any thread (a
        # blocked SIGTRAP there would kill the process).
        proc, ok = start_attached(site, "count", "-j", "-p", srv.pid, "c:malloc", "handle")
        R.check(ok, "c:malloc and handle attached", describe(finish(proc)) if not ok else "")
        answers = [srv.ask(v) for v in range(3)]
        res = finish(proc, signal.SIGINT)
        R.check(srv.alive() and answers == ["ok 5", "ok 6", "ok 7"],
                "-p c:malloc: the server survives the attach and answers",
                describe(res, f"server status: {srv.p.poll()}; answers: {answers}"))
        counts, _ = json_counts(res.stdout)
        # The agent's own malloc calls while it sets up are not counted.
        R.eq(counts, {"handle": 3, "malloc": 0},
             "-p: c:malloc counts no call of the agent's own (the server allocates none "
             "per line)", describe(res))
        if srv.alive():
            server_goes_on(srv, site, "after c:malloc")
            server_final(srv, "busy")
    finally:
        srv.kill()


def attaches_and_counts(srv, site, label, k=3):
    """A real session attaches to srv (now: no retry by the test) and
    counts k calls of handle exactly."""
    proc, ok = start_attached(site, "count", "-j", "-p", srv.pid, "handle")
    R.check(ok, f"{label}: a new session attaches", describe(finish(proc)) if not ok else "")
    if not ok:
        return
    n0 = len(srv.inputs)
    answers = [srv.ask(200 + i) for i in range(k)]
    R.eq(answers, [f"ok {n0 + i + 1}" for i in range(k)], f"{label}: answers while attached")
    res = finish(proc, signal.SIGINT)
    R.eq(res.returncode, 0, f"{label}: the new session exits 0", describe(res))
    counts, _ = json_counts(res.stdout)
    R.eq(counts, {"handle": k}, f"{label}: the new session counts exactly {k}", describe(res))


@case
@needs_ptrace
def a_session_given_up_at_any_step_leaves_the_target_as_it_was():
    """The command refuses or dies at each step of a -p session (a command
    of the test's own that stops there, session_faults.c): the agent must
    end its session by itself, leave the code as the file's, the server
    unharmed, and take a new session at once. An agent whose command went
    away before it had placed anything ran the engine's detach
    uninitialised and killed the process (SIGSEGV in np_barrier_threads),
    as root attaching to another user's process did every time."""
    vaddr = nm(SERVER)["handle"][0]
    for step in ("inject", "accept", "hello", "probes", "go", "ready"):
        srv = Server()  # each its own: the agent is new to it
        try:
            site = Site(srv.pid, SERVER, "handle")
            p = run([SESSION_FAULTS, step, srv.pid, AGENT, SERVER, hex(vaddr)])
            R.eq((p.returncode, p.stdout), (0, f"{step}: done\n"),
                 f"given up at '{step}': the command did its part", describe(p))
            R.check(site.wait(False, timeout=30),
                    f"given up at '{step}': handle's code is the file's again")
            R.check(srv.alive(), f"given up at '{step}': the server is alive",
                    f"status {srv.p.poll()}")
            if not srv.alive():
                continue
            R.eq([srv.ask(v) for v in (1, 2)], ["ok 1", "ok 2"],
                 f"given up at '{step}': the server answers")
            attaches_and_counts(srv, site, f"after '{step}'")
            server_final(srv, f"given up at '{step}'")
        finally:
            srv.kill()


def signal_masks(pid):
    """{tid: SigBlk as an int} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                out[int(tid)] = int(re.search(r"^SigBlk:\s+(\w+)", f.read(), re.M).group(1), 16)
        except (OSError, AttributeError):
            pass
    return out


@case
@needs_ptrace
def threads_that_block_every_signal_live_through_a_trap_session():
    """A breakpoint met by a thread that blocks SIGTRAP is fatal: the kernel
    resets the handler and forces the signal on. A preloaded agent keeps
    the program from blocking it; an injected one comes too late. For a
    -p session the command unblocks the engine's signals in the threads
    that block them and blocks them again after, and the agent keeps a
    thread made during the session from blocking them. Here every call
    of work() is a breakpoint (--strategy trap), in a worker made at start
    with every signal blocked and in a thread made during the session the
    same way: the process died of SIGTRAP at the first before."""
    inputs = ["w 5", "t 7", "w 9"]
    want = run([DEAF_THREADS], input="".join(f"{v}\n" for v in inputs)).stdout
    srv = Server(prog=DEAF_THREADS)
    try:
        site = Site(srv.pid, DEAF_THREADS, "work")
        before = signal_masks(srv.pid)
        R.check(len(before) == 2 and all(m & (1 << (signal.SIGTRAP - 1)) for tid, m in
                                         before.items() if tid != srv.pid),
                "its worker blocks SIGTRAP", before)
        proc, ok = start_attached(site, "count", "-j", "--strategy", "trap", "-p", srv.pid,
                                  "work")
        R.check(ok, "the session sets up", describe(finish(proc)) if not ok else "")
        answers = [srv.ask(v) for v in inputs[:2]]
        res = finish(proc, signal.SIGINT)
        R.eq(answers, ["ok 37", "ok 51"], "the worker and a thread made meanwhile answer",
             describe(res, f"server status: {srv.p.poll()}"))
        counts, _ = json_counts(res.stdout)
        R.eq(counts, {"work": 2}, "both calls counted", describe(res))
        after = signal_masks(srv.pid) if srv.alive() else {}
        R.eq({t: m for t, m in after.items() if t in before}, before,
             "the threads' masks are as they were")
        new = [m for t, m in after.items() if t not in before]
        worker = [m for t, m in before.items() if t != srv.pid]
        R.eq(new, worker, "the thread made during the session has the mask it asked for "
             "(every signal), as the worker")
        R.eq(srv.ask(inputs[2]), "ok 65", "the worker answers after the session")
        rc, out = srv.close()
        R.eq((rc, out), (0, want), "the program ends as a plain run")
    finally:
        srv.kill()


def setpriv_nobody():
    """A prefix that runs a program as nobody, or None when this cannot be
    tried: root is needed to change user, setpriv and chroot to do it."""
    tool = shutil.which("setpriv")
    if os.geteuid() != 0 or not tool or not shutil.which("chroot"):
        return None
    return [tool, "--reuid=65534", "--regid=65534", "--clear-groups"]


@case
def root_traces_another_users_process():
    """docs/cli.md: root may trace any process. The command took only an
    agent of its own uid for the target's and waited 15 s; the agent,
    refused, ran the engine's detach uninitialised and killed the target."""
    prefix = setpriv_nobody()
    if prefix is None:
        R.skip("root and another user", "needs root, setpriv and chroot")
        return
    srv = Server(prefix)
    try:
        with open(f"/proc/{srv.pid}/status") as f:
            uid = re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1)
        R.eq(uid, "65534", "the server runs as nobody")
        site = Site(srv.pid, SERVER, "handle")
        attaches_and_counts(srv, site, "root -p a process of nobody's", k=4)
        server_goes_on(srv, site, "root -p a process of nobody's")
        server_final(srv, "root -p a process of nobody's")
    finally:
        srv.kill()
    # A program started with -- that becomes another user and execs (the
    # same process: the agent connects again from the new image). chroot
    # --userspec sets the group, then the user, in every thread (glibc
    # sends its setxid signal to the agent's thread too); setpriv --reuid
    # --regid cannot be used here: it keeps its capabilities across the
    # first change in its own thread only, and glibc aborts when the
    # second one fails in the agent's (docs/cli.md).
    inputs = [3, 4, 5]
    chroot = shutil.which("chroot")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "counts.json")
        p = run([NANOPROBE, "count", "-j", "-o", out, f"{SERVER}:handle", "--", chroot,
                 "--userspec=65534:65534", "/", SERVER], input="".join(f"{v}\n" for v in inputs))
        text = open(out).read() if os.path.exists(out) else ""
    R.eq(p.returncode, 0, "-- chroot --userspec nobody server: exit 0", describe(p))
    R.eq(p.stdout, unprobed_server_output(inputs), "-- chroot --userspec nobody server: its output",
         describe(p))
    counts, _ = json_counts(text)
    R.eq(counts, {"handle": len(inputs)},
         "-- chroot --userspec nobody server: handle counted exactly", describe(p, text))


@case
@needs_ptrace
def command_killed_while_injecting_leaves_the_target_as_it_was():
    """SIGKILL to the command while the target's thread runs dlopen for it:
    the tracer is gone, and the thread used to go on from inside the call.
    Here the call cannot finish (another thread of the target holds the
    loader's lock), so the thread waited there forever and the target
    never printed its result. The injection now runs in a child of the
    command that outlives it: the call is abandoned after its time-out and
    the thread's registers put back, and the target ends as a plain run."""
    ms = 8000
    want = run([INJECT_TARGET, "lock", ms]).stdout
    tgt = subprocess.Popen([INJECT_TARGET, "lock", str(ms)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    try:
        R.eq(tgt.stdout.readline(), "ready\n", "the target is ready")
        proc = start_np("count", "-p", tgt.pid, "do_sleep")
        traced = False
        deadline = time.monotonic() + TIMEOUT
        while not traced and time.monotonic() < deadline and proc.poll() is None:
            with open(f"/proc/{tgt.pid}/status") as f:
                traced = re.search(r"^TracerPid:\s+([1-9]\d*)", f.read(), re.M) is not None
            time.sleep(0.001)
        R.check(traced, "the target is traced: the injection is under way")
        proc.kill()
        finish(proc)
        try:
            out, _ = tgt.communicate(timeout=ms / 1000 + TIMEOUT)
        except subprocess.TimeoutExpired:
            out = "[test: the target never finished]"
        R.eq(out, want[len("ready\n"):], "the target's output is that of a plain run")
        R.eq(tgt.returncode, 0, "the target exits 0")
    finally:
        if tgt.poll() is None:
            tgt.kill()
            tgt.wait()


# --------------------------------------------------------------------------
# 9. bad input: one message, the right status, nothing run or changed


def error_case(args, status, must, label, lines=1, caret=None):
    """A `-- counter` command that must fail before counter runs."""
    p = np(*args, "--", COUNTER, 3) if "-p" not in args else np(*args)
    R.eq(p.returncode, status, f"{label}: exit status {status}", describe(p))
    R.eq(p.stdout, "", f"{label}: the program did not run (no output)", describe(p))
    # (the "was killed by signal" line is a bug of its own, checked apart)
    errl = [l for l in p.stderr.splitlines() if "was killed by signal" not in l]
    R.check(all(m in p.stderr for m in must), f"{label}: message says {must}", describe(p))
    R.eq(len(errl), lines, f"{label}: {lines} line(s) of error", describe(p))
    if caret is not None and len(errl) >= 3:
        spec_line, caret_line = errl[1], errl[2]
        col = caret_line.find("^")
        R.check(col >= 0 and spec_line[col:].startswith(caret)
                and caret_line[col:] == "^" + "~" * (len(caret) - 1),
                f"{label}: the caret is under '{caret}'", describe(p))
    return p


@case
def errors():
    counter = os.path.basename(COUNTER)
    error_case(["trace", "nosuchprog_xyz:foo"], 1, ["nosuchprog_xyz"], "unknown binary")
    error_case(["trace", "/nonexistent/dir/bin:foo"], 1, ["/nonexistent/dir/bin"],
               "unknown absolute path")
    error_case(["count", "nosuchlib_xyz:foo"], 1, ["nosuchlib_xyz"], "unknown library")
    error_case(["trace", f"{counter}:wrok"], 1, ["'wrok'", "did you mean", "work"],
               "unknown symbol")
    error_case(["count", "nomatch_*"], 1, ["nomatch_*"], "pattern matching nothing")
    error_case(["trace", f"p {counter}:work x=%zz"], 2, ["%zz"], "bad register", 3, "%zz")
    error_case(["trace", f"p {counter}:work x=%di:u7"], 2, ["u7"], "bad type :u7", 3, "u7")
    error_case(["trace", f"p {counter}:work $arg9"], 2, ["$arg9"], "bad $argN", 3, "$arg9")
    error_case(["trace", f"p {counter}:work+zz"], 2, ["+zz"], "bad offset", 3, "+zz")
    error_case(["trace", f"p {counter}:work x=+8(%di"], 2, ["+8(%di"],
               "unbalanced dereference", 3, "+8(%di")
    error_case(["trace", f"p {counter}:work $retval"], 2, ["$retval"],
               "$retval on an entry probe", 3, "$retval")
    error_case(["trace", f"r {counter}:work+1"], 2, ["return"], "return probe inside a function",
               3)
    error_case(["trace", "--strategy", "bogus", "work"], 2, ["bogus"], "bad --strategy")
    error_case(["trace", "-d", "0", "work"], 2, ["-d"], "bad -d")
    error_case(["count", "-i", "x", "work"], 2, ["-i"], "bad -i")
    # not finite, too large for the session's clock, below zero or above
    # it only by underflow: refused, the value named
    for bad in ("nan", "NaN", "inf", "-inf", "infinity", "1e999", "1e300", "31536001",
                "1e-400", "-0", ""):
        error_case(["trace", "-d", bad, "work"], 2, ["-d", f"'{bad}'"], f"-d {bad!r}")
        error_case(["count", "-i", bad, "work"], 2, ["-i", f"'{bad}'"], f"-i {bad!r}")
    error_case(["trace", "--no-such-option", "work"], 2, ["--no-such-option"],
               "unknown option")
    error_case(["trace"], 2, ["no probe"], "no probe given")
    error_case(["count", "--buffer-kb", "3", "work"], 2, ["--buffer-kb"], "bad --buffer-kb")
    # not a `-- counter` command: nothing to run at all
    for args, status, must, label in (
            (["trace", "work"], 2, "-p PID or -- CMD", "neither -p nor --"),
            (["count", "work"], 2, "-p PID or -- CMD", "count: neither -p nor --"),
            (["frobnicate"], 2, "unknown verb", "unknown verb"),
            (["trace", "work", "--"], 2, "nothing to run", "nothing after --")):
        p = np(*args)
        R.eq(p.returncode, status, f"{label}: exit status {status}", describe(p))
        R.check(must in p.stderr and len(p.stderr.splitlines()) == 1,
                f"{label}: one line saying '{must}'", describe(p))
    p = np("trace", "work", "--", "/nonexistent/prog")
    R.eq(p.returncode, 1, "unknown program after --: exit status 1", describe(p))
    R.check("/nonexistent/prog" in p.stderr and len(p.stderr.splitlines()) == 1,
            "unknown program after --: one line naming it", describe(p))

    # the engine refuses: not an instruction boundary; jump forced where a
    # jump cannot go (tests/cli: list says TRAP there, see the list case)
    # A refused probe is reported with the engine's reason (for a forced
    # JUMP, the planner's, as `list` shows it), not a bare strerror.
    inside = inside_an_instruction(COUNTER, "work")
    too_long = jump_too_long(COUNTER, "greet_ptr")
    refusals = [([f"{counter}:work+{inside}"], "instruction boundary",
                 "offset inside an instruction")]
    if too_long is not None:
        refusals.append((["--strategy", "jump", f"{counter}:greet_ptr+{too_long}"],
                         "before the 5 bytes a jump needs",
                         "--strategy jump where a jump does not fit"))
    else:
        R.skip("--strategy jump where a jump does not fit", "no such site in this build")
    for args, why, label in refusals:
        p = error_case(["trace"] + args, 1, [why, "no probe could be placed"],
                       f"refused: {label}", lines=2)
        # nanoprobe kills the program it started (before main) itself: no
        # "killed by signal" line about it.
        R.check("killed by signal" not in p.stderr,
                f"refused: {label}: no 'killed by signal' about the program "
                "nanoprobe itself stopped", describe(p))


@case
def errors_attach():
    """-p: bad input leaves the target untouched: no agent loaded, no code
    changed, and it goes on answering."""
    # a process that no longer exists
    gone = subprocess.Popen(["true"])
    gone.wait()
    if os.path.exists(f"/proc/{gone.pid}"):
        R.skip("-p of a process that is gone", "its pid was reused")
    else:
        p = np("count", "-p", gone.pid, "handle")
        R.eq(p.returncode, 1, "-p of a process that is gone: exit 1", describe(p))
        R.check("not found" in p.stderr and str(gone.pid) in p.stderr
                and len(p.stderr.splitlines()) == 1,
                "-p of a process that is gone: one line, 'not found'", describe(p))
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    srv = Server()
    try:
        site = Site(srv.pid, SERVER, "handle")
        for args, status, must, label in (
                (["trace", "server:hnadle"], 1, "did you mean", "unknown symbol"),
                (["trace", "nosuchprog_xyz:foo"], 1, "nosuchprog_xyz", "unknown binary"),
                (["trace", "p handle x=%zz"], 2, "%zz", "bad register"),
                (["trace", "p handle $retval"], 2, "$retval", "$retval on entry"),
                (["count", "nosuchlib_xyz:foo"], 1, "nosuchlib_xyz", "unknown library")):
            p = np(args[0], "-p", srv.pid, *args[1:])
            R.eq(p.returncode, status, f"-p {label}: exit {status}", describe(p))
            R.check(must in p.stderr, f"-p {label}: message says '{must}'", describe(p))
            R.check(not agent_mapped(srv.maps()), f"-p {label}: no agent loaded in the target")
            R.eq(site.now(), site.orig, f"-p {label}: the target's code unchanged")
        R.eq([srv.ask(v) for v in (1, 2)], handle_answers(range(2)),
             "-p bad input: the server goes on answering")

        # refused by the engine in a running process
        p = np("trace", "-p", srv.pid, f"server:handle+{inside_an_instruction(SERVER, 'handle')}")
        R.eq(p.returncode, 1, "-p refused probe: exit 1", describe(p))
        R.check("not an instruction boundary" in p.stderr,
                "-p refused probe: the engine's reason", describe(p))
        R.eq(site.now(), site.orig, "-p refused probe: the target's code unchanged")
        R.eq([srv.ask(v) for v in (3, 4)], ["ok 3", "ok 4"],
             "-p refused probe: the server goes on answering")
        proc, ok = start_attached(site, "count", "-j", "-p", srv.pid, "handle")
        R.check(ok, "-p refused probe: a new session can attach after", proc.args)
        answers = [srv.ask(v) for v in (5, 6)]
        res = finish(proc, signal.SIGINT)
        counts, _ = json_counts(res.stdout)
        R.eq(counts, {"handle": 2}, "-p refused probe: the next session counts exactly",
             describe(res))
        R.eq(answers, ["ok 5", "ok 6"], "answers during the next session")
        server_final(srv, "-p errors")
    finally:
        srv.kill()


# --------------------------------------------------------------------------
# 10. list


@case
def list_functions():
    syms = nm(COUNTER)
    p = np("list", COUNTER)
    R.eq(p.returncode, 0, "list exits 0", describe(p))
    rows = {}
    for line in p.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) >= 3 and re.fullmatch(r"[0-9a-f]+", f[0]):
            rows[f[2]] = (int(f[0], 16), int(f[1]))
    for fn in ("work", "greet", "greet_ptr", "main"):
        R.eq(rows.get(fn), syms[fn], f"list: {fn} at its nm address with its nm size",
             describe(p))
    p = np("list", "-j", COUNTER)
    objs, other = parse_json_lines(p.stdout)
    R.eq(other, [], "list -j: JSON lines only", describe(p))
    js = {o["name"]: (int(o["addr"], 16), o["size"]) for o in objs}
    R.eq({k: js.get(k) for k in ("work", "greet")}, {k: syms[k] for k in ("work", "greet")},
         "list -j: the same addresses and sizes")


@case
def list_short_names():
    """Library short names as PATH: c, libc, libc.so.6, m, pthread."""
    paths = {}
    for short in ("c", "libc", "libc.so.6", "m", "pthread"):
        p = np("list", "-j", short)
        objs, _ = parse_json_lines(p.stdout)
        R.check(p.returncode == 0 and objs, f"list {short}: functions listed", describe(p))
        q = np("list", short, "nonexistent_fn_xyz")
        m = re.search(r" in (/\S+)", q.stderr + q.stdout)
        paths[short] = os.path.basename(os.path.realpath(m.group(1))) if m else q.stderr
    R.check(len({paths[k] for k in ("c", "libc", "libc.so.6")}) == 1
            and paths["c"].startswith("libc"), "c, libc and libc.so.6 are one file", paths)
    R.check(paths["m"].startswith("libm"), "m is libm", paths)
    R.check(paths["pthread"].startswith("libpthread"), "pthread is libpthread", paths)


@case
def list_instructions():
    syms = nm(COUNTER)
    for fn in ("work", "greet_ptr", "greet"):
        addr, size = syms[fn]
        p = np("list", COUNTER, fn)
        R.eq(p.returncode, 0, f"list counter {fn} exits 0", describe(p))
        lines = p.stdout.splitlines()
        R.check(lines and lines[0].startswith(f"{fn}: {addr:#x}-{addr + size:#x} ({size} bytes"),
                f"{fn}: header with its range", describe(p))
        code = b""
        insns = []
        for line in lines[2:]:
            m = re.match(r"^\s+([0-9a-f]+)\s+((?:[0-9a-f]{2} )*[0-9a-f]{2})\s+(.*?)\s+(JUMP|TRAP)"
                         r"(?:\s+(.*))?$", line)
            R.check(m, f"{fn}: instruction row with a strategy: {line.strip()}")
            if m:
                insns.append((int(m.group(1), 16), m.group(4), m.group(5)))
                code += bytes.fromhex(m.group(2))
        R.eq(insns[0][0] if insns else None, addr, f"{fn}: the first instruction at its address")
        R.eq(code, file_bytes(COUNTER, vaddr_to_offset(COUNTER, addr), size),
             f"{fn}: the bytes shown are the function's bytes in the file")
        # the last column: a TRAP's reason; a JUMP's form where it jumps
        # to a hop (built with UBSan, `work` has a branch landing right
        # after its ret: the ret gets a jmp rel8 to the padding after it)
        R.check(all(bool(why) if s == "TRAP" else
                    not why or re.fullmatch(r"jmp rel8 \+ hop 0x[0-9a-f]+", why)
                    for _, s, why in insns),
                f"{fn}: every TRAP has a reason, a JUMP none but its hop", describe(p))
    p = np("list", "-j", COUNTER, "greet_ptr")
    objs, other = parse_json_lines(p.stdout)
    # a JUMP also names its form (and a hop's address, for that form)
    R.check(objs and all(set(o) - {"form", "hop"} ==
                         {"type", "addr", "bytes", "insn", "strategy", "reason"} and
                         ("form" in o) == (o["strategy"] == "jump") and
                         ("hop" in o) == (o.get("form") == "jmp rel8 + hop")
                         for o in objs),
            "list -j FUNC: addr, bytes, insn, strategy, reason; a JUMP's form", describe(p))
    # what list says agrees with what the engine does
    by_off = {int(o["addr"], 16) - syms["greet_ptr"][0]: o["strategy"] for o in objs}
    jump_ok = [off for off, s in by_off.items() if s == "jump"]
    trap_only = [off for off, s in by_off.items() if s == "trap"]
    counter = os.path.basename(COUNTER)
    if jump_ok:
        q = np("count", "-j", "--strategy", "jump", f"{counter}:greet_ptr+{jump_ok[0]}",
               "--", COUNTER, 2)
        counts, _ = json_counts(q.stdout)
        R.eq(list((counts or {}).values()), [1],
             f"greet_ptr+{jump_ok[0]} listed JUMP: --strategy jump is placed, 1 hit",
             describe(q))
    if trap_only:
        q = np("count", "--strategy", "jump", f"{counter}:greet_ptr+{trap_only[0]}",
               "--", COUNTER, 2)
        R.eq(q.returncode, 1, f"greet_ptr+{trap_only[0]} listed TRAP: --strategy jump refused",
             describe(q))
        q = np("count", "-j", "--strategy", "trap", f"{counter}:greet_ptr+{trap_only[0]}",
               "--", COUNTER, 2)
        counts, _ = json_counts(q.stdout)
        R.eq(list((counts or {}).values()), [1],
             f"greet_ptr+{trap_only[0]} with --strategy trap: placed, 1 hit", describe(q))


# --------------------------------------------------------------------------


def main():
    return run_cases(R, CASES, (NANOPROBE, AGENT, COUNTER, THREADS, PLUGIN_HOST, SERVER, PLUGIN), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
