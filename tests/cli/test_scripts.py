#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nanoprobe run against bpftrace itself: the same bpftrace programs on the
same deterministic program (progs/scripted.c), every aggregate compared
exactly, printf lines in order (or sorted where the order is not defined:
several threads, or ties in a map's order).

bpftrace needs root and BPF: as root (CI is) every case runs under both
tools and the outputs must agree; otherwise each case still runs under
nanoprobe, which must succeed, and the comparison is skipped (said so).

Where bpftrace 0.17 is wrong, the case says so in `bug` and compares
against the right answer: `fix` rewrites bpftrace's output into it, or
`expect` checks nanoprobe's output directly.
"""
import json
import os
import re
import shutil
import subprocess
import sys

NP = os.environ["NP_CLI"]
PROG = os.environ["NP_PROG_SCRIPTED"]
# progs/usdt.c and its library (tests/cli/meson.build), for the usdt cases
# ($U, $L); empty where <sys/sdt.h> was missing
USDT = os.environ.get("NP_PROG_USDT", "")
USDT_LIB = os.environ.get("NP_USDT_LIB", "")
BPFTRACE = shutil.which("bpftrace")
TIMEOUT = 120

# bpftrace 0.17 names a uprobe's func, usym and stack frames at exit, from
# /proc/PID/maps of a process that has exited by then: it prints addresses.
FUNC_ADDR = "bpftrace 0.17 symbolizes after the process exited: it prints addresses"

CASES = [
    # aggregations
    dict(name="count", prog="uprobe:$P:size { @c = count(); }"),
    dict(name="count_keyed", prog="uprobe:$P:size { @[arg0 % 5] = count(); }"),
    dict(name="sum", prog="uprobe:$P:size { @s = sum(arg0); }"),
    dict(name="sum_signed", prog="uretprobe:$P:negative { @s = sum((int64)retval); }", args="7"),
    dict(name="avg", prog="uprobe:$P:size { @a = avg(arg0); }"),
    dict(name="min_max", prog="uprobe:$P:size { @mn = min(arg0); @mx = max(arg0); }"),
    # min and max compare signed, and bpftrace prints them signed, whatever the type
    dict(name="min_max_negative", prog="uretprobe:$P:negative { @mn = min(retval); @mx = max(retval); @k[retval % 2] = min(retval); }", args="7"),
    dict(name="stats", prog="uprobe:$P:size { @st = stats(arg0); @k[arg0 % 2] = stats(arg0); }"),
    dict(name="hist", prog="uprobe:$P:size { @h = hist(arg0); }"),
    dict(name="hist_keyed", prog="uprobe:$P:size { @h[arg0 & 1] = hist(arg0); }"),
    dict(name="hist_negative", prog="uretprobe:$P:negative { @h = hist((int64)retval); }", args="9"),
    dict(name="lhist", prog="uprobe:$P:size { @l = lhist(arg0, 0, 100, 10); }"),
    dict(name="lhist_big", prog="uprobe:$P:size { @l = lhist(arg0, 1000, 70000, 4096); }"),
    dict(name="two_keys", prog="uprobe:$P:size { @[arg0 % 3, arg0 % 2] = count(); }"),
    dict(name="string_key", prog="uprobe:$P:name { @[str(arg0)] = count(); }"),
    dict(name="string_key_len", prog="uprobe:$P:name { @[str(arg0, 3)] = count(); }"),
    dict(name="mixed_key", prog="uprobe:$P:name { @[str(arg0), arg1] = sum(arg1); }"),
    dict(name="buf_key", prog="uprobe:$P:name { @[buf(arg0, 3)] = count(); }"),
    dict(name="comm_key", prog="uprobe:$P:size { @[comm] = count(); }"),
    # values, variables, arithmetic
    dict(name="value_map", prog="uprobe:$P:size { @last = arg0; @by[arg0 % 4] = arg0; }"),
    dict(name="string_value", prog="uprobe:$P:name { @s[arg1] = str(arg0); }"),
    dict(name="arith", prog="uprobe:$P:size { @[(arg0 * 3 + 7) / 2 % 100, arg0 - 1 > 5] = count(); }"),
    dict(name="bitops", prog="uprobe:$P:size { @[arg0 & 0xff, arg0 | 1, arg0 ^ 5, arg0 << 2, arg0 >> 1] = count(); }"),
    dict(name="vars", prog="uprobe:$P:size { $x = arg0 * 2; $y = $x + 1; $x += 10; @[$x, $y] = count(); }"),
    dict(name="incr", prog="uprobe:$P:size { @n++; @k[arg0 % 2]++; @d[1] += 5; @d[1] -= 2; }"),
    dict(name="ternary", prog="uprobe:$P:size { @[arg0 > 100 ? 1 : 0] = count(); @s[arg0 > 100 ? \"big\" : \"small\"] = count(); }"),
    dict(name="if_else", prog="uprobe:$P:size { if (arg0 < 10) { @small++; } else if (arg0 < 5000) { @mid++; } else { @big++; } }"),
    dict(name="casts", prog="uprobe:$P:size { @[(int8)arg0, (uint16)arg0] = count(); }"),
    dict(name="signed_compare", prog="uretprobe:$P:negative /(int64)retval < -3/ { @n = count(); }", args="9"),
    dict(name="unroll", prog="uprobe:$P:size { $i = 0; unroll(5) { $i = $i + arg0; } @[$i] = count(); }"),
    dict(name="return", prog="uprobe:$P:size { if (arg0 > 10) { return; } @small[arg0] = count(); }"),
    # predicates
    dict(name="predicate", prog="uprobe:$P:size /arg0 > 4096/ { @big = count(); }"),
    # a predicate on one register argument is tested before the block runs
    # (np_vm_passes): each compare, hits that pass and hits that do not
    dict(name="predicate_ops", prog="uprobe:$P:size /arg0 != 4096/ { @ne = count(); } "
         "uprobe:$P:size /arg0 <= 100/ { @le = count(); } uprobe:$P:size /arg0 >= 100/ { @ge = count(); } "
         "uprobe:$P:size /arg0 < 3/ { @lt[arg0] = count(); } uprobe:$P:size /arg0 == 7/ { @eq = sum(arg0); }"),
    dict(name="predicate_sixth_arg", prog="uprobe:$P:eight /arg5 > 2/ { @[arg5, arg0] = count(); }", args="5"),
    dict(name="predicate_and_or", prog="uprobe:$P:size /(arg0 > 2 && arg0 < 1000) || arg0 == 0/ { @[arg0] = count(); }"),
    dict(name="predicate_string", prog="uprobe:$P:name /str(arg0) == \"grace\"/ { @g = count(); } uprobe:$P:name /str(arg0) != \"grace\"/ { @o = count(); }"),
    dict(name="strncmp", prog="uprobe:$P:name /strncmp(str(arg0), \"lin\", 3) == 0/ { @[arg1] = count(); }"),
    dict(name="predicate_map", prog="uprobe:$P:square { @start[tid] = arg0; } uretprobe:$P:square /@start[tid]/ { @r = sum(retval); delete(@start[tid]); }", args="6"),
    # arguments, return values
    dict(name="args", prog="uprobe:$P:eight { printf(\"%d %d %d %d %d %d\\n\", arg0, arg1, arg2, arg3, arg4, arg5); }", args="3"),
    dict(name="sargs", prog="uprobe:$P:eight { printf(\"%d %d\\n\", sarg0, sarg1); }", args="3"),
    dict(name="retval", prog="uretprobe:$P:square { @[retval] = count(); }", args="6"),
    dict(name="retval_printf", prog="uretprobe:$P:negative { printf(\"%d %lu %lx\\n\", retval, retval, retval); }", args="4"),
    # bpftrace 0.17 prints %u and %x of a 64-bit value with 32 bits (4294967293,
    # fffffffd for -3) while %d uses all 64: nanoprobe gives every integer 64.
    dict(name="printf_u_x_64bit", prog="uretprobe:$P:negative { printf(\"%d %u %x\\n\", retval, retval, retval); }",
         args="2", bug="bpftrace 0.17 cuts %u and %x to 32 bits",
         expect_printf=["0 0 0", "-3 18446744073709551613 fffffffffffffffd"]),
    dict(name="latency_pattern", prog="uprobe:$P:descend { @depth[tid] = arg0; } uretprobe:$P:descend /@depth[tid]/ { @d = hist(@depth[tid]); delete(@depth[tid]); }", args="3"),
    # printf and other output
    dict(name="printf_formats", prog="uprobe:$P:name { printf(\"%s|%5d|%-5d|%05x|%c|%u\\n\", str(arg0), arg1, arg1, arg1 * 300, 65 + arg1, arg1); }", args="2"),
    dict(name="printf_comm", prog="uprobe:$P:eight { printf(\"%s %d\\n\", comm, arg5); }", args="3"),
    dict(name="str_fault", prog="uprobe:$P:bad_pointer { printf(\"[%s]\\n\", str(arg0)); }", args="2"),
    dict(name="print_map", prog="uprobe:$P:size { @[arg0 % 3] = count(); } END { print(@, 2); print(@, 0, 2); clear(@); }"),
    dict(name="print_value", prog="uprobe:$P:square { print(arg0); print(\"x\"); }", args="3"),
    dict(name="zero_clear", prog="uprobe:$P:size { @a[arg0 % 2] = count(); @b[arg0 % 2] = count(); } END { zero(@a); clear(@b); }"),
    dict(name="delete", prog="uprobe:$P:size { @[arg0 % 4] = count(); if (arg0 % 4 == 1) { delete(@[1]); } }"),
    dict(name="begin_end", prog="BEGIN { printf(\"begin\\n\"); @b = 1; } uprobe:$P:size { @n = count(); } END { printf(\"end\\n\"); }"),
    dict(name="begin_only", prog="BEGIN { @x[\"a\"] = 1; @y = 2 * 21; printf(\"%d\\n\", 7 % 3); exit(); }"),
    dict(name="exit", prog="uprobe:$P:square /arg0 == 2/ { printf(\"bye\\n\"); exit(); }", args="6"),
    dict(name="threads", prog="uprobe:$P:size { @[tid == pid] = count(); @t = count(); }", args="3 4"),
    dict(name="multi_probe", prog="uprobe:$P:size, uprobe:$P:leaf { @[probe] = count(); }"),
    dict(name="wildcard", prog="uprobe:$P:s* { @[probe] = count(); }"),
    dict(name="json", prog="uprobe:$P:size { @c = count(); @h = hist(arg0); @l = lhist(arg0, 0, 10, 5); @st = stats(arg0); @k[arg0 % 2, \"a\"] = count(); printf(\"x %d\\n\", arg0); }", format="json"),
    # symbols and stacks: bpftrace's output is rewritten where it is wrong
    dict(name="func", prog="uprobe:$P:size, uprobe:$P:leaf { @[func] = count(); }", bug=FUNC_ADDR,
         expect={"@[size]: 120", "@[leaf]: 50"}),
    # an entry and a return probe of one function are one func key
    dict(name="func_entry_and_return", prog="uprobe:$P:size, uretprobe:$P:size { @[func] = count(); }",
         bug=FUNC_ADDR + "; its func in a uretprobe is the address returned to",
         expect={"@[size]: 240"}, skip_compare=True),
    dict(name="err_unknown_builtin", prog="uprobe:$P:leaf { @[usym(reg_ip)] = count(); }", expect_error="Unknown identifier: 'reg_ip'"),
    dict(name="ustack", prog="uprobe:$P:leaf { @[ustack] = count(); }", stack=True, bug=FUNC_ADDR),
    dict(name="ustack3", prog="uprobe:$P:leaf { @[ustack(3)] = count(); }", stack=True, bug=FUNC_ADDR),
    # USDT probes (progs/usdt.c, target="usdt"): the program's own line says
    # how often its semaphore-guarded probes ran, under each tool
    dict(name="usdt_count", target="usdt", prog="usdt:$U:usdt_test:tick { @ = count(); }"),
    dict(name="usdt_args", target="usdt", sort=True,
         prog="usdt:$U:usdt_test:args { @[arg1] = sum(arg2); @mn = min(arg0); @mx = max(arg0); @h = hist(arg1); printf(\"%d %d %d\\n\", arg0, arg1, arg2); }"),
    dict(name="usdt_predicate", target="usdt", prog="usdt:$U:usdt_test:args /arg0 == 0 || arg1 > 5000/ { @[arg1] = count(); }"),
    dict(name="usdt_wildcard", target="usdt", prog="usdt:$U:usdt_test:* { @[probe] = count(); }"),
    dict(name="usdt_any_provider", target="usdt", prog="usdt:$U:*:args { @[probe] = count(); }"),
    dict(name="usdt_two_sites", target="usdt", prog="usdt:$U:usdt_test:twice { @[arg0] = count(); @s = sum(arg0); }"),
    dict(name="usdt_semaphore", target="usdt", prog="usdt:$U:usdt_sema:guarded { @ = count(); @s = sum(arg0); @l = lhist(arg0, 0, 10, 2); }"),
    dict(name="usdt_operands", target="usdt", sort=True,
         prog="usdt:$U:usdt_asm:args { printf(\"%d %d %d %d %d %d\\n\", arg0, arg1, arg2, arg3, arg4, arg5); }",
         bug="bpftrace 0.17 (bcc) misreads -2@usdt_words+2(%rip), a global through a symbol: -1911 for -200",
         expect_printf=sorted([f"{[11, -22, 33, -44, -55][r % 4 + 1]} {[11, -22, 33, -44, -55][r % 4]} {r} -200 {-r} -5"
                               for r in range(10)] + ["usdt: rounds=10 guarded=0 lib_guarded=0 sum=46220"])),
    dict(name="usdt_library", target="usdt", prog="usdt:$L:usdt_lib:lib_probe { @[arg0] = sum(arg1); }",
         bt_fails="bpftrace 0.17 finds no USDT location in a library the program loads at start (-c)",
         expect={f"@[{r}]: {r * r}" for r in range(10)}, skip_compare=True,
         expect_line="usdt: rounds=10 guarded=0 lib_guarded=10 sum=46220"),
    dict(name="usdt_json", target="usdt", format="json", prog="usdt:$U:usdt_test:args { @c = count(); @h = hist(arg1); @k[arg2 + 10] = sum(arg1); }"),
    # errors, with bpftrace's line, column and caret
    dict(name="err_unknown_function", prog="uprobe:$P:size { @x = foo(1); }", expect_error="Unknown function: foo"),
    dict(name="err_undefined_var", prog="uprobe:$P:size { @x = $y; }", expect_error="Undefined or undeclared variable: $y"),
    dict(name="err_kprobe", prog="kprobe:do_nanosleep { @ = count(); }", skip_bpftrace=True, expect_error="kprobe probes are not supported"),
]


def run(argv, stdin=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr


def entries(out):
    """(printf lines, map entries): an entry is a line starting with '@'
    with the lines that belong to it (hist buckets, stack frames)."""
    lines = [l for l in out.splitlines()
             if not l.startswith("Attaching ") and not l.startswith("scripted:")]
    printed, maps, cur = [], [], None
    for l in lines:
        if l.startswith("@"):
            cur = [l]
            maps.append(cur)
            if re.search(r": .+$", l) and not l.endswith("["):
                cur = None
            continue
        if cur is not None and l.strip():
            cur.append(l)
            if l.startswith("]: "):
                cur = None
            continue
        cur = None
        if l.strip():
            printed.append(l)
    return printed, sorted("\n".join(e) for e in maps)


def json_records(out):
    recs = []
    for l in out.splitlines():
        if not l.strip() or l.startswith("scripted:") or l.startswith("usdt: rounds"):
            continue
        r = json.loads(l)
        if r.get("type") != "attached_probes":
            recs.append(json.dumps(r, sort_keys=True))
    return sorted(recs)


def target(case):
    return USDT if case.get("target") == "usdt" else PROG


def np_cmd(case, prog):
    argv = [NP, "run", "-e", prog]
    if case.get("format"):
        argv += ["-f", case["format"]]
    return argv + ["-c", f"{target(case)} {case.get('args', '10')}"]


def bt_cmd(case, prog):
    argv = [BPFTRACE, "-e", prog]
    if case.get("format"):
        argv += ["-f", case["format"]]
    return argv + ["-c", f"{target(case)} {case.get('args', '10')}"]


def stack_frames(entry):
    lines = entry.splitlines()
    return [l.strip() for l in lines[1:-1]], lines[-1]


def check_stack(case, ours, theirs):
    """The caller of a function at its entry is the return address on top of
    the stack: the kernel's frame-pointer walk of bpftrace 0.17 here leaves it
    out (its first frame after the pc is the caller's caller), and names no
    frame (FUNC_ADDR). So: the same keys count the same hits, each of our
    stacks is bpftrace's with the caller put back, and ours are named."""
    if len(ours) != len(theirs):
        return f"{len(ours)} stacks, bpftrace {len(theirs)}"
    for o, t in zip(sorted(ours, key=lambda e: e.splitlines()[-1]),
                    sorted(theirs, key=lambda e: e.splitlines()[-1])):
        of, ocount = stack_frames(o)
        tf, tcount = stack_frames(t)
        if ocount != tcount:
            return f"count {ocount} != {tcount}"
        if not of or of[0] != "leaf+0" or not of[1].startswith("descend+"):
            return f"our stack is not leaf, descend...: {of}"
        # gcc's build: the kernel's walk leaves the caller out; clang's
        # (make check-sanitize) gave bpftrace as many frames as ours
        wants = {len(tf) + 1} if os.environ.get("NP_CC_ID", "gcc") == "gcc" \
            else {len(tf), len(tf) + 1}
        if "(3)" in case["prog"]:
            wants = {3}
        if len(of) not in {min(w, 127) for w in wants}:
            return f"{len(of)} frames, bpftrace {len(tf)} (+ the caller)"
        if any(f.startswith("0x") for f in of[:4]):
            return f"unnamed frames: {of}"
    return None


def compare(case, ours, theirs):
    if case.get("format") == "json":
        a, b = json_records(ours), json_records(theirs)
        return None if a == b else f"json differs:\n ours {a}\n bpftrace {b}"
    op, om = entries(ours)
    tp, tm = entries(theirs)
    if case.get("stack"):
        return check_stack(case, om, tm)
    if "expect_printf" in case:
        if case.get("sort"):
            op, tp = sorted(op), sorted(tp)
        if op != case["expect_printf"]:
            return f"ours {op}, want {case['expect_printf']}"
        if [l.split()[0] for l in op] != [l.split()[0] for l in tp]:
            return f"%d differs from bpftrace's {tp}"
        return None
    if "expect" in case:
        if set(om) != case["expect"]:
            return f"ours {om}, want {case['expect']}"
        if case.get("skip_compare"):
            return None
        counts = sorted(e.split(": ")[-1] for e in om)
        if counts != sorted(e.split(": ")[-1] for e in tm):
            return f"counts differ from bpftrace's {tm}"
        return None
    if case.get("sort") or case.get("args", "").count(" "):
        op, tp = sorted(op), sorted(tp)
    if op != tp:
        return f"printf lines differ:\n ours {op}\n bpftrace {tp}"
    if om != tm:
        return f"maps differ:\n ours {om}\n bpftrace {tm}"
    return None


def why_no_bpftrace():
    if not BPFTRACE:
        return "not installed"
    if os.geteuid() != 0:
        return "it needs root"
    return "no tracefs at /sys/kernel/tracing: make deps mounts it"


def main():
    can_bpftrace = BPFTRACE and os.geteuid() == 0 and os.path.isdir("/sys/kernel/tracing/events")
    passed = failed = skipped = 0
    only = sys.argv[1:]
    for case in CASES:
        if only and case["name"] not in only:
            continue
        if case.get("target") == "usdt" and not USDT:
            print(f"skip {case['name']}: no USDT test program (sys/sdt.h missing at build time)")
            skipped += 1
            continue
        prog = case["prog"].replace("$P", PROG).replace("$U", USDT).replace("$L", USDT_LIB)
        rc, out, err = run(np_cmd(case, prog))
        if "expect_error" in case:
            ok = rc == 2 and case["expect_error"] in err and "~" in err
            print(f"{'ok' if ok else 'FAIL'} {case['name']}: {err.strip().splitlines()[0] if err.strip() else rc}")
            if can_bpftrace and not case.get("skip_bpftrace"):
                brc, _, berr = run(bt_cmd(case, prog))
                ok = ok and brc != 0 and case["expect_error"] in berr
            passed, failed = passed + ok, failed + (not ok)
            continue
        if rc != 0:
            print(f"FAIL {case['name']}: nanoprobe exited {rc}: {err.strip()}")
            failed += 1
            continue
        if case.get("bt_fails"):
            # bpftrace cannot run it: ours against the right answer, and
            # bpftrace still failing (a fixed bpftrace would be compared)
            why = compare(case, out, "")
            if not why and case.get("expect_line") not in out.splitlines():
                why = f"no line {case['expect_line']!r}"
            if not why and can_bpftrace and run(bt_cmd(case, prog))[0] == 0:
                why = "bpftrace ran it: compare with it now"
            print(f"{'FAIL' if why else 'ok'} {case['name']}: {why or 'bpftrace bug: ' + case['bt_fails']}")
            passed, failed = passed + (not why), failed + bool(why)
            continue
        if not can_bpftrace or case.get("skip_bpftrace"):
            print(f"skip {case['name']}: bpftrace not runnable here ({why_no_bpftrace()}); nanoprobe ran")
            skipped += 1
            continue
        brc, bout, berr = run(bt_cmd(case, prog))
        if brc != 0:
            print(f"FAIL {case['name']}: bpftrace exited {brc}: {berr.strip()[-300:]}")
            failed += 1
            continue
        why = compare(case, out, bout)
        if why:
            print(f"FAIL {case['name']}: {why}")
            failed += 1
        else:
            note = f" (bpftrace bug: {case['bug']})" if case.get("bug") else ""
            print(f"ok {case['name']}{note}")
            passed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
