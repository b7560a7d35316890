#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential runs of programs nobody here wrote (issue 4).

Each program from a Debian package runs three ways on the same input:
plainly, under `nanoprobe count --strategy auto` and under
`nanoprobe count --strategy trap`, with probes on
  (a) every function entry and every return of the program and of libc
      (and of the library that does the program's work, for sqlite3);
  (b) every instruction of the program's and libc's busiest small
      functions (chosen from the counts of (a), so no list goes stale).
Its exit status, stdout and stderr must be the same every time, and the
counts of the two strategies must agree probe by probe: TRAP places one
breakpoint per probe and counts each in the signal handler, AUTO counts in
trampolines, so a JUMP that loses, duplicates or misroutes a hit shows as a
difference.

The runs are made without address-space randomisation, so that programs
whose work depends on addresses (hash tables keyed by pointers) do the
same work every time, and in an empty directory of their own that nothing
changes: `python3 -c` searches its working directory for every module it
imports (sys.path[0]), so a file appearing there between two runs (a
count file, another test's output) changed its counts (issue 17 item 7). A probe whose count still differs between two TRAP
runs of the same program is left out of the comparison and reported, and
so is one whose count follows the length of /proc/self/maps in a program
that reads it (MAPS_LINE_FUNCTIONS): trampolines are mappings.

On arm64 (NP_DIFF_ISA=arm64), the programs are Debian's arm64 builds,
unpacked by tests/reliability/debroot.py (never installed), run under
qemu-aarch64 with Debian's cross libc (/usr/aarch64-linux-gnu), by the same
host command with the arm64 agent (NANOPROBE_AGENT): the command reads the
arm64 files, starts qemu, and the agent, preloaded in the guest, places
the probes and counts. On riscv64 (NP_DIFF_ISA=riscv64) the same, under
qemu-riscv64, with Debian's riscv64 builds from a later release than the
host's (bookworm has no riscv64 port), unpacked with their libc by
cross/riscv64-sysroot.sh into a root that is also the guest's sysroot.

Output: `ok N - name` / `not ok N - name` lines, and `N passed, M failed`.
Arguments: names of programs to run (default: all). Environment: NP_CLI
(the nanoprobe command), NP_DIFF_SCALE (input size factor, default 1),
NP_DIFF_SAMPLE (run that many of the programs, picked at random, with
NP_DIFF_SAMPLE_SEED to repeat a pick);
for arm64 or riscv64 NP_DIFF_ISA, NP_DIFF_ROOT (the unpacked packages),
NP_DIFF_AGENT (the agent built for the ISA), NP_DIFF_SYSROOT (the guest's
libc: default /usr/aarch64-linux-gnu on arm64, NP_DIFF_ROOT on riscv64).
"""
import ctypes
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results, sample  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
NANOPROBE = os.path.abspath(os.environ.get("NP_CLI") or
                            os.path.join(ROOT, "build/tools/nanoprobe/nanoprobe"))
SCALE = float(os.environ.get("NP_DIFF_SCALE", "1"))
TIMEOUT = 600
HOT_FUNCTIONS = 2          # per file, for the every-instruction runs
HOT_MAX_BYTES = 400        # small enough to probe every instruction
RERUNS = 3                 # where AUTO and TRAP differ: runs to tell timing apart

ENV = {k: v for k, v in os.environ.items()
       if k not in ("LD_PRELOAD", "NANOPROBE_AGENT", "QEMU_SET_ENV", "QEMU_LD_PREFIX")}
ENV.update({"LC_ALL": "C", "DEBUGINFOD_URLS": "", "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1"})

ISA = os.environ.get("NP_DIFF_ISA", "x86_64")
DEBROOT = os.environ.get("NP_DIFF_ROOT", "")
# the emulator, the Debian multiarch triplet, the guest's default sysroot
GUESTS = {"arm64": ("qemu-aarch64", "aarch64-linux-gnu", "/usr/aarch64-linux-gnu"),
          "riscv64": ("qemu-riscv64", "riscv64-linux-gnu", DEBROOT)}
QEMU, MULTIARCH, DEFAULT_SYSROOT = GUESTS.get(ISA, (None, None, None))
# riscv64 (Debian's glibc 2.41 and later): a breakpoint hit while SIGTRAP
# is blocked kills the program, and that glibc runs sigaction(SIGABRT)
# with every signal blocked, under its abort lock (a rwlock):
# __libc_sigaction, the lock's functions, and the copies through memcpy's
# unnamed helpers (which cannot take a JUMP there: jump tables, no free
# register, no trampoline within jal's reach of libc under qemu). Forced
# TRAP there killed sort (docs/reliability.md). So libc's functions with a
# name only (not those .eh_frame alone shows), less these.
LIBC_NAMED_ONLY = ISA == "riscv64"
LIBC_LEFT_OUT = {"__libc_sigaction", "__pthread_rwlock_rdlock", "__pthread_rwlock_wrlock",
                 "__pthread_rwlock_unlock"}
SYSROOT = os.environ.get("NP_DIFF_SYSROOT", DEFAULT_SYSROOT)
# riscv64: return probes on named functions only (entries on every one),
# the set a fresh clone ran (the corpus probes every return under
# qemu-riscv64). arm64 and x86-64 take every return.
RETURNS_NAMED_ONLY = ISA == "riscv64"
# glibc's pthread_getattr_np finds the main thread's stack by reading
# /proc/self/maps line by line up to the stack's line (python3.14 calls it
# at its start, to bound its C stack). Trampolines and out-of-line copies
# are mappings of their own, and under qemu-user the text pages patched
# show as mappings of their own too: AUTO's process has more lines than
# TRAP's, and these functions run once or more per line. In a process that
# called it, a difference confined to them is left out and reported.
MAPS_LINE_FUNCTIONS = {"getline", "__getdelim", "__isoc23_sscanf", "__strtoul_internal",
                       "_IO_sputbackc", "_IO_setb", "memchr", "strlen", "__read_nocancel",
                       "__underflow", "_IO_switch_to_get_mode", "_IO_file_read",
                       "_IO_file_underflow"}


R = Results()


def note(msg):
    print(f"# {msg}", flush=True)


# --------------------------------------------------------------------------
# Inputs, generated the same way every time.

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima "
         "mike november oscar papa quebec romeo sierra tango uniform victor").split()


def make_inputs(d):
    rnd = random.Random(4)
    lines = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 9))) +
             f" {rnd.randint(0, 99999)}" for _ in range(int(3000 * SCALE))]
    paths = {"text": os.path.join(d, "corpus.txt"), "blob": os.path.join(d, "blob.bin")}
    with open(paths["text"], "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(paths["blob"], "wb") as f:
        f.write(bytes(rnd.getrandbits(8) if i % 7 else 0x41 for i in range(int(200000 * SCALE))))
    paths["sql"] = SQL.replace("ROWS", str(int(400 * SCALE)))
    return paths


PY_WORKLOAD = """
import json
rows = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)], "price": i * 1.25}
        for i in range(ROWS)]
for _ in range(4):
    rows = json.loads(json.dumps(rows, sort_keys=True))
print(len(rows), sum(r["price"] for r in rows), rows[-1]["name"])
"""

SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ROWS)
INSERT INTO t SELECT x, 'name' || (x * 7 % 101), x * 0.5 FROM c;
CREATE INDEX tn ON t(name);
SELECT name, count(*), sum(v) FROM t GROUP BY name ORDER BY name LIMIT 5;
SELECT count(*) FROM t WHERE name LIKE 'name1%';
UPDATE t SET v = v * 2 WHERE id % 3 = 0;
SELECT printf('%.2f', sum(v)) FROM t;
"""


def real(path):
    return os.path.realpath(path) if path and os.path.exists(path) else None


def guest_library_dirs():
    """Under qemu: where the guest's loader looks, in order (the cross
    libc first, see cross/aarch64-linux-gnu.ini), then the unpacked
    packages' libraries, then the multiarch ones (the arm64 agent's libelf;
    riscv64's comes unpacked with the programs)."""
    return [os.path.join(SYSROOT, "lib")] + \
        [os.path.join(DEBROOT, d, MULTIARCH) for d in ("lib", "usr/lib")] + \
        [os.path.join("/usr/lib", MULTIARCH)]


def guest_wrapper():
    """The command that runs a program of the ISA: nothing natively."""
    if ISA == "x86_64":
        return []
    return [QEMU, "-L", SYSROOT, "-E",
            "LD_LIBRARY_PATH=" + ":".join(guest_library_dirs())]


def program_path(name):
    if ISA == "x86_64":
        return real(f"/usr/bin/{name}")
    found = [os.path.join(DEBROOT, d, name) for d in ("usr/bin", "bin")]
    return real(next((f for f in found if os.path.exists(f)), None))


def python3_path():
    """The interpreter itself, not /usr/bin/python3's symlink: its functions
    are the ones probed. Unpacked, it finds its standard library beside
    itself (sys.prefix is DEBROOT/usr)."""
    if ISA == "x86_64":
        return real(shutil.which("python3", path="/usr/bin"))
    return program_path("python3")


def library_path(soname):
    """The copy of a library the program's dynamic linker finds."""
    if ISA != "x86_64":
        found = [os.path.join(d, soname) for d in guest_library_dirs()]
        return real(next((f for f in found if os.path.exists(f)), None))
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    found = [l.split("=>")[-1].strip() for l in out.splitlines()
             if l.strip().startswith(soname + " ")]
    native = [f for f in found if "x86-64" in f or "/x86_64-" in f or "/lib64" in f]
    return real((native or found or [None])[0])


def linked_library(program, soname):
    """soname's path when program names it among the libraries it needs
    (in its dynamic string table): Debian's later sqlite3 builds have the
    library inside the program."""
    with open(program, "rb") as f:
        return library_path(soname) if (soname.encode() + b"\0") in f.read() else None


def programs(inputs):
    """name -> (argv, stdin bytes or None, extra files whose functions to probe)."""
    rows = str(int(300 * SCALE))
    progs = {
        "sort": ([program_path("sort"), "--parallel=1", "-S", "16M", "-k2", inputs["text"]],
                 None, []),
        "sha256sum": ([program_path("sha256sum"), inputs["blob"], inputs["text"]], None, []),
        "grep": ([program_path("grep"), "-n", "-E", "(alpha|kilo) [a-z]+ [0-9]+7$",
                  inputs["text"]], None, []),
        "gzip": ([program_path("gzip"), "-c", "-6", inputs["blob"]], None, []),
        "python3": ([python3_path(), "-c",
                     PY_WORKLOAD.replace("ROWS", rows)], None, []),
        "sqlite3": ([program_path("sqlite3"), ":memory:"], inputs["sql"].encode(),
                    [linked_library(program_path("sqlite3"), "libsqlite3.so.0")]),
    }
    return progs


# --------------------------------------------------------------------------
# Running

def no_aslr():
    """In the child, before exec: no address-space randomisation (the
    personality is inherited by nanoprobe's program too)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.personality(0x0040000)  # ADDR_NO_RANDOMIZE


RUN_DIR = None  # the runs' working directory: empty, never written (main)


def run(argv, stdin=None, env=ENV):
    """In a session of its own: on a timeout the program nanoprobe started
    (qemu, under another ISA) goes too, not only nanoprobe."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, preexec_fn=no_aslr,
                         start_new_session=True, cwd=RUN_DIR)
    try:
        out, err = p.communicate(stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, err = p.communicate()
        err += f"\n(killed after {TIMEOUT} s)".encode()
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def probed(strategy, specs, argv, stdin, out, verb="count"):
    """The program under `nanoprobe VERB`; the counts are count's (per
    probe), the file out holds what the verb wrote (-j)."""
    cmd = [NANOPROBE, verb, "-j", "-o", out, "--strategy", strategy] + specs + ["--"] + \
        guest_wrapper() + argv
    env = dict(ENV)
    if ISA != "x86_64":
        env["NANOPROBE_AGENT"] = os.environ["NP_DIFF_AGENT"]
    if os.path.exists(out):
        os.unlink(out)  # a run that writes none must not read the last one's
    p = run(cmd, stdin, env)
    counts, refused = {}, set()
    try:
        with open(out) as f:
            for row in json.load(f)["counts"] if verb == "count" else []:
                key = f"{row['path']}:{row['probe']}"
                counts[key] = row["count"]
                if not row["placed"]:
                    refused.add(key)
    except (OSError, ValueError, KeyError):
        pass
    err_lines = p.stderr.decode(errors="replace").splitlines()
    own = [l for l in err_lines if l.startswith("nanoprobe")]
    program_err = "\n".join(l for l in err_lines if not l.startswith(("nanoprobe", "Tracing ")))
    return p, counts, refused, own, program_err


def same_outcome(label, plain, p, program_err):
    detail = (f"status {p.returncode} (plain {plain.returncode})\n"
              f"stderr:\n{p.stderr.decode(errors='replace')[-2000:]}")
    ok = R.check(p.returncode == plain.returncode, f"{label}: same exit status", detail)
    ok &= R.check(p.stdout == plain.stdout, f"{label}: same stdout",
                  f"{len(p.stdout)} bytes, plain {len(plain.stdout)}")
    ok &= R.check(program_err == plain.stderr.decode(errors="replace").rstrip("\n"),
                  f"{label}: same stderr", program_err[-2000:])
    return ok


def refusal_reasons(own):
    """`nanoprobe VERB: cannot place G:E[ at PATH+0xN]: WHY` -> {WHY: n}."""
    reasons = {}
    for line in own:
        if re.match(r"nanoprobe( \w+)?: cannot place ", line):
            why = re.sub(r"0x[0-9a-f]+", "ADDR", line.split(": ", 2)[-1])
            why = why.rsplit("cannot probe ADDR: ", 1)[-1]
            reasons[why] = reasons.get(why, 0) + 1
    return reasons


def losses(own):
    """nanoprobe's own reports of hits it could not count."""
    return [l for l in own if "not recorded" in l or "lost" in l or "corrupt" in l
            or "never placed" in l or "killed" in l or "closed the connection" in l]


# --------------------------------------------------------------------------
# The comparison

def differing(x, y, skip=()):
    return {k for k in set(x) | set(y) if k not in skip and x.get(k) != y.get(k)}


def one_run(label, strategy, specs, argv, stdin, plain, out, check=True):
    p, counts, refused, own, perr = probed(strategy, specs, argv, stdin, out)
    if check:
        same_outcome(f"{label} {strategy}", plain, p, perr)
        R.check(not losses(own), f"{label} {strategy}: nothing lost or refused at run time",
                "\n".join(losses(own)))
        if refused:
            note(f"{label} {strategy}: {len(refused)} probes refused at attach: "
                 + ", ".join(sorted(refused)[:6]))
            for why, n in sorted(refusal_reasons(own).items(), key=lambda kv: -kv[1])[:8]:
                note(f"    {n} x {why}")
    return counts, refused


def function_of(key):
    """PATH:FUNC[+OFF][%return] -> FUNC"""
    return re.split(r"[+%]", key.rsplit(":", 1)[1])[0]


def read_its_maps(counts):
    return any(function_of(k) == "pthread_getattr_np" and v for k, v in counts.items())


def differential(label, specs, argv, stdin, plain, tmp, reads_maps=False):
    """Plain vs AUTO vs TRAP. Where the counts differ, both run again (up
    to RERUNS times): a count that changes between runs of one strategy
    depends on timing (a lock contended by the agent's thread, or not), not
    on how probes are placed. A stable difference in the functions that
    read /proc/self/maps, in a process that read it (reads_maps, or seen
    in these counts), is the map's length (MAPS_LINE_FUNCTIONS).
    Returns the AUTO counts and (probes, refused, compared, hits)."""
    out = os.path.join(tmp, "counts.json")
    auto, ra = one_run(label, "auto", specs, argv, stdin, plain, out)
    trap, rt = one_run(label, "trap", specs, argv, stdin, plain, out)
    refused = ra | rt  # by either: nothing to compare
    diffs, unstable, by_maps = differing(auto, trap, refused), set(), set()
    if reads_maps or read_its_maps(auto) or read_its_maps(trap):
        by_maps = {k for k in diffs if function_of(k) in MAPS_LINE_FUNCTIONS}
        diffs -= by_maps
    if by_maps:
        note(f"{label}: {len(by_maps)} left out, counts that follow the length of "
             "/proc/self/maps (pthread_getattr_np reads it), auto/trap: "
             + ", ".join(f"{k.rsplit('/', 1)[-1]} {auto.get(k)}/{trap.get(k)}"
                         for k in sorted(by_maps)[:8]))
    for _ in range(RERUNS):
        if not diffs:
            break
        auto2, _ = one_run(label, "auto", specs, argv, stdin, plain, out, check=False)
        trap2, _ = one_run(label, "trap", specs, argv, stdin, plain, out, check=False)
        unstable |= (differing(auto, auto2) | differing(trap, trap2)) & diffs
        diffs -= unstable
    compared = len((set(auto) | set(trap)) - refused - unstable - by_maps)
    hits = sum(v for k, v in trap.items() if k not in refused | unstable | by_maps)
    note(f"{label}: {compared} probes compared, {hits} hits each; "
         f"{len(unstable)} changed between runs of one strategy: "
         + ", ".join(sorted(k.rsplit("/", 1)[-1] for k in unstable)[:6]))
    R.check(not diffs, f"{label}: AUTO and TRAP counts agree probe by probe",
            "\n".join(f"{k}: auto {auto.get(k)} trap {trap.get(k)}" for k in sorted(diffs)[:30]))
    R.check(len(unstable) * 200 <= len(auto), f"{label}: at most 0.5% of counts vary run to run",
            "\n".join(sorted(unstable)[:30]))
    R.check(hits > 0, f"{label}: the probes were hit", "no hits at all")
    return auto, (len(auto), len(refused), compared, hits)


def hot_functions(counts, files):
    """The busiest small functions of each file, by entry count."""
    chosen = []
    for path in files:
        listing = subprocess.run([NANOPROBE, "list", "-j", path], capture_output=True,
                                 text=True, env=ENV).stdout
        size = {}
        for line in listing.splitlines():
            fn = json.loads(line)
            size.setdefault(fn["name"], fn.get("size") or 0)
        ranked = sorted(((n, k.rsplit(":", 1)[1]) for k, n in counts.items()
                         if k.startswith(path + ":") and "%return" not in k and "+" not in k),
                        reverse=True)
        picked = [f for n, f in ranked
                  if n > 0 and 0 < size.get(f, 0) <= HOT_MAX_BYTES][:HOT_FUNCTIONS]
        chosen += [(path, f) for f in picked]
    return chosen


ANALYSED = {}


def analysed_sites(path, fn):
    """Another ISA's instructions: `list PATH FUNC` decodes the host's ISA
    only, `analyze` reads any ISA this build has a layer for (one pass
    over the file, kept for its other functions)."""
    if path not in ANALYSED:
        out = subprocess.run([NANOPROBE, "analyze", "-j", path], capture_output=True,
                             text=True, env=ENV).stdout
        ANALYSED[path] = [json.loads(l) for l in out.splitlines() if '"type":"site"' in l]
    return sorted(x["offset"] for x in ANALYSED[path] if x["function"] == fn)


def instruction_specs(path, fn):
    if ISA != "x86_64":
        return [f"{path}:{fn}+{off}" if off else f"{path}:{fn}"
                for off in analysed_sites(path, fn)]
    listing = subprocess.run([NANOPROBE, "list", "-j", path, fn], capture_output=True,
                             text=True, env=ENV).stdout
    specs = []
    base = None
    for line in listing.splitlines():
        insn = json.loads(line)
        if "addr" not in insn or "insn" not in insn:
            continue
        addr = int(insn["addr"], 16)
        base = addr if base is None else base
        specs.append(f"{path}:{fn}+{addr - base}" if addr != base else f"{path}:{fn}")
    return specs


def elf_entry(path):
    """The ELF entry point (e_entry) of a 64-bit little-endian file, or None."""
    try:
        with open(path, "rb") as f:
            hdr = f.read(32)
        return struct.unpack_from("<Q", hdr, 24)[0] if hdr[:4] == b"\x7fELF" else None
    except OSError:
        return None


def named_functions(path):
    """{address: name} of path's functions with a symbol, less LIBC_LEFT_OUT."""
    listing = subprocess.run([NANOPROBE, "list", "-j", path], capture_output=True, text=True,
                             env=ENV).stdout
    fns = [json.loads(line) for line in listing.splitlines()]
    left_out = {fn["addr"] for fn in fns if fn["name"] in LIBC_LEFT_OUT}
    names = {}
    for fn in fns:
        if fn.get("source") != "eh_frame" and fn["addr"] not in left_out:
            names.setdefault(fn["addr"], fn["name"])
    note(f"{os.path.basename(path)}: {len(names)} named functions, "
         f"{len(left_out)} left out ({', '.join(sorted(LIBC_LEFT_OUT))})")
    return names


def function_specs(path, named_only):
    """An entry and a return probe on every function of path, or on every
    one with a symbol (one name per address); under RETURNS_NAMED_ONLY, the
    return probes on those with a symbol only."""
    if not named_only and not RETURNS_NAMED_ONLY:
        return [f"{path}:*", f"{path}:*%return"]
    names = named_functions(path)
    entries = [f"{path}:{n}" for n in names.values()] if named_only else [f"{path}:*"]
    # named, a return probe the command refuses fails the run: the entry
    # point (_start, entered by no call) and GCC's .cold parts (a glob
    # passes over them)
    entry = elf_entry(path)
    returns = [n for a, n in names.items() if int(a, 16) != entry and ".cold" not in n]
    return entries + [f"{path}:{n}%return" for n in returns]


def unpacked_python(argv):
    """An interpreter unpacked from Debian's packages (arm64, riscv64)
    rather than installed: no postinst has compiled its standard library
    (py3compile), so each run would compile what it imports from source,
    millions of function calls under emulation (17.7 M entries for the
    workload in python3.14 under qemu-riscv64, most in its compiler)."""
    return ISA != "x86_64" and argv[0] == python3_path() and argv[0].startswith(DEBROOT)


def prime_bytecode(name, argv, stdin):
    """One run allowed to write the bytecode of what the program imports,
    as an installed interpreter has it; the runs compared then read it."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    p = run(guest_wrapper() + argv, stdin, env)
    R.check(p.returncode == 0, f"{name}: its standard library's bytecode written",
            p.stderr.decode(errors="replace")[-1000:])


def run_program(name, argv, stdin, extra, tmp):
    R.check(all(argv[:1]) and os.access(argv[0], os.X_OK), f"{name}: {argv[0]} is installed")
    files = [argv[0], real(library_path("libc.so.6"))] + [f for f in extra if f]
    if unpacked_python(argv):
        prime_bytecode(name, argv, stdin)
    plain = run(guest_wrapper() + argv, stdin)
    R.check(plain.returncode == 0 and plain.stdout,
            f"{name}: runs plainly", plain.stderr.decode(errors="replace")[-1000:])
    specs = [s for f in files for s in function_specs(f, f == files[1] and LIBC_NAMED_ONLY)]
    counts, fig_a = differential(f"{name} (a) every entry and return", specs, argv, stdin,
                                 plain, tmp)
    hot = hot_functions(counts, files[:2])
    R.check(len(hot) > 0, f"{name}: busy small functions found for (b)", str(hot))
    specs = [s for path, fn in hot for s in instruction_specs(path, fn)]
    note(f"{name} (b): every instruction of " +
         ", ".join(f"{os.path.basename(p)}:{f}" for p, f in hot) + f" ({len(specs)} probes)")
    _, fig_b = differential(f"{name} (b) every instruction", specs, argv, stdin, plain, tmp,
                            read_its_maps(counts))
    note(f"{name}: figures probes/refused/compared/hits (a) {fig_a} (b) {fig_b}")
    return fig_a, fig_b


def main():
    global RUN_DIR
    if not os.access(NANOPROBE, os.X_OK):
        print(f"nanoprobe not found at {NANOPROBE}", file=sys.stderr)
        return 2
    started, totals = time.monotonic(), {"a": [0] * 4, "b": [0] * 4}
    with tempfile.TemporaryDirectory(prefix="np-diff-") as tmp:
        RUN_DIR = os.path.join(tmp, "cwd")
        os.mkdir(RUN_DIR)
        inputs = make_inputs(tmp)
        where = run(["pwd"])
        R.eq(where.stdout.decode().strip(), RUN_DIR,
             "the programs run in an empty directory of their own")
        progs = programs(inputs)
        wanted = sample([n for n in progs if n in sys.argv[1:] or not sys.argv[1:]],
                        "NP_DIFF_SAMPLE")
        for name, (argv, stdin, extra) in progs.items():
            if name not in wanted:
                continue
            if not argv[0]:
                R.check(False, f"{name}: installed", "the Makefile's deps install it")
                continue
            for part, fig in zip("ab", run_program(name, argv, stdin, extra, tmp)):
                totals[part] = [t + f for t, f in zip(totals[part], fig)]
    note(f"{ISA}: probes/refused/compared/hits (a) {totals['a']} (b) {totals['b']}; "
         f"{time.monotonic() - started:.0f} s")
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
