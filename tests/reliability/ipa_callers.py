#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Callers that keep values in caller-saved registers, under the command.

GCC's -fipa-ra (on at -O2) lets a caller keep a live value in any register
a non-interposable callee does not write, caller-saved ones included
(docs/reliability.md, issue 17 item 1). A probe that changes one breaks
the program: `for (i = 0; i < n; i++) s += h(i);` hung with n in rcx once
h had a return probe, and bash crashed in glibc's regcomp.c under
`nanoprobe latency 'c:*'`.

1. The program (ipa_callers/main.c, built at -O2) is checked to be such a
   program: its disassembly has calls to its own functions after which a
   caller-saved general register (rcx, rsi, rdi, r8-r11) and a vector
   register (xmm2-xmm15) are read before anything writes them.
2. It runs plainly, then under `count` with every function's entry and
   return probed (`'*' '*%return'`), `latency '*'` and
   `trace '*%return r=$retval'`, under AUTO and forced TRAP: the same
   output and exit status every time, and h's return counted once a call.
3. bash runs a script that matches regular expressions (glibc's regcomp
   and regexec, built with -fipa-ra) plainly and under
   `latency 'c:*'`: the same output.

Arguments: the program. Environment: NP_CLI (the nanoprobe command).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tap import Results  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
NANOPROBE = os.path.abspath(os.environ.get("NP_CLI") or
                            os.path.join(ROOT, "build/tools/nanoprobe/nanoprobe"))
SCALE = 10      # h is called 1000 * SCALE times (ipa_callers/loop.c)
TIMEOUT = 60      # seconds per run: a few here
ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "NANOPROBE_AGENT")}
ENV.update({"LC_ALL": "C", "DEBUGINFOD_URLS": ""})

R = Results()


# --------------------------------------------------------------------------
# 1. Is it such a program? A small reader of objdump's AT&T output: which
# registers an instruction reads and writes, enough to find a register
# read after a call before anything wrote it.

GPR = {"rcx": "rcx", "ecx": "rcx", "cx": "rcx", "cl": "rcx", "ch": "rcx",
       "rsi": "rsi", "esi": "rsi", "si": "rsi", "sil": "rsi",
       "rdi": "rdi", "edi": "rdi", "di": "rdi", "dil": "rdi"}
for _n in range(8, 12):
    for _s in ("", "d", "w", "b"):
        GPR[f"r{_n}{_s}"] = f"r{_n}"
VEC = {f"{w}mm{n}": f"xmm{n}" for w in "xyz" for n in range(2, 16)}
WATCHED = {**GPR, **VEC}
# the last operand only written (movs, loads of an address, conversions,
# which write part of a vector register: counted as written, to be safe)
WRITE_ONLY = re.compile(r"^(mov|lea|pop|set|cvt|vcvt|vmov|pinsr|vbroadcast|vpbroadcast)")
ENDS_BLOCK = re.compile(r"^(call|jmp|j[a-z]+|ret|ud2|hlt)\b")


def operands(text):
    """'0x8(%rax,%rcx,8),%rdx' -> ['0x8(%rax,%rcx,8)', '%rdx']"""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return [o.strip() for o in out + [cur] if o.strip()]


def regs_in(operand):
    return {WATCHED[r] for r in re.findall(r"%([a-z0-9]+)", operand) if r in WATCHED}


def reads_writes(mnemonic, ops):
    if not ops:
        return set(), set()
    if len(ops) == 2 and ops[0] == ops[1] and re.match(r"^v?p?xor", mnemonic):
        return set(), regs_in(ops[1])  # zeroing idiom
    dest = ops[-1]
    reads = set().union(*(regs_in(o) for o in ops[:-1])) if len(ops) > 1 else set()
    if "(" in dest:  # a store: the address registers are read
        return reads | regs_in(dest), set()
    if len(ops) == 1:  # push, inc, neg, call *%rcx...: read (pop: written)
        return (set(), regs_in(dest)) if mnemonic.startswith("pop") else (regs_in(dest), set())
    three_op_vex = mnemonic.startswith("v") and len(ops) == 3
    if WRITE_ONLY.match(mnemonic) or three_op_vex:
        return reads, regs_in(dest)
    return reads | regs_in(dest), regs_in(dest)


def kept_across_calls(program):
    """(function, callee, register) for each caller-saved register read
    after a call to a function of the program before anything wrote it."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", program],
                         capture_output=True, text=True, check=True).stdout
    found, func, pending = set(), None, None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            func, pending = m.group(1), None
            continue
        m = re.match(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$", line)
        if not m or not func:
            continue
        mnemonic, rest = m.group(1), re.sub(r"\s*#.*$", "", m.group(2))
        if pending:
            callee, unwritten = pending
            reads, writes = reads_writes(mnemonic, operands(rest.split("<")[0]))
            found |= {(func, callee, r) for r in reads & unwritten}
            unwritten -= writes
        pending = None if ENDS_BLOCK.match(mnemonic) else pending
        call = re.match(r"^[0-9a-f]+ <([^>@+]+)>$", rest)
        if mnemonic.startswith("call") and call:
            pending = (call.group(1), set(WATCHED.values()))
    return found


def check_program_keeps_values(program):
    found = kept_across_calls(program)
    gprs = sorted(f for f in found if not f[2].startswith("xmm"))
    vecs = sorted(f for f in found if f[2].startswith("xmm"))
    for what, hits in (("general", gprs), ("vector", vecs)):
        R.check(hits, f"the program keeps a value in a caller-saved {what} register "
                "across a call to its own function",
                "no such caller: the compiler no longer does what this test needs")
        for func, callee, reg in hits[:6]:
            print(f"#   {func}: {reg} across its call to {callee}")


# --------------------------------------------------------------------------
# 2 and 3. Runs.

def run(argv):
    """In a session of its own: on a timeout (a clobbered loop bound hangs)
    the program the command started goes too."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
        status = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        status = f"killed after {TIMEOUT} s"
    return subprocess.CompletedProcess(argv, status, out, err)


def same_as_plain(label, plain, p):
    detail = (f"status {p.returncode} (plain {plain.returncode})\n"
              f"stdout: {p.stdout.decode(errors='replace')[-800:]}\n"
              f"stderr: {p.stderr.decode(errors='replace')[-1500:]}")
    R.check(p.returncode == plain.returncode and p.stdout == plain.stdout,
            f"{label}: same output and exit status as unprobed", detail)


def count_of(path, probe):
    try:
        with open(path) as f:
            rows = json.load(f)["counts"]
    except (OSError, ValueError, KeyError):
        return None
    return next((r["count"] for r in rows if r["probe"] == probe), None)


def check_command_runs(program, tmp):
    argv = [program, str(SCALE)]
    plain = run(argv)
    R.check(plain.returncode == 0 and plain.stdout.count(b"\n") == 3,
            "the program runs unprobed", plain.stderr.decode(errors="replace"))
    counts = os.path.join(tmp, "counts.json")
    for strategy in ("auto", "trap"):
        s = ["--strategy", strategy]
        p = run([NANOPROBE, "count", "-j", "-o", counts] + s + ["*", "*%return", "--"] + argv)
        same_as_plain(f"count '*' '*%return' ({strategy})", plain, p)
        R.eq(count_of(counts, "h%return"), 1000 * SCALE,
             f"count ({strategy}): every return of h counted")
        p = run([NANOPROBE, "latency", "-o", os.devnull] + s + ["*", "--"] + argv)
        same_as_plain(f"latency '*' ({strategy})", plain, p)
        p = run([NANOPROBE, "trace", "-o", os.devnull] + s + ["*%return r=$retval", "--"] + argv)
        same_as_plain(f"trace '*%return r=$retval' ({strategy})", plain, p)


BASH_SCRIPT = r"""
for v in python3.11 pypy3.9 python 3.12 jython2.7; do
  if [[ $v =~ ^(python|pypy)([0-9]+)\.([0-9]+)$ ]]; then
    echo "$v: ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
  else
    echo "$v: no match"
  fi
done
case "$v" in j*[0-9]) echo glob;; esac
"""


def check_bash_regex(tmp):
    bash = shutil.which("bash")
    if not bash:
        R.skip("bash regex script under latency 'c:*'", "no bash")
        return
    script = os.path.join(tmp, "regex.sh")
    with open(script, "w") as f:
        f.write(BASH_SCRIPT)
    plain = run([bash, script])
    R.check(b"python3.11: python 3.11" in plain.stdout, "the bash script runs unprobed",
            plain.stdout.decode(errors="replace"))
    p = run([NANOPROBE, "latency", "-o", os.devnull, "c:*", "--", bash, script])
    same_as_plain("bash matching regular expressions under latency 'c:*'", plain, p)


def main():
    program = os.path.abspath(sys.argv[1])
    check_program_keeps_values(program)
    with tempfile.TemporaryDirectory() as tmp:
        check_command_runs(program, tmp)
        check_bash_regex(tmp)
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
