#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""USDT probes in `nanoprobe run` (usdt:PATH:[PROVIDER:]NAME) against
tests/cli/progs/usdt.c: every argument form of a stapsdt note read right,
one probe at several sites, semaphores raised while the probes are placed
and lowered after (with -- CMD and with -p), the probes placed as jumps,
notes of a prelinked file, a library's probes, and each bad attach point
refused with a message that names it.

Every assertion is exact (values, counts, statuses); none depends on how
fast anything runs. Output: TAP lines and `N passed, M failed`.

Environment (tests/cli/meson.build): NP_CLI, NP_PROG_USDT, NP_USDT_LIB,
NP_PROG_COUNTER. Arguments: names (substrings) of the cases to run.
"""
import os
import re
import select
import shutil
import signal
import struct
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
USDT = os.environ.get("NP_PROG_USDT") or os.path.join(BUILD, "tests/cli/usdt")
LIB = os.environ.get("NP_USDT_LIB") or os.path.join(BUILD, "tests/cli/libusdt_lib.so")
COUNTER = os.environ.get("NP_PROG_COUNTER") or os.path.join(BUILD, "tests/cli/counter")
TIMEOUT = 60
ENV = clean_env()

R = Results()
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def run(args, env=None, input=None):
    p = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE if input else
                         subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env or ENV, start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\n[test: killed after {TIMEOUT} s]"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def np_run(prog, *args, env=None):
    return run([NANOPROBE, "run", "-e", prog] + list(args), env=env)


def describe(p):
    return (f"command: {' '.join(map(str, p.args))}\nstatus: {p.returncode}\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def maps_of(out):
    """{key: value} of the `@name[key]: value` lines, and the other lines."""
    maps, other = {}, []
    for line in out.splitlines():
        m = re.match(r"^(@\w*(?:\[.*\])?): (.*)$", line)
        if m:
            maps[m.group(1)] = m.group(2)
        elif line.strip() and not line.startswith("Attaching "):
            other.append(line)
    return maps, other


def summary(out):
    """The program's own last line: rounds=, guarded=, lib_guarded=."""
    m = re.search(r"usdt: rounds=(\d+) guarded=(\d+) lib_guarded=(\d+) sum=(-?\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


def plain(rounds):
    p = run([USDT, str(rounds)])
    return summary(p.stdout)


# --------------------------------------------------------------------------
# What the program's probes carry (usdt.c, usdt_x86_64.S), per round r

TABLE = [11, -22, 33, -44, -55]


def forms_of(r):
    """usdt_asm:forms' twelve arguments as %d prints them."""
    i = r % 4
    return [-r, r, -5, TABLE[i + 1], TABLE[i], r, -200, r & 0xff, 0x2345, 0xff380064, -3, -55]


def as_d(v):
    """bpftrace's %d of a 64-bit value."""
    v &= 2**64 - 1
    return v - 2**64 if v >= 2**63 else v


# --------------------------------------------------------------------------


@case
def every_argument_form_is_read_right():
    """Registers of each width (a high byte too), constants, base + index *
    scale + displacement, the red zone below sp, globals through a symbol:
    each the value the program computed, extended as its size says."""
    args = ", ".join(f"arg{i}" for i in range(12))
    p = np_run(f'usdt:{USDT}:usdt_asm:forms {{ printf("{" ".join(["%d"] * 12)}\\n", {args}); }}',
               "--", USDT, "6")
    want = [" ".join(str(as_d(v)) for v in forms_of(r)) for r in range(6)]
    got = [l for l in p.stdout.splitlines() if re.match(r"^-?\d", l)]
    R.eq(p.returncode, 0, "ran", describe(p))
    R.eq(got, want, "twelve arguments, six rounds", describe(p))
    # the C probe: int, unsigned long, short from registers GCC chose
    p = np_run(f'usdt:{USDT}:usdt_test:args {{ printf("%d %d %d\\n", arg0, arg1, arg2); }}',
               "--", USDT, "4")
    got = [l for l in p.stdout.splitlines() if re.match(r"^-?\d", l)]
    R.eq(got, [f"{-r} {r * 1000} {r - 5}" for r in range(4)], "usdt_test:args", describe(p))


@case
def arguments_are_64_bit_integers_sign_extended_as_bpftrace_types_them():
    """bpftrace types a USDT argument uint64, its value sign-extended from a
    signed size: a sum of -r prints as an unsigned 64-bit number, a cast
    makes it signed again."""
    p = np_run(f"usdt:{USDT}:usdt_test:args {{ @s = sum(arg0); @c[(int32)arg0] = count(); "
               f"@neg = sum((int64)arg0 < 0); }}", "--", USDT, "4")
    maps, _ = maps_of(p.stdout)
    R.eq(maps.get("@s"), str(2**64 - 6), "sum of -0..-3", describe(p))
    R.eq({k: v for k, v in maps.items() if k.startswith("@c[")},
         {"@c[0]": "1", "@c[-1]": "1", "@c[-2]": "1", "@c[-3]": "1"}, "(int32) keys", describe(p))
    R.eq(maps.get("@neg"), "3", "(int64)arg0 < 0", describe(p))


@case
def one_probe_at_two_sites():
    """usdt_test:twice is inlined twice: both sites are probed (and each
    counts in "Attaching N probes", as bpftrace counts them), and `probe`
    is one map key for both."""
    p = np_run(f"usdt:{USDT}:usdt_test:twice {{ @[arg0] = count(); }}", "--", USDT, "3")
    maps, _ = maps_of(p.stdout)
    want = {f"@[{v}]": "1" for r in range(3) for v in (r, r + 100)}
    R.eq(maps, want, "both sites' values", describe(p))
    R.check("Attaching 2 probes..." in p.stdout, "two sites", describe(p))


@case
def wildcards_and_a_name_without_its_provider():
    p = np_run(f"usdt:{USDT}:usdt_test:* {{ @[probe] = count(); }}", "--", USDT, "2")
    maps, _ = maps_of(p.stdout)
    want = {f"@[usdt:{USDT}:usdt_test:{n}]": c for n, c in
            (("tick", "2"), ("args", "2"), ("twice", "4"))}
    R.eq(maps, want, "usdt_test:*", describe(p))
    p = np_run(f"usdt:{USDT}:*:args {{ @[probe] = count(); }}", "--", USDT, "2")
    maps, _ = maps_of(p.stdout)
    want = {f"@[usdt:{USDT}:{prov}:args]": "2" for prov in ("usdt_test", "usdt_asm")}
    R.eq(maps, want, "*:args: both providers", describe(p))
    p = np_run(f"usdt:{USDT}:tick {{ @[probe] = count(); }}", "--", USDT, "2")
    maps, _ = maps_of(p.stdout)
    R.eq(maps, {f"@[usdt:{USDT}:usdt_test:tick]": "2"}, "a name one provider has", describe(p))


@case
def semaphores_are_raised_while_attached():
    """Without a probe on them the guarded probes never run; with one, each
    round runs them (the program counts how often it saw its semaphore
    raised), in the program and in its library."""
    R.eq(plain(5)[1:3], (0, 0), "unprobed: never raised")
    p = np_run(f"usdt:{USDT}:usdt_test:tick {{ @t = count(); }}", "--", USDT, "5")
    R.eq(summary(p.stdout)[1:3], (0, 0), "another probe of the program raises neither",
         describe(p))
    prog = (f"usdt:{USDT}:usdt_sema:guarded {{ @g = count(); @v = sum(arg0); }} "
            f"usdt:{LIB}:usdt_lib:lib_probe {{ @l = count(); @sq = sum(arg1); }}")
    for strategy in ("auto", "jump", "trap"):
        p = np_run(prog, "--strategy", strategy, "--", USDT, "5")
        maps, _ = maps_of(p.stdout)
        R.eq(summary(p.stdout), (5,) + (5, 5) + plain(5)[3:], f"{strategy}: raised each round",
             describe(p))
        R.eq((maps.get("@g"), maps.get("@v"), maps.get("@l"), maps.get("@sq")),
             ("5", "10", "5", "30"), f"{strategy}: every hit, its arguments", describe(p))


class Serve:
    """usdt --serve: a line in, the summary (or the semaphores) out."""

    def __init__(self):
        self.p = subprocess.Popen([USDT, "--serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  env=ENV, start_new_session=True)
        self.pid = self.p.pid
        self.buf = b""
        assert self.ask(None) == "ready"

    def ask(self, line):
        """Its answer, read with os.read: a buffered reader may hold lines
        that select() then does not see."""
        if line is not None:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
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
        answer, self.buf = self.buf.split(b"\n", 1)
        return answer.decode().strip()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=TIMEOUT)






@case
def semaphores_of_a_running_process_are_lowered_after():
    """-p: raised for the session only; the process goes on with them
    lowered, as it was before."""
    if not ptrace_allowed():
        R.skip("-p", "ptrace of non-children is not allowed here (yama)")
        return
    srv = Serve()
    try:
        R.eq(srv.ask("3"), "usdt: rounds=3 guarded=0 lib_guarded=0 sum=3303", "before")
        prog = (f"usdt:{USDT}:usdt_sema:guarded {{ @g = count(); }} "
                f"usdt:{LIB}:usdt_lib:lib_probe {{ @l = count(); }}")
        cmd = subprocess.Popen([NANOPROBE, "run", "-p", str(srv.pid), "-e", prog],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=ENV, start_new_session=True)
        R.check(session_ready(cmd), "session set up")
        R.eq(srv.ask("sema"), "sema=1 lib_sema=1", "raised while attached")
        during = srv.ask("4")
        cmd.send_signal(signal.SIGINT)
        out, err = cmd.communicate(timeout=TIMEOUT)
        maps, _ = maps_of(out)
        R.eq(during.split(" sum=")[0], "usdt: rounds=7 guarded=4 lib_guarded=4",
             "each round ran them", f"{out}\n{err}")
        R.eq((maps.get("@g"), maps.get("@l")), ("4", "4"), "every hit counted", f"{out}\n{err}")
        R.eq(srv.ask("sema"), "sema=0 lib_sema=0", "lowered after")
        R.eq(srv.ask("2").split(" sum=")[0], "usdt: rounds=9 guarded=4 lib_guarded=4",
             "not run after")
    finally:
        srv.close()


@case
def probes_are_jumps():
    """Forced to JUMP, every site of the program is placed (a 1-byte nop
    followed by code the jump may displace with it)."""
    for probe in ("usdt_test:tick", "usdt_test:args", "usdt_test:twice", "usdt_asm:forms",
                  "usdt_asm:args", "usdt_sema:guarded"):
        p = np_run(f"usdt:{USDT}:{probe} {{ @ = count(); }}", "--strategy", "jump", "--", USDT,
                   "3")
        maps, _ = maps_of(p.stdout)
        want = "6" if probe.endswith("twice") else "3"
        R.eq((p.returncode, maps.get("@"), "cannot place" in p.stderr), (0, want, False), probe,
             describe(p))


@case
def the_stack_at_a_site():
    p = np_run(f"usdt:{USDT}:usdt_test:args {{ @[ustack(2)] = count(); }}", "--", USDT, "3")
    frames = [l.strip() for l in p.stdout.splitlines() if l.startswith("    ")]
    R.check(len(frames) == 2 and frames[0].startswith("args+") and "]: 3" in p.stdout,
            "the probe's function, then its caller", describe(p))


def rewrite_notes(path, delta):
    """A prelinked file's notes: every address the notes hold (the nop, the
    recorded .stapsdt.base, the semaphore) moved by -delta, as if the file's
    sections had moved by delta after linking."""
    data = bytearray(open(path, "rb").read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    sh = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = sh[shstrndx][4]
    n = 0
    for s in sh:
        name = data[strtab + s[0]:data.index(0, strtab + s[0])].decode()
        if name != ".note.stapsdt":
            continue
        off, end = s[4], s[4] + s[5]
        while off < end:
            namesz, descsz, _ = struct.unpack_from("<III", data, off)
            desc = off + 12 + ((namesz + 3) & ~3)
            for k in range(3):
                v, = struct.unpack_from("<Q", data, desc + 8 * k)
                if v:
                    struct.pack_into("<Q", data, desc + 8 * k, v - delta)
            off = desc + ((descsz + 3) & ~3)
            n += 1
    return data, n


@case
def notes_of_a_prelinked_file_are_moved_back():
    """The addresses in the notes are as old as .stapsdt.base's recorded
    one: the difference to the section's address now moves both the sites
    and the semaphores."""
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "usdt")
        data, n = rewrite_notes(USDT, 0x1000)
        with open(copy, "wb") as f:
            f.write(data)
        os.chmod(copy, 0o755)
        R.check(n >= 7, f"{n} notes rewritten")
        env = dict(ENV, LD_LIBRARY_PATH=os.path.dirname(LIB))
        prog = (f"usdt:{copy}:usdt_sema:guarded {{ @g = count(); }} "
                f"usdt:{copy}:usdt_test:args {{ @a = sum(arg1); }}")
        p = np_run(prog, "--", copy, "4", env=env)
        maps, _ = maps_of(p.stdout)
        R.eq((summary(p.stdout) or (0, 0))[1], 4, "the semaphore where it is", describe(p))
        R.eq((maps.get("@g"), maps.get("@a")), ("4", "6000"), "the sites where they are",
             describe(p))


@case
def a_library_by_its_short_name():
    p = np_run("usdt:libusdt_lib.so:usdt_lib:lib_probe { @[arg0] = sum(arg1); }", "--", USDT, "3")
    maps, _ = maps_of(p.stdout)
    R.eq(maps, {"@[0]": "0", "@[1]": "1", "@[2]": "4"}, "found as the program loads it",
         describe(p))


@case
def bad_attach_points_are_refused_by_name():
    """Nothing is started: the message names the bad part."""
    tick = f"usdt:{USDT}:usdt_test:tick"
    cases = [
        (f"usdt:{USDT}:nope:tick {{ @ = count(); }}", 1, "no USDT probe 'nope:tick'"),
        (f"usdt:{USDT}:usdt_test:nope {{ @ = count(); }}", 1, "usdt_test:tick"),
        (f"usdt:{COUNTER}:p:n {{ @ = count(); }}", 1, "has no USDT probes"),
        (f"usdt:{USDT}:args {{ @ = count(); }}", 1, "providers usdt_test and usdt_asm"),
        (f"{tick} {{ @[arg0] = count(); }}", 1, "usdt_test:tick has 0 arguments"),
        (f"usdt:{USDT}:usdt_sema:guarded {{ @[arg1] = count(); }}", 1, "arg1 does not exist"),
        (f"usdt:/nonexistent/x:p:n {{ @ = count(); }}", 1, "No such file"),
        (f"usdt:{USDT} {{ @ = count(); }}", 2, "usdt:PATH:[PROVIDER:]NAME"),
        (f"usdt:{USDT}:a:b:c {{ @ = count(); }}", 2, "usdt:PATH:[PROVIDER:]NAME"),
        (f"{tick} {{ @ = arg12; }}", 2, "at most 12 arguments"),
        (f"{tick} {{ @[func] = count(); }}", 2, "func builtin can not be used with 'usdt'"),
        (f"{tick} {{ @ = sarg0; }}", 2, "only be used with 'uprobe'"),
        (f"{tick} {{ @ = retval; }}", 2, "uretprobe"),
    ]
    for prog, status, msg in cases:
        p = np_run(prog, "--", USDT, "1")
        R.check(p.returncode == status and msg in p.stderr and "usdt: rounds" not in p.stdout,
                f"{prog.split(' {')[0]}: {msg}", describe(p))
    # the file's probes are listed when none matches
    p = np_run(f"usdt:{USDT}:usdt_test:nope {{ @ = count(); }}", "--", USDT, "1")
    for name in ("usdt_test:args", "usdt_asm:forms", "usdt_sema:guarded"):
        R.check(name in p.stderr, f"lists {name}", describe(p))


def main():
    return run_cases(R, CASES, [NANOPROBE, USDT, LIB, COUNTER], sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
