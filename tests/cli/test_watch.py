#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `nanoprobe watch` against tests/cli/progs/watched.c:
exact counts per writer with -- CMD and with -p, every type, the trace
lines and the summary in text and JSON, slot exhaustion, and each bad
input refused before anything is started or touched.

Every assertion is exact (counts, names, values, statuses); none depends on
how fast anything runs. Output: TAP lines and `N passed, M failed`.

Environment (tests/cli/meson.build): NP_CLI, NP_PROG_WATCHED.
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results  # noqa: E402
from session import clean_env, session_ready  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("NP_BUILD_DIR", os.path.join(ROOT, "build"))
NANOPROBE = os.environ.get("NP_CLI") or os.path.join(BUILD, "tools/nanoprobe/nanoprobe")
WATCHED = os.environ.get("NP_PROG_WATCHED") or os.path.join(BUILD, "tests/cli/watched")
TIMEOUT = 60
ENV = clean_env()

R = Results()
# A sanitizer build pads every global with a red zone, which its symbol's
# size includes: there the specs say the length the variable has.
SANITIZED = os.path.exists(WATCHED) and any(
    rt in open(WATCHED, "rb").read() for rt in (b"libasan", b"libclang_rt.asan"))
LEN = {"total": 8, "flag": 4, "spare1": 8, "spare2": 8}


def v(spec):
    """The spec of a variable, its length explicit in sanitizer builds."""
    name, _, rest = spec.partition(":")
    return f"{name}:{LEN[name]}" + (f":{rest}" if rest else "") if SANITIZED else spec

LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<tid>\d+)\s+\[(?P<cpu>\d{3})\]\s+(?P<ts>\d+\.\d{6}): "
                  r"watch:(?P<watch>\S+): \((?P<after>after )?(?P<pc>0x[0-9a-f]+)\) "
                  r"(?P<sym>\S+(?: \([^)]*\))?)(?P<vals>.*)$")


OUT = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"np-watch-test-{os.getpid()}.out")


def watch(*args):
    """`nanoprobe watch -o FILE ARGS`: its results apart from the program's
    output (both would share stdout). stdout becomes the results."""
    if os.path.exists(OUT):
        os.unlink(OUT)
    p = run([NANOPROBE, "watch", "-o", OUT] + [str(a) for a in args])
    results = open(OUT).read() if os.path.exists(OUT) else ""
    return subprocess.CompletedProcess(p.args, p.returncode, results,
                                       p.stderr + "\n[program's stdout]\n" + p.stdout)


def run(args, input=None, timeout=TIMEOUT):
    p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE if input is not None
                         else subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\n[test: killed after {timeout} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def describe(p):
    return (f"command: {' '.join(map(str, p.args))}\nstatus: {p.returncode}\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def hw_watchpoints():
    """Whether the kernel gives this process hardware breakpoints."""
    p = run([NANOPROBE, "watch", "flag", "--", WATCHED, 0])
    return "no hardware breakpoints" not in p.stderr and "not allowed" not in p.stderr


def plain(*args):
    return run([WATCHED] + [str(a) for a in args]).stdout


def json_output(text):
    """(events, summary) of `watch -j`: each access is {"type": "access",
    "data": EVENT}, the summary {"type": "summary", ...}."""
    events, summary = [], None
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        R.check(obj.get("type") in ("access", "summary"), "a JSON line's type", line)
        if obj.get("type") == "summary":
            summary = obj
        else:
            events.append(obj.get("data", {}))
    return events, summary


def by_sym(events, watch):
    counts = {}
    for e in events:
        if e["event"] == watch:
            name = e["sym"].split("+")[0]
            counts[name] = counts.get(name, 0) + 1
    return counts


# --------------------------------------------------------------------------


def started_exact():
    """-- CMD: 4 writers born after the attach, 500 stores each."""
    R.case = "-- CMD"
    p = watch("-j", v("total"), "--", WATCHED, 4, 500)
    R.eq(p.returncode, 0, "exit 0", describe(p))
    events, summary = json_output(p.stdout)
    R.eq(p.stderr.split("[program's stdout]\n")[1], plain(4, 500),
         "the program's output is that of a plain run")
    R.eq(len(events), 2000, "one event per store", describe(p))
    R.eq(by_sym(events, "total"), {"bump": 2000}, "every store is bump's")
    R.check(all(e["exact"] and e["sym"].startswith("bump+") for e in events),
            "each names the storing instruction")
    per_tid = {}
    for e in events:
        per_tid[e["tid"]] = per_tid.get(e["tid"], 0) + 1
    R.eq(sorted(per_tid.values()), [500] * 4, "500 from each of 4 threads")
    R.check(all(e["pid"] not in per_tid for e in events), "none from the main thread")
    news = sorted(e["new"] for e in events)
    R.eq(news[-1], 2000, "the last value is the total")
    R.check(summary is not None, "a summary line", describe(p))
    if summary:
        w = summary["watches"][0]
        R.eq((w["watch"], w["len"], w["type"], w["placed"], w["hits"], w["missed"]),
             ("total", 8, "w", True, 2000, 0), "the watch's totals")
        R.eq([(x["sym"].split("+")[0], x["count"], len(x["tids"])) for x in summary["writers"]],
             [("bump", 2000, 4)], "one writer: bump, 2000 stores, 4 threads")


def text_lines():
    R.case = "text"
    p = watch(v("total"), v("flag"), "--", WATCHED, 2, 3)
    R.eq(p.returncode, 0, "exit 0", describe(p))
    lines = [LINE.match(l) for l in p.stdout.splitlines()]
    events = [m for m in lines if m]
    R.eq(len(events), 7, "6 stores to total, 1 to flag", describe(p))
    R.eq(sorted(set((m["watch"], m["sym"].split("+")[0]) for m in events)),
         [("flag", "reset"), ("total", "bump")], "named by their writers")
    R.check(all(not m["after"] for m in events), "every pc exact")
    flag = [m for m in events if m["watch"] == "flag"]
    R.eq(flag[0]["vals"] if flag else None, " old=0 new=1", "flag's old and new value")
    tail = p.stdout[p.stdout.find("\nWATCH"):].split("\n")
    R.check(tail[1].split()[:2] == ["WATCH", "COUNT"], "a summary table", describe(p))
    rows = [r.split() for r in tail[2:] if r.strip()]
    R.eq(sorted((r[0], r[1], r[2].split("+")[0], len(r) - 3) for r in rows),
         [("flag", "1", "reset", 1), ("total", "6", "bump", 2)],
         "summary: per writer, its count and threads", describe(p))
    R.check(p.stderr.startswith("Watching total (8 bytes, w), flag (4 bytes, w)"),
            "the banner says what is watched", describe(p))


def types():
    R.case = "rw and x"
    p = watch("-j", v("total:rw"), "tick:x", "--", WATCHED, 2, 10, 3)
    R.eq(p.returncode, 0, "exit 0", describe(p))
    events, summary = json_output(p.stdout)
    total = by_sym(events, "total")
    R.eq((total.get("bump"), total.get("peek")), (20, 3), "rw: 20 stores by bump, 3 loads by peek",
         describe(p))
    R.eq(by_sym(events, "tick"), {"tick": 7}, "x: 7 calls of tick")
    ticks = [e for e in events if e["event"] == "tick"]
    R.check(all("old" not in e and e["pc"] == e["addr"] for e in ticks),
            "x: at the instruction, no value")
    peeks = [e for e in events if e["sym"].startswith("peek")]
    R.check(all(not e["changed"] and e["old"] == e["new"] == 20 for e in peeks),
            "rw: a load reads 20, unchanged")


def slots_exhausted():
    R.case = "slots"
    # 4 debug registers per thread on x86-64, shared by every type: the
    # fifth watch is refused, the four others run
    p = watch("-j", v("total"), v("flag"), v("spare1:rw"), v("spare2"), "tick:x", "--", WATCHED,
              1, 5, 0)
    R.eq(p.returncode, 0, "exit 0: four are placed", describe(p))
    R.check("cannot place watch:tick" in p.stderr and "debug registers" in p.stderr,
            "the fifth is refused, with the reason", describe(p))
    events, summary = json_output(p.stdout)
    placed = {w["watch"]: (w["placed"], w["hits"]) for w in summary["watches"]}
    R.eq(placed, {"total": (True, 5), "flag": (True, 1), "spare1": (True, 1),
                  "spare2": (True, 1), "tick": (False, 0)}, "placed and counted", describe(p))
    # the same bytes twice: one access, one signal; refused
    p = watch("-j", v("total"), v("total:rw"), "--", WATCHED, 1, 5, 0)
    R.check("overlaps watch" in p.stderr, "overlapping watches: the second is refused",
            describe(p))
    events, summary = json_output(p.stdout)
    R.eq([(w["type"], w["placed"], w["hits"]) for w in summary["watches"]],
         [("w", True, 5), ("rw", False, 0)], "the first counts every store", describe(p))


def bad_inputs():
    R.case = "bad input"
    cases = [
        (["total:3"], 1, "length 3: x86-64 debug registers watch 1, 2, 4 or 8 bytes"),
        (["total+1:4"], 1, "0x"),  # the vaddr, then the reason below
        (["total:16"], 1, "length 16"),
        (["tick"], 1, "'tick' is a function: watch its execution with :x"),
        (["total:x"], 1, "'total' is not a function"),
        (["nosuch"], 1, "unknown symbol 'nosuch'"),
        (["total:r"], 2, "use rw"),
        (["total+8:8"], 1, "go past the end of total"),
    ]
    if SANITIZED:  # the symbols' sizes include red zones
        cases = [c for c in cases if c[0][0] not in ("total+8:8", "total+1:4")]
    for spec, status, msg in cases:
        p = run([NANOPROBE, "watch"] + spec + ["--", WATCHED, 1, 1])
        R.eq(p.returncode, status, f"{spec[0]}: exit {status}", describe(p))
        R.check(msg in p.stderr, f"{spec[0]}: says why", describe(p))
        R.check("watched:" not in p.stdout, f"{spec[0]}: the program never ran", describe(p))
    p = run([NANOPROBE, "watch", "total+1:4", "--", WATCHED, 1, 1])
    R.check("not 4-byte aligned" in p.stderr, "misaligned: says so", describe(p))
    R.check("watched:" not in p.stdout, "misaligned: the program never ran", describe(p))
    # an address that is not mapped: found by the agent, before main
    p = run([NANOPROBE, "watch", "0x10", "--", WATCHED, 1, 1])
    R.eq(p.returncode, 1, "0x10: exit 1", describe(p))
    R.check("nothing is mapped at 0x10" in p.stderr, "0x10: says nothing is mapped",
            describe(p))
    R.check("watched:" not in p.stdout, "0x10: the program never ran its main", describe(p))


class Waiting:
    """watched --wait: says ready, runs on a line, says done, ends at EOF."""

    def __init__(self, *args):
        self.p = subprocess.Popen([WATCHED, "--wait"] + [str(a) for a in args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=ENV, start_new_session=True)
        self.pid = self.p.pid
        self.buf = b""
        self.first = self.readline()

    def readline(self):
        """One line, read from the descriptor itself (select() cannot see
        what a buffered reader holds)."""
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
        return line.decode()

    def go(self):
        self.p.stdin.write(b"go\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.readline()
            if line is None or line == "done":
                return lines
            lines.append(line)

    def end(self):
        self.p.stdin.close()
        try:
            return self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None

    def maps(self):
        with open(f"/proc/{self.pid}/maps") as f:
            return f.read()




def attached():
    R.case = "-p"
    prog = Waiting(3, 300, 2)
    R.eq(prog.first, "ready", "the program waits")
    np = subprocess.Popen([NANOPROBE, "watch", "-j", "-p", str(prog.pid), v("total"), v("flag")],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    R.check(session_ready(np), "the session is set up")
    lines = prog.go()
    np.send_signal(signal.SIGINT)
    out, err = np.communicate(timeout=TIMEOUT)
    res = subprocess.CompletedProcess(np.args, np.returncode, out, err)
    R.eq(np.returncode, 0, "nanoprobe exits 0", describe(res))
    events, summary = json_output(out)
    R.eq(by_sym(events, "total"), {"bump": 900}, "900 stores by bump, from threads born "
         "after the attach", describe(res))
    R.eq([(e["tid"] == prog.pid, e["sym"].split("+")[0]) for e in events if e["event"] == "flag"],
         [(True, "reset")], "the store to flag, from the main thread alive at attach")
    R.eq(lines, ["watched: total=900 seen=1800 ticks=49 flag=1"], "the program's own output")
    R.check("libnanoprobe-agent" in prog.maps(), "the agent stays loaded, idle")
    R.eq(prog.end(), 0, "the program goes on and exits 0 after the session")


def bad_input_attached():
    R.case = "bad input -p"
    prog = Waiting(1, 1, 0)
    p = run([NANOPROBE, "watch", "-p", prog.pid, "0x10"])
    R.eq(p.returncode, 1, "exit 1", describe(p))
    R.check(f"nothing is mapped at 0x10 in process {prog.pid}" in p.stderr,
            "says nothing is mapped there", describe(p))
    R.check("libnanoprobe-agent" not in prog.maps(), "the process was not touched")
    prog.go()
    R.eq(prog.end(), 0, "the program runs on")


def main():
    if not hw_watchpoints():
        R.skip("watch", "no hardware watchpoints for user space here")
        bad_inputs()
        return R.summary()
    for fn in (started_exact, text_lines, types, slots_exhausted, bad_inputs, attached,
               bad_input_attached):
        try:
            fn()
        except Exception as e:  # a crash of the test is a failure, not a stop
            R.check(False, f"{fn.__name__} raised", repr(e))
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
