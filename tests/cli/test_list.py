#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`nanoprobe list` end to end, on the fixture program (tests/cli/fixtures).

usage: test_list.py LIST_DRIVER FIXTURE FIXTURE.stripped

Functions are checked against `nm -S`, instruction boundaries against
`objdump -d`, and each fixture function written for it must get its
strategy for its known reason. Prints TAP.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

DRIVER, FIXTURE, STRIPPED = sys.argv[1:4]
failures = 0
cases = []


def case(fn):
    cases.append(fn)
    return fn


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"# FAILED: {what}", file=sys.stderr)


def run(*args):
    p = subprocess.run([DRIVER, "list", *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def nm_functions(path):
    """{name: (addr, size)} of the sized text symbols, as nm sees them."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    funcs = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "Tt":
            funcs[f[3]] = (int(f[0], 16), int(f[1], 16))
    return funcs


def listed(path, *args):
    """{name: (addr, size, source)} from the text listing."""
    rc, out, err = run(path, *args)
    check(rc == 0, f"list {path} {args}: exit {rc}: {err}")
    lines = out.splitlines()
    check(lines and lines[0].split() == ["ADDRESS", "SIZE", "NAME", "SOURCE"], "header line")
    rows = {}
    for line in lines[1:]:
        addr, size, name, source = line.split()
        rows[name] = (int(addr, 16), int(size), source)
    return rows


def instructions(func, path=FIXTURE):
    """The JSON rows of one function's instruction listing."""
    rc, out, err = run("-j", path, func)
    check(rc == 0, f"list -j {func}: exit {rc}: {err}")
    rows = [json.loads(line) for line in out.splitlines()]
    base = {"type", "addr", "bytes", "insn", "strategy", "reason"}
    for r in rows:
        # a JUMP names its form, a jump to a hop the hop too
        extra = set()
        if r.get("strategy") == "jump":
            extra = {"form", "hop"} if r.get("form") == "jmp rel8 + hop" else {"form"}
        check(set(r) == base | extra and r["type"] == "instruction", f"keys of {r}")
    return rows


@case
def functions_match_nm_with_addresses_and_sizes():
    rows, nm = listed(FIXTURE), nm_functions(FIXTURE)
    check(len(nm) >= 8, "nm sees the fixture's functions")
    for name, (addr, size) in nm.items():
        check(rows.get(name, ())[:2] == (addr, size),
              f"{name}: {rows.get(name)} vs nm {addr:#x}/{size}")
    check(rows["np_fx_sum"][2] == "symtab", "source column")
    addrs = [a for a, _, _ in rows.values()]
    check(addrs == sorted(addrs), "sorted by address")


@case
def json_function_lines_carry_the_same_functions():
    rc, out, _ = run("-j", FIXTURE)
    check(rc == 0, "list -j exit status")
    rows = {r["name"]: r for r in map(json.loads, out.splitlines())}
    for name, (addr, size) in nm_functions(FIXTURE).items():
        r = rows.get(name, {})
        check(r.get("addr") == hex(addr) and r.get("size") == size, f"json {name}: {r}")
        check(r.get("source") == "symtab", f"json {name} source")


@case
def stripped_copy_lists_eh_frame_functions_under_synthetic_names():
    rows, nm = listed(STRIPPED), nm_functions(FIXTURE)
    addr, size = nm["np_fx_sum"]
    check(rows.get(f"fn_{addr:x}") == (addr, size, "eh_frame"), "fn_<hex> for np_fx_sum")
    check(rows.get("np_fx_add", ())[2:] == ("dynsym",), "exports keep their names")
    check(len(instructions(f"fn_{addr:x}", STRIPPED)) > 0, "a synthetic name lists its code")


@case
def glob_with_several_matches_lists_functions_with_aliases_folded():
    rows = listed(FIXTURE, "np_fx_*")
    check(len(rows) == 8, f"8 functions, np_fx_add and np_fx_plus as one: {sorted(rows)}")


def objdump_addresses(path, addr, size):
    out = subprocess.run(["objdump", "-d", "--insn-width=16", f"--start-address={addr:#x}",
                          f"--stop-address={addr + size:#x}", path],
                         capture_output=True, text=True, check=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\t", out, re.M)]


@case
def instruction_listing_follows_objdump_and_the_entry_gets_jump():
    addr, size = nm_functions(FIXTURE)["main"]
    rows = instructions("main")
    check([int(r["addr"], 16) for r in rows] == objdump_addresses(FIXTURE, addr, size),
          "instruction boundaries as objdump's")
    check(rows[0]["strategy"] == "jump" and rows[0]["reason"] is None, f"main entry: {rows[0]}")
    rc, out, _ = run(FIXTURE, "main")
    head = out.splitlines()[0]
    check(rc == 0 and head.startswith(f"main: {addr:#x}-{addr + size:#x} ({size} bytes"),
          f"text header: {head}")


@case
def branch_into_the_first_five_bytes_makes_the_entry_trap():
    addr, _ = nm_functions(FIXTURE)["np_fx_backjump"]
    first = instructions("np_fx_backjump")[0]
    check(first["strategy"] == "trap", f"strategy: {first}")
    check(first["reason"] == f"a branch lands at {addr + 2:#x}, inside the displaced bytes; "
          "no hop: no dead padding in reach",
          f"reason: {first['reason']}")


@case
def branch_into_the_first_five_bytes_with_padding_after_jumps_to_a_hop():
    funcs = nm_functions(FIXTURE)
    addr, size = funcs["np_fx_hop"]
    first = instructions("np_fx_hop")[0]
    check(first["strategy"] == "jump" and first["form"] == "jmp rel8 + hop", f"{first}")
    hop = int(first.get("hop", "0"), 16)
    nxt = min(a for a, _ in funcs.values() if a > addr)
    # in the padding after the ret, before the next function, in rel8's reach
    check(addr + size <= hop and hop + 5 <= nxt and hop - (addr + 2) <= 127, f"hop {hop:#x}")
    rc, out, _ = run(FIXTURE, "np_fx_hop")
    check(rc == 0 and re.search(r"xor\s+%eax,%eax\s+JUMP\s+jmp rel8 \+ hop " + f"{hop:#x}", out),
          out)


@case
def lone_ret_followed_by_code_traps():
    first = instructions("np_fx_tiny")[0]
    check(first["insn"] == "ret" and first["strategy"] == "trap", f"{first}")
    check("before the 5 bytes a jump needs" in (first["reason"] or ""), f"{first['reason']}")


@case
def undefined_instruction_is_refused_with_its_reason():
    first = instructions("np_fx_reject")[0]
    check(first["bytes"] == "0f 0b" and first["strategy"] == "refused", f"{first}")
    check("undefined instruction" in (first["reason"] or ""), f"{first['reason']}")
    rc, out, _ = run(FIXTURE, "np_fx_reject")
    check(rc == 0 and re.search(r"ud2\s+refused\s+undefined instruction", out), out)


@case
def unknown_function_fails_with_suggestions():
    rc, _, err = run(FIXTURE, "np_fx_swich")
    check(rc == 1 and "did you mean: np_fx_switch?" in err, f"exit {rc}: {err}")
    rc, _, err = run(FIXTURE, "nothing_like_it_*")
    check(rc == 1 and "no function matches" in err, f"exit {rc}: {err}")


@case
def unknown_file_fails_and_bad_usage_exits_2():
    rc, _, err = run("/nonexistent/np-file")
    check(rc == 1 and "No such file" in err, f"exit {rc}: {err}")
    rc, _, err = run("np-no-such-program")
    check(rc == 1 and "not found in $PATH" in err, f"exit {rc}: {err}")
    rc, _, err = run()
    check(rc == 2 and err.startswith("nanoprobe list: which file?"), f"exit {rc}: {err}")
    rc, _, err = run("-x", FIXTURE)
    check(rc == 2 and err.startswith("nanoprobe list: unknown option '-x'"), f"exit {rc}: {err}")
    rc, _, err = run("--jsn", FIXTURE)
    check(rc == 2 and "did you mean: --json?" in err, f"exit {rc}: {err}")


@case
def machines_without_a_layer_are_refused_by_name():
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "fake-arm")
        shutil.copy(FIXTURE, fake)
        with open(fake, "r+b") as f:
            f.seek(18)  # e_machine
            f.write(struct.pack("<H", 40))  # EM_ARM: 32-bit, no layer
        rc, _, err = run(fake, "main")
    check(rc == 1 and "is arm; this build decodes x86_64, arm64 or riscv64 only" in err,
          f"exit {rc}: {err}")


@case
def other_isas_are_planned_whatever_the_host():
    """The planner is pure (src/plan/): an arm64 or riscv64 libc lists
    with its own disassembly and strategies on any host."""
    for libc, insn in (("/usr/aarch64-linux-gnu/lib/libc.so.6", "ret"),
                       ("/usr/riscv64-linux-gnu/lib/libc.so.6", "ret")):
        if not os.path.exists(libc):
            print(f"# skip: no {libc}")
            continue
        rows = instructions("getpid", libc)
        check(rows and rows[-1]["insn"] == insn, f"{libc} getpid ends with {insn}: {rows[-1:]}")
        check(rows and rows[0]["strategy"] == "jump", f"{libc} getpid's entry: {rows[:1]}")


@case
def library_short_names_resolve():
    rc, out, err = run("c", "malloc")
    check(rc == 0 and out.startswith("malloc: "), f"exit {rc}: {err}")


print(f"1..{len(cases)}")
for i, fn in enumerate(cases, 1):
    before = failures
    fn()
    print(f"{'ok' if failures == before else 'not ok'} {i} - {fn.__name__}")
sys.exit(1 if failures else 0)
