#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`nanoprobe analyze` end to end.

usage: test_analyze.py NANOPROBE FIXTURE_RISCV64.so [FIXTURE_ARM64.so]

The riscv64 fixture (fixtures/analyze_riscv64.S) has functions written so
that each site's strategy and reason are known. The arm64 fixture
(fixtures/analyze_arm64.S) has functions beyond b's reach, whose sites take
the long form, or trap with an out-of-line copy that jumps back, or, with
no register free after the instruction, traps back. The Debian cross libcs
(libc6-riscv64-cross, libc6-arm64-cross) and the host libc are checked
for the report's shape and its internal consistency; on the host libc the
strategies must agree with the engine's own planner (`nanoprobe list`).
Prints TAP.
"""
import json
import os
import subprocess
import sys

NP, FIXTURE = sys.argv[1:3]
FIXTURE_ARM64 = sys.argv[3] if len(sys.argv) > 3 else None
RISCV_LIBC = "/usr/riscv64-linux-gnu/lib/libc.so.6"
ARM64_LIBC = "/usr/aarch64-linux-gnu/lib/libc.so.6"
STRATEGIES = {"jump", "trap-simulated", "trap-out-of-line", "rejected"}
RV_NAMES = {"ra", "t0", "t1", "t2", "s0", "s1", "t3", "t4", "t5", "t6"} | \
    {f"a{i}" for i in range(8)} | {f"s{i}" for i in range(2, 12)}
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
    p = subprocess.run([NP, "analyze", *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def analyze_json(path, *args):
    rc, out, err = run("-j", *args, path)
    check(rc == 0, f"analyze -j {path}: exit {rc}: {err}")
    rows = [json.loads(line) for line in out.splitlines()]
    sites = [r for r in rows if r["type"] == "site"]
    summaries = [r for r in rows if r["type"] == "summary"]
    check(len(summaries) == 1 and rows[-1]["type"] == "summary", "one summary, last")
    return sites, summaries[0] if summaries else {}


def check_shape(path, sites, summary, arch, regs):
    """Every field, and a summary that adds up to the sites printed."""
    keys = {"type", "addr", "function", "offset", "entry", "strategy", "form", "free", "why",
            "trap_back"}
    for s in sites:
        check(set(s) - {"fragment"} == keys and s.get("fragment", True) is True,
              f"site keys {sorted(s)}")
        check(s["strategy"] in STRATEGIES, f"strategy {s['strategy']}")
        check((s["form"] is not None) == (s["strategy"] == "jump"), f"form of {s}")
        check((s["why"] is None) == (s["strategy"] == "jump"), f"why of {s}")
        check(s.get("trap_back") in (True, False) and
              (not s.get("trap_back") or s["strategy"] == "trap-out-of-line"), f"trap_back of {s}")
        # a function's first instruction is its entry, or the start of a
        # fragment entered mid-frame (a .cold part), never both
        check(not (s["entry"] or s.get("fragment")) or s["offset"] == 0, f"entry of {s}")
        check(not (s["entry"] and s.get("fragment")), f"entry and fragment: {s}")
    check(summary.get("arch") == arch, f"{path}: arch {summary.get('arch')}")
    optprobes = {"one_free_register": 0.683, "free_both_ways": 0.51}
    check(summary.get("riscv64_optprobes") == optprobes, "the riscv64 optprobes' figures")
    check(summary.get("paper") == optprobes, "the same under their first name")
    c, sh = summary.get("counts", {}), summary.get("shares", {})
    check(summary.get("sites") == len(sites), f"{path}: sites {summary.get('sites')}")
    check(summary.get("entries") == sum(s["entry"] for s in sites), "entries")
    check(summary.get("functions") == sum(s["offset"] == 0 for s in sites),
          "one first instruction per function")
    check(c.get("fragments") == sum(bool(s.get("fragment")) for s in sites) and
          c.get("fragments_trap_free") == sum(bool(s.get("fragment")) and
                                              s["strategy"] == "jump" for s in sites),
          f"fragments {c}")
    by = {k: sum(s["strategy"] == k for s in sites) for k in STRATEGIES}
    check(c.get("jump") == by["jump"] and c.get("rejected") == by["rejected"] and
          c.get("trap_simulated") == by["trap-simulated"] and
          c.get("trap_out_of_line") == by["trap-out-of-line"], f"counts {c} vs {by}")
    check(c.get("trap_back") == sum(bool(s.get("trap_back")) for s in sites), f"trap_back {c}")
    check(c.get("jump_short", -1) + c.get("jump_long", -1) + c.get("jump_hop", -1) ==
          c.get("jump"), "jump forms")
    check(c.get("jump_hop") == sum(s["form"] == "jmp rel8 + hop" for s in sites), "hops")
    check(c.get("entries_trap_free") == sum(s["entry"] and s["strategy"] == "jump"
                                            for s in sites), "entries trap-free")
    check(abs(sh.get("trap_free", -1) - by["jump"] / max(1, len(sites))) < 1e-3, "share")
    check(("one_free_register" in sh) == regs, f"free-register figures on {arch}")
    if regs:
        check(c.get("one_free_register") == sum(bool(s["free"]) for s in sites),
              "one free register")
        check(c.get("free_both_ways") <= c.get("one_free_register"), "both ways <= one")
        check(c.get("one_free_register_liveness") <= c.get("one_free_register"),
              "the entry convention only adds free registers")
    check(len(sites) > 0, f"{path}: sites analysed")


@case
def fixture_sites_get_their_strategies_and_reasons():
    sites, summary = analyze_json(FIXTURE)
    check_shape(FIXTURE, sites, summary, "riscv64", True)
    at = {(s["function"], s["offset"]): s for s in sites}

    def expect(fn, off, strategy, form=None, why=None):
        s = at.get((fn, off))
        check(s is not None, f"site {fn}+{off}")
        if not s:
            return
        check(s["strategy"] == strategy and (form is None or s["form"] == form) and
              (why is None or why in s["why"]), f"{fn}+{off}: {s}")

    for off in range(0, 24, 4):
        expect("plain", off, "jump", "jal")
    check("t1" in at[("plain", 0)]["free"], "the entry convention frees t1")
    expect("atomic_add", 0, "rejected", why="lr:")
    expect("atomic_add", 4, "rejected", why="inside an lr/sc sequence")
    expect("atomic_add", 8, "rejected", why="sc:")
    expect("atomic_add", 12, "jump", "jal")
    expect("do_syscall", 4, "rejected", why="ecall")
    expect("compressed_target", 0, "trap-out-of-line", why="a branch lands at")
    expect("compressed_target", 2, "jump", "jal")
    expect("back_ret", 2, "jump", "jal")
    expect("back_target", 4, "jump", "jal")
    expect("back_target", 6, "trap-simulated", why="before the 4 bytes a jump needs")
    expect("back_call", 2, "trap-simulated", why="before the 4 bytes a jump needs")
    expect("back_jump", 2, "jump", "jal")
    expect("back_jump", 4, "trap-out-of-line", why="a branch lands at")
    expect("back_jump", 6, "trap-simulated", why="before the 4 bytes a jump needs")
    expect("far_fn", 0, "jump", "auipc+jalr")
    # its ret: the jump goes at the addi before it, through a free register
    expect("far_fn", 16, "jump", "auipc+jalr")
    # far_busy, called directly, writes only a0: its caller may keep any
    # other register across the call (-fipa-ra), so no register is free
    # but a0 at the entry, no long jump fits, and beyond jal's reach each
    # out-of-line copy traps back (region.c, make_trap_back)
    check(at.get(("far_busy", 0), {}).get("free") == ["a0"],
          f"far_busy+0: only a0 free: {at.get(('far_busy', 0))}")
    for off in range(0, 24, 4):
        expect("far_busy", off, "trap-out-of-line", why="the copy jumps back by a trap")
        check(at.get(("far_busy", off), {}).get("trap_back"), f"far_busy+{off} traps back")
    # its ret: neither jump fits, and the short one has no place in reach
    expect("far_busy", 24, "trap-simulated", why="no trampoline place within jal's reach")
    check(at.get(("far_busy", 24), {}).get("trap_back") is False,
          "a simulated ret needs no copy")
    # its caller only the convention reaches: t1, t3..t6 free at its entry
    expect("busy_caller", 0, "jump", "auipc+jalr")
    check(at.get(("compressed_target", 0), {}).get("trap_back") is False,
          "c.mv's copy jumps back by jal")
    check(summary.get("counts", {}).get("trap_back") == 6, f"six copies trap back: {summary}")
    for s in sites:
        check(set(s["free"]) <= RV_NAMES, f"never zero, sp, gp, tp: {s['free']}")


@case
def riscv64_cross_libc_report_adds_up():
    if not os.path.exists(RISCV_LIBC):
        print(f"# skip: no {RISCV_LIBC}")
        return
    sites, summary = analyze_json(RISCV_LIBC)
    check_shape(RISCV_LIBC, sites, summary, "riscv64", True)
    for s in sites:
        check(set(s["free"]) <= RV_NAMES, f"free registers {s['free']}")


@case
def arm64_fixture_beyond_b_reach_takes_the_long_form():
    if not FIXTURE_ARM64:
        print("# skip: no arm64 fixture (aarch64-linux-gnu-gcc)")
        return
    sites, summary = analyze_json(FIXTURE_ARM64)
    check_shape(FIXTURE_ARM64, sites, summary, "arm64", True)
    at = {(s["function"], s["offset"]): s for s in sites}
    want = {("plain", 0): ("jump", "b"), ("end_fn", 0): ("jump", "b"),
            ("far_fn", 0): ("jump", "adrp+add+br"), ("far_fn", 12): ("jump", "adrp+add+br"),
            # the 12 bytes run past the end from +16 and from far_loop+8: they
            # go at the word before, and take the site in (plan.c)
            ("far_fn", 16): ("jump", "adrp+add+br"), ("far_fn", 20): ("trap-simulated", None),
            ("far_loop", 0): ("trap-out-of-line", None), ("far_loop", 4): ("jump", "adrp+add+br"),
            ("far_loop", 8): ("jump", "adrp+add+br"), ("far_loop", 12): ("trap-simulated", None)}
    for (fn, off), (strategy, form) in want.items():
        s = at.get((fn, off))
        check(s is not None and s["strategy"] == strategy and
              (form is None or s["form"] == form), f"{fn}+{off}: {s}")
    check("a branch lands at" in at.get(("far_loop", 0), {}).get("why", ""),
          "three displaced words: a branch into the second refuses the jump")
    check("x16" in at[("far_fn", 0)]["free"] and "x18" not in at[("far_fn", 0)]["free"],
          "AAPCS64 at an entry: x16 free, never x18")
    # far_busy, called directly, writes x0, x16, x17 only: its caller may
    # keep every other register across the call (-fipa-ra); from +8 to
    # the reads of x16 and x17 no register is free, and the copies there,
    # beyond b's reach, trap back
    check(at.get(("far_busy", 0), {}).get("free") == ["x16", "x17"],
          f"far_busy+0: x16, x17 free: {at.get(('far_busy', 0))}")
    for off in range(0, 0x28, 4):
        s = at.get(("far_busy", off), {})
        want = ("trap-simulated", False) if off == 0x24 else \
            ("trap-out-of-line", 4 <= off < 0x1c)
        check((s.get("strategy"), s.get("trap_back")) == want, f"far_busy+{off:#x}: {s}")
    check("the copy jumps back by a trap" in at.get(("far_busy", 8), {}).get("why", ""),
          "the reason says the copy traps back")
    check(summary.get("counts", {}).get("jump_long") == 7, f"7 long jumps: {summary}")
    check(summary.get("counts", {}).get("trap_back") == 6, f"six copies trap back: {summary}")


@case
def arm64_cross_libc_is_analysed_or_refused_with_a_reason():
    if not os.path.exists(ARM64_LIBC):
        print(f"# skip: no {ARM64_LIBC}")
        return
    rc, out, err = run("-j", ARM64_LIBC)
    if rc == 1 and "no arm64 ISA layer" in err:
        print("# arm64 layer not in this build: refused with its reason")
        return
    sites, summary = analyze_json(ARM64_LIBC)
    check_shape(ARM64_LIBC, sites, summary, "arm64", summary.get("shares", {}).get(
        "one_free_register") is not None)


@case
def host_libc_agrees_with_the_engines_planner():
    rc, out, err = subprocess.run(["ldd", NP], capture_output=True, text=True), None, None
    libc = next((l.split("=>")[1].split()[0] for l in rc.stdout.splitlines()
                 if "libc.so.6" in l and "=>" in l), None)
    check(libc is not None, "host libc found")
    if not libc:
        return
    sites, summary = analyze_json(libc)
    check_shape(libc, sites, summary, summary.get("arch"), True)
    # GCC's .cold parts are jumped to with the frame of their function
    # built: fragments, not entries (symtab.c reads that from .eh_frame)
    cold = [s for s in sites if s["offset"] == 0 and s["function"].endswith(".cold")]
    check(not cold or sum(bool(s.get("fragment")) for s in cold) * 2 > len(cold),
          f"most of libc's {len(cold)} .cold parts are fragments")
    check(all(not s["entry"] for s in sites if s.get("fragment")), "a fragment is no entry")
    if summary.get("arch") != "x86_64":
        return
    size = {}
    for s in sites:
        size[s["function"]] = size.get(s["function"], 0) + 1
    mine = {int(s["addr"], 16): s["strategy"] for s in sites}
    compared = 0
    # functions of 20 to 200 instructions, every 40th by name: a spread
    picked = sorted(f for f, n in size.items() if 20 <= n <= 200 and not f.startswith("fn_"))
    for fn in picked[::40][:12]:
        p = subprocess.run([NP, "list", "-j", libc, fn], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            r = json.loads(line)
            a = int(r["addr"], 16)
            if a in mine:
                compared += 1
                theirs = {"jump": "jump", "refused": "rejected"}.get(r["strategy"], "trap")
                ours = mine[a] if mine[a] in ("jump", "rejected") else "trap"
                check(theirs == ours, f"{fn} {r['addr']} {r['insn']}: list says "
                      f"{r['strategy']} ({r['reason']}), analyze {mine[a]}")
    check(compared > 100, f"compared {compared} sites with list")


@case
def list_shows_what_analyze_plans_on_every_site_of_the_fixtures():
    """One planner (src/plan/): `list` and `analyze` give every site of
    the riscv64 and arm64 fixtures the same strategy and reason."""
    names = {"jump": "jump", "trap-simulated": "trap", "trap-out-of-line": "trap",
             "rejected": "refused"}
    for fixture in [FIXTURE] + ([FIXTURE_ARM64] if FIXTURE_ARM64 else []):
        sites, _ = analyze_json(fixture)
        mine = {int(s["addr"], 16): s for s in sites}
        compared = 0
        for fn in sorted({s["function"] for s in sites}):
            p = subprocess.run([NP, "list", "-j", fixture, fn], capture_output=True, text=True)
            check(p.returncode == 0, f"list {fixture} {fn}: {p.stderr}")
            for line in p.stdout.splitlines():
                r = json.loads(line)
                a = mine.get(int(r["addr"], 16))
                if a is None:
                    continue
                compared += 1
                check(r["strategy"] == names[a["strategy"]] and r["reason"] == a["why"],
                      f"{fixture} {fn} {r['addr']}: list {r['strategy']} ({r['reason']}), "
                      f"analyze {a['strategy']} ({a['why']})")
        check(compared == len(sites), f"{fixture}: compared {compared} of {len(sites)} sites")


@case
def text_report_prints_every_site_and_the_summary_table():
    rc, out, err = run(FIXTURE)
    check(rc == 0, f"exit {rc}: {err}")
    lines = out.splitlines()
    check(lines[0].endswith("(riscv64)"), lines[0] if lines else "no output")
    for want in ["one free register at the site", "68.3%", "free registers both ways",
                 "51%", "trap-free (JUMP)", "TRAP simulated", "TRAP out of line",
                 "back by a second trap", "rejected",
                 "function entries trap-free", "why not JUMP"]:
        check(want in out, f"summary has '{want}'")
    check(sum(l.startswith("  0x") for l in lines) == len(analyze_json(FIXTURE)[0]),
          "one line per site")


@case
def arch_mismatch_and_bad_usage_are_errors():
    rc, _, err = run("--arch", "x86_64", FIXTURE)
    check(rc == 1 and "is riscv64, not x86_64" in err, f"mismatch: {rc} {err}")
    rc, _, err = run("--arch", "mips", FIXTURE)
    check(rc == 2 and "--arch is x86_64, arm64 or riscv64, not 'mips'" in err,
          f"bad arch: {rc} {err}")
    rc, _, _ = run()
    check(rc == 2, "no file")
    rc, _, err = run("/nonexistent/file")
    check(rc == 1 and err, "missing file")
    rc, out, _ = run("--arch", "riscv64", "-j", FIXTURE)
    check(rc == 0 and out, "matching --arch")


print(f"1..{len(cases)}")
for i, fn in enumerate(cases, 1):
    before = failures
    fn()
    print(f"{'ok' if failures == before else 'not ok'} {i} - {fn.__name__}")
sys.exit(1 if failures else 0)
