#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`nanoprobe list` and the engine agree on every site (issue 18).

usage: [NP_WRAPPER=CMD] test_list_engine.py NANOPROBE LIST_ENGINE

One planner (src/plan/) serves both: what `list` prints for an
instruction is what the engine places there when a probe asks for AUTO.
Checked on every instruction of every function of the e2e suites'
assembly (linked into LIST_ENGINE, tests/cli/list_engine.c) and on a
sample of the functions of the libc LIST_ENGINE runs with, each site
planned by `list -j` over the file and placed by the engine in the
running program (attached, then detached at once), with the bounds the
command gives the engine (resolve.c: the symbol's size, stopped at the
next function). The one thing a file cannot tell is allowed for: a JUMP
the engine could not place for want of trampoline memory within the
short jump's reach. Prints TAP.

NP_WRAPPER runs LIST_ENGINE through a command: a cross build's engine
under qemu-user, held against the host's `list` planning that ISA's code
(the planner runs any ISA on any host), e.g.
  NP_WRAPPER="qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu:build-arm64/src" \
    test_list_engine.py build/tools/nanoprobe/nanoprobe build-arm64/tests/cli/list-engine
NP_SYSROOT is where the guest's files are on the host (qemu's -L), for
`list` to read the libc the engine runs with.
"""
import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import Results, run_cases  # noqa: E402

NP, DRIVER = sys.argv[1:3]
RUN = shlex.split(os.environ.get("NP_WRAPPER", "")) + [DRIVER]
SYSROOT = os.environ.get("NP_SYSROOT", "")
NO_MEMORY = "no trampoline memory within"  # region.c's reason
LIBC_SAMPLE = 24      # functions of libc, spread by name
MAX_INSNS = 400       # longer functions are left out of the sample
# Functions the sample leaves out, with why: a probe there stays in place
# while the engine attaches the next one, and these run meanwhile.
SKIP = {
    "__restore_rt": "the signal return: a breakpoint there fires on its own return",
    "__libc_start_main": "on the stack below main",
    "__libc_start_call_main": "on the stack below main",
}
R = Results()
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def list_json(*args):
    p = subprocess.run([NP, "list", "-j", *args], capture_output=True, text=True)
    if p.returncode:  # said only when it fails: list runs once per function
        R.check(False, f"list {' '.join(args)}", p.stderr)
    return [json.loads(line) for line in p.stdout.splitlines()]


def functions(path):
    """{addr: (name, size, displaceable size)} as list and resolve.c see them."""
    rows = sorted((int(r["addr"], 16), r["name"], r["size"]) for r in list_json(path))
    starts = sorted({a for a, _, _ in rows})
    out = {}
    for addr, name, size in rows:
        nxt = next((s for s in starts if s > addr), None)
        limit = nxt - addr if nxt is not None and nxt - addr < size else size
        out.setdefault(addr, (name, size, limit))
    return out


def compare(path, picked, running=None):
    """Every instruction of the picked functions of path: list's strategy
    against the engine's, in the module mapped from running (path itself
    unless the engine runs under a sysroot). How many sites were compared."""
    sites, said = [], {}
    for addr, (name, size, limit) in picked:
        rows = [r for r in list_json(path, name) if r["type"] == "instruction"]
        if not rows:
            R.check(False, f"{path} {name}: instructions listed")
        for r in rows:
            a = int(r["addr"], 16)
            if a >= addr + limit:
                continue  # past the next function's entry: not this one's
            sites.append((a, addr, limit))
            said[a] = (name, r)
    feed = "".join(f"{a:x} {fn:x} {n}\n" for a, fn, n in sites)
    p = subprocess.run(RUN + [running or path], input=feed, capture_output=True, text=True, timeout=300)
    R.check(p.returncode == 0, f"list-engine {path} exits 0", p.stderr[-500:])
    placed = {}
    for line in p.stdout.splitlines():
        a, strategy, *why = line.split(" ", 2)
        placed[int(a, 16)] = (strategy.lower(), why[0] if why else "")
    unknowable, differ = 0, []
    for a, (name, r) in said.items():
        got, why = placed.get(a, ("missing", ""))
        # what a file cannot tell: the pages within the short jump's
        # reach taken (riscv64's jal, under qemu-user's packed layout)
        if r["strategy"] == "jump" and got != "jump" and NO_MEMORY in why:
            unknowable += 1
            continue
        if got != r["strategy"]:
            differ.append(f"{name} {a:#x} {r['insn']}: list says {r['strategy']} "
                          f"({r['reason']}), the engine {got} ({why})")
    R.check(not differ, f"{path}: list and the engine agree on every site", "\n".join(differ))
    if unknowable:
        print(f"# {unknowable} sites: the engine found no trampoline memory within reach")
    return len(said) - unknowable


@case
def every_site_of_the_e2e_assembly_gets_what_list_says():
    mine = {int(x, 16) for x in subprocess.run(RUN + ["--functions"], capture_output=True,
                                               text=True, check=True).stdout.split()}
    fns = functions(DRIVER)
    picked = [(a, fns[a]) for a in sorted(mine) if a in fns and fns[a][1]]
    R.check(len(picked) >= 10, f"{len(picked)} assembly functions found in {DRIVER}")
    n = compare(DRIVER, picked)
    R.check(n > 200, f"compared {n} sites")
    print(f"# {len(picked)} functions, {n} sites")


def driver_libc():
    p = subprocess.run(RUN + ["--libc"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


@case
def a_sample_of_libc_gets_what_list_says():
    running = driver_libc()
    R.check(running is not None, "the driver's libc")
    if not running:
        return
    libc = SYSROOT + running if SYSROOT and os.path.exists(SYSROOT + running) else running
    fns = functions(libc)
    uses = {}
    for v in fns.values():
        uses[v[0]] = uses.get(v[0], 0) + 1
    # named once (list takes a name), sized, not too long, by name: a
    # spread over the file
    named = sorted((v[0], a) for a, v in fns.items()
                   if v[1] and uses[v[0]] == 1 and not v[0].startswith("fn_")
                   and v[0] not in SKIP and v[2] <= MAX_INSNS * 4)
    step = max(1, len(named) // LIBC_SAMPLE)
    picked = [(a, fns[a]) for _, a in named[::step][:LIBC_SAMPLE]]
    # and the functions glibc's string code jumps into from its neighbours
    for name in ("__memmove_avx_unaligned_erms", "__memcpy_avx_unaligned_erms"):
        picked += [(a, v) for a, v in fns.items() if v[0] == name]
    n = compare(libc, picked, running)
    R.check(n > 500, f"compared {n} sites")
    print(f"# {libc}: {len(picked)} functions, {n} sites")


sys.exit(run_cases(R, CASES, [NP, DRIVER], sys.argv[3:]))
