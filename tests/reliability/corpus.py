#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The differential corpus (issue 17): real C code bases compiled here,
with -fipa-ra, and run with every function's entry and return probed.

GCC's -fipa-ra (on from -O2) lets a caller keep a value in a
caller-saved register across a call to a function of its own file (or,
under -flto, of its own program) that it knows does not write that
register. A return path that clobbers one breaks such a caller, whatever
the ABI says (issue 17, item 1). Debian's own binaries (differential.py)
are built that way too, but `count` probes no return: its `%return` is a
second counter at the entry. This corpus probes every return for real.

The code bases are Debian's source packages of Lua 5.4 and SQLite, from
the archive and suite the machine's apt sources name, fetched with
`apt-get source` under a private sources list and lists directory
(nothing of the machine's apt state changes), unpacked with their Debian
patches by dpkg-source, and built here as single programs (every
function non-interposable, so -fipa-ra applies to every call between
them) for the ISA under test:

  lua-O2, lua-O3-lto        the interpreter and its libraries (not luac)
  sqlite3-O2, sqlite3-O3-lto  the amalgamation and the shell, with
                            Debian's SQLITE_* options

with the host's gcc, or aarch64-linux-gnu-gcc / riscv64-linux-gnu-gcc
(riscv64 against the sysroot of cross/riscv64-sysroot.sh). Sources and
builds are cached under NP_CORPUS_DIR (the build folder's corpus/).

Each program runs its workload (tests/reliability/corpus/: Lua scripts
run by run.lua, an SQL script through the shell) plainly, and under
`nanoprobe latency PROG:*` with --strategy auto and --strategy trap: an
entry and a return probe on every function of the program. Exit status,
stdout and stderr must be the plain run's, nothing may be lost, and both
strategies must see the same number of returns. Natively, and where
NP_CORPUS_COUNTS says so, `count` AUTO and TRAP on every entry are also
compared probe by probe (differential.py's comparison).

On x86-64 it first checks, with objdump, that the -O2 builds do contain
callers that read a caller-saved register (rcx, rsi, rdi, r8-r11) after
a call to a function of their own before writing it: the corpus can only
catch a return path that clobbers those if the compiler relied on them.

Environment: that of differential.py (NP_CLI, NP_DIFF_ISA, NP_DIFF_ROOT,
NP_DIFF_SYSROOT, NP_DIFF_AGENT), and NP_CORPUS_DIR (cache), NP_CORPUS_SCALE
(workload size, default 0.2), NP_CORPUS_LUA (the Lua scripts to run,
default all), NP_CORPUS_COUNTS (1: also the per-probe count comparison;
default 1 natively, 0 under qemu), NP_CORPUS_SAMPLE (that many of the
programs, picked at random; NP_CORPUS_SAMPLE_SEED repeats a pick).
Arguments: the programs to run (default all four). Runs for several ISAs
may share the cache at once (make check runs them side by side): the
sources are fetched and unpacked under a lock, each ISA builds in a
folder of its own.
"""
import concurrent.futures
import fcntl
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import differential as D
from differential import R, note
from tap import sample

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "corpus")
CACHE = os.path.abspath(os.environ.get("NP_CORPUS_DIR") or os.path.join(D.ROOT, "build/corpus"))
SCALE = float(os.environ.get("NP_CORPUS_SCALE", "0.2"))
LUA_SCRIPTS = (os.environ.get("NP_CORPUS_LUA") or "strings tables functions compile gc").split()
COUNTS = os.environ.get("NP_CORPUS_COUNTS", "1" if D.ISA == "x86_64" else "0") == "1"
PACKAGES = ("lua5.4", "sqlite3")
LEVELS = {"O2": ["-O2"], "O3-lto": ["-O3", "-flto=2"]}
# what Debian's sqlite3 package builds with (debian/rules), less the
# extension loading that a single program does not need
SQLITE_DEFS = """-fno-strict-aliasing -DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_COLUMN_METADATA
 -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_ENABLE_RTREE=1
 -DSQLITE_SOUNDEX=1 -DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_OMIT_LOOKASIDE=1
 -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ALLOW_ROWID_IN_VIEW -DSQLITE_ENABLE_UPDATE_DELETE_LIMIT=1
 -DSQLITE_ENABLE_JSON1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_THREADSAFE=1
 -DSQLITE_USE_URI=1 -DSQLITE_MAX_SCHEMA_RETRY=25 -DSQLITE_ENABLE_PREUPDATE_HOOK
 -DSQLITE_ENABLE_SESSION -DSQLITE_ENABLE_STMTVTAB -DSQLITE_OMIT_LOAD_EXTENSION""".split()
# Lua seeds its string hashes with the time and the addresses of a local
# and of its state (lstate.c, luai_makeseed). Under probes the stack and
# the heap start elsewhere than in the plain run, and the table layouts,
# with them the number of calls, would differ between runs: a fixed seed
# (Lua's own configuration point) keeps the work the same every run.
LUA_DEFS = ["-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-Dluai_makeseed(L)=0x2b7e1516u"]
CROSS_CC = {"x86_64": "gcc", "arm64": "aarch64-linux-gnu-gcc", "riscv64": "riscv64-linux-gnu-gcc"}


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


# --------------------------------------------------------------------------
# The sources: Debian's source packages, fetched once into the cache

def deb_src_lines():
    """deb-src lines for the archives and suites of the machine's apt
    sources (deb822 .sources files, or one-line sources.list entries)."""
    lines = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for stanza in open(path).read().split("\n\n"):
            f = {}
            for line in stanza.splitlines():
                if ":" in line and not line.startswith(("#", " ")):
                    k, v = line.split(":", 1)
                    f[k.strip()] = v.split()
            if "deb" not in f.get("Types", []) or not f.get("URIs"):
                continue
            signed = f"[signed-by={f['Signed-By'][0]}] " if f.get("Signed-By") else ""
            lines += [f"deb-src {signed}{u} {s} {' '.join(f.get('Components', ['main']))}"
                      for u in f["URIs"] for s in f.get("Suites", [])]
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        if os.path.exists(path):
            lines += ["deb-src" + l.strip()[3:] for l in open(path)
                      if l.strip().startswith("deb ")]
    return lines


def apt(cache, *args, cwd=None):
    """apt-get with a private sources list, lists and package cache."""
    conf = os.path.join(cache, "apt")
    opts = ["-o", f"Dir::Etc::SourceList={conf}/sources.list", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={conf}/lists", "-o", f"Dir::Cache={conf}/cache",
            "-o", "Debug::NoLocking=1", "-q"]
    return sh(["apt-get"] + opts + list(args), cwd=cwd)


def fetch_sources(cache):
    """Each package's .dsc and tarballs in cache/src (once)."""
    src = os.path.join(cache, "src")
    stamp = os.path.join(src, "fetched")
    if os.path.exists(stamp) and open(stamp).read().split() == list(PACKAGES):
        return src
    conf = os.path.join(cache, "apt")
    for d in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(conf, d), exist_ok=True)
    os.makedirs(src, exist_ok=True)
    for d in (src, os.path.join(conf, "cache/archives/partial")):
        os.chmod(d, 0o777)  # apt's download user writes there
    with open(os.path.join(conf, "sources.list"), "w") as f:
        f.write("\n".join(deb_src_lines()) + "\n")
    p = apt(cache, "update")
    if not R.check(p.returncode == 0, "corpus: apt-get update of the deb-src lists",
                   p.stdout[-1500:] + p.stderr[-1500:]):
        return None
    p = apt(cache, "source", "--download-only", *PACKAGES, cwd=src)
    if not R.check(p.returncode == 0, "corpus: apt-get source " + " ".join(PACKAGES),
                   p.stdout[-1500:] + p.stderr[-1500:]):
        return None
    with open(stamp, "w") as f:
        f.write(" ".join(PACKAGES) + "\n")
    return src


def unpack(cache, src, pkg):
    """The package's tree with Debian's patches applied. apt checked the
    files against the archive's signed Sources index when it fetched
    them; dpkg-source's own signature check would want a keyring of
    Debian's developers, which the machine need not have."""
    dsc = sorted(glob.glob(os.path.join(src, f"{pkg}_*.dsc")))[-1]
    tree = os.path.join(cache, os.path.basename(dsc)[:-4])
    if not os.path.isdir(tree):
        p = sh(["dpkg-source", "--no-check", "-x", dsc, tree + ".tmp"])
        if not R.check(p.returncode == 0, f"corpus: dpkg-source -x {os.path.basename(dsc)}",
                       p.stderr[-1500:]):
            return None
        os.rename(tree + ".tmp", tree)
    return tree


def amalgamation(cache, tree):
    """sqlite3.c and shell.c, generated by SQLite's own build (tclsh)."""
    out = os.path.join(cache, "sqlite-amalgamation")
    if all(os.path.exists(os.path.join(out, f)) for f in ("sqlite3.c", "shell.c", "sqlite3.h")):
        return out
    work = out + ".tmp"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    p = sh(["sh", "-c", f"{tree}/configure --disable-tcl >configure.log 2>&1 && "
                        "make sqlite3.c shell.c >make.log 2>&1 || { tail -30 *.log; exit 1; }"],
           cwd=work)
    if not R.check(p.returncode == 0, "corpus: the SQLite amalgamation generated",
                   p.stdout[-2000:] + p.stderr[-1000:]):
        return None
    os.makedirs(out, exist_ok=True)
    for f in ("sqlite3.c", "shell.c", "sqlite3.h", "sqlite3ext.h"):
        shutil.copy(os.path.join(work, f), out)
    shutil.rmtree(work)
    return out


# --------------------------------------------------------------------------
# The builds, one program per code base and level, cached per ISA

def compiler():
    cc = [CROSS_CC[D.ISA]]
    if D.ISA == "riscv64":  # the sysroot's libc, as the engine's own cross build
        lib = os.path.join(D.SYSROOT, "usr/lib/riscv64-linux-gnu")
        cc += [f"--sysroot={D.SYSROOT}", f"-L{lib}"]
    return cc


MULTIARCH = {"x86_64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu",
             "riscv64": "riscv64-linux-gnu"}


def lua_multiarch_header(out):
    """What Debian's rules write for luaconf.h (its module paths)."""
    with open(os.path.join(out, "lua5.4-deb-multiarch.h"), "w") as f:
        f.write("#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n"
                f'#define DEB_HOST_MULTIARCH "{MULTIARCH[D.ISA]}"\n#endif\n')
    return [f"-I{out}"]


def build_commands(lua_tree, amalg, out):
    """name -> (output, compile and link command)."""
    lua_inc = lua_multiarch_header(out)
    lua_src = sorted(f for f in glob.glob(os.path.join(lua_tree, "src", "*.c"))
                     if os.path.basename(f) not in ("luac.c",))
    cmds = {}
    for level, flags in LEVELS.items():
        cmds[f"lua-{level}"] = compiler() + flags + LUA_DEFS + lua_inc + lua_src + ["-lm"]
        cmds[f"sqlite3-{level}"] = compiler() + flags + SQLITE_DEFS + \
            [f"-I{amalg}", os.path.join(amalg, "sqlite3.c"), os.path.join(amalg, "shell.c"), "-lm"]
    return {name: (os.path.join(out, name), cmd + ["-o", os.path.join(out, name)])
            for name, cmd in cmds.items()}


def build_one(path, cmd):
    """Built unless the cached one was built by the same command."""
    stamp = path + ".cmd"
    if os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == " ".join(cmd):
        return path, None
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(path))
    if p.returncode:
        return path, " ".join(cmd)[-300:] + "\n" + p.stderr[-1500:]
    with open(stamp, "w") as f:
        f.write(" ".join(cmd))
    return path, None


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def shared_sources():
    """The unpacked trees and SQLite's amalgamation, made once for every
    ISA: under a lock, as another ISA's run may be making them."""
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        src = fetch_sources(CACHE)
        trees = {pkg: unpack(CACHE, src, pkg) for pkg in PACKAGES} if src else {}
        amalg = amalgamation(CACHE, trees["sqlite3"]) if trees.get("sqlite3") else None
    return trees, amalg


def build_all(wanted):
    trees, amalg = shared_sources()
    if not (trees.get("lua5.4") and amalg):
        return {}
    out = os.path.join(CACHE, D.ISA)
    os.makedirs(out, exist_ok=True)
    jobs = {n: c for n, c in build_commands(trees["lua5.4"], amalg, out).items() if n in wanted}
    started, cpu = time.monotonic(), children_cpu()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(jobs, pool.map(lambda nc: build_one(*nc), jobs.values())))
    note(f"corpus: {len(done)} {D.ISA} programs ready in {time.monotonic() - started:.0f} s "
         f"({children_cpu() - cpu:.0f} s of CPU)")
    built = {}
    for name, (path, err) in done.items():
        if R.check(err is None, f"corpus: {name} built for {D.ISA}", err or ""):
            built[name] = path
    return built


# --------------------------------------------------------------------------
# Are there callers that rely on -fipa-ra? (x86-64)

CALLER_SAVED = {"rcx": "rcx ecx cx cl ch", "rsi": "rsi esi si sil", "rdi": "rdi edi di dil",
                "r8": "r8 r8d r8w r8b", "r9": "r9 r9d r9w r9b", "r10": "r10 r10d r10w r10b",
                "r11": "r11 r11d r11w r11b"}
ALIAS = {a: r for r, names in CALLER_SAVED.items() for a in names.split()}
# instructions whose last operand, a register, is written and not read
WRITE_ONLY = ("mov", "lea", "pop", "set", "cvt", "pxor", "vmov")


def regs_in(text):
    return {ALIAS[m] for m in re.findall(r"%([a-z0-9]+)", text) if m in ALIAS}


def reads_after_call(insns):
    """From the instructions after a call up to the next branch: the first
    caller-saved register read before anything writes it, or None."""
    live = set(CALLER_SAVED)
    for op, args in insns:
        if op.startswith(("j", "call", "ret", "hlt", "ud2")):
            return None
        ops = re.split(r",(?![^(]*\))", args.split("#")[0].strip()) if args.strip() else []
        dst = ops[-1] if ops else ""
        read = set().union(*(regs_in(s) for s in ops[:-1])) if len(ops) > 1 else set()
        zeroing = op.startswith(("xor", "sub", "pxor")) and len(ops) == 2 and \
            regs_in(ops[0]) == regs_in(dst) and "(" not in dst
        if "(" in dst or not (op.startswith(WRITE_ONLY) or zeroing):
            read |= regs_in(dst)
        if read & live:
            return sorted(read & live)[0]
        if "(" not in dst:
            live -= regs_in(dst)
    return None


def ipa_ra_callers(path):
    """(call sites whose caller reads a caller-saved register it did not
    set since the call, examples): direct calls to the program's own
    functions only (a PLT call may run the dynamic linker)."""
    dump = sh(["objdump", "-d", "--no-show-raw-insn", path]).stdout
    insns = []
    for line in dump.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
        elif re.match(r"[0-9a-f]+ <", line):
            insns.append((None, "ret", ""))  # a function's end: stop there
    sites = []
    for i, (addr, op, args) in enumerate(insns):
        if op == "call" and "@plt" not in args and "*" not in args:
            reg = reads_after_call((o, a) for _, o, a in insns[i + 1:i + 64])
            if reg:
                sites.append(f"{addr:x}: call {args.split()[-1]}, then reads %{reg}")
    return sites


def check_ipa_ra(built):
    if D.ISA != "x86_64":
        return
    for name, path in sorted(built.items()):
        if not name.endswith("-O2"):
            continue
        sites = ipa_ra_callers(path)
        note(f"{name}: {len(sites)} calls after which the caller reads a caller-saved "
             "register it kept across the call (-fipa-ra), e.g. " + "; ".join(sites[:3]))
        R.check(len(sites) > 0, f"{name}: callers keep values in caller-saved registers "
                "across calls", "objdump found none: the corpus could not catch a return "
                "path that clobbers them")


# --------------------------------------------------------------------------
# Running

def workload(name, path, tmp):
    """argv and stdin of a program's workload."""
    if name.startswith("lua"):
        return [path, os.path.join(WORKLOADS, "lua", "run.lua"), f"{SCALE:g}"] + LUA_SCRIPTS, None
    with open(os.path.join(WORKLOADS, "workload.sql")) as f:
        sql = f.read().replace("{ROWS}", str(max(50, int(2000 * SCALE))))
    return [path, ":memory:"], sql.encode()


def latency_returns(out):
    """The number of returns `latency -j -o out` counted (a "stats" line
    per function, summed), or None."""
    total = None
    try:
        for line in open(out):
            obj = json.loads(line)
            if obj.get("type") == "stats":
                total = (total or 0) + obj["data"]["count"]
    except (OSError, ValueError, KeyError):
        return None
    return total


# Lua raises every error (error(), a failed pcall'd call) and yields every
# coroutine by longjmp: the calls it leaves never return, and the command
# says so (NP_MISS_LEFT). They are not lost events; the same number must be
# left under AUTO and TRAP. Any other program that reports them lost some.
LEFT = "the call was left without returning"
LEFT_COUNT = re.compile(r"(\d+) return events not recorded: the call was left without returning")


def leaves_by_longjmp(name):
    return name.startswith("lua")


def every_return(name, argv, stdin, plain, tmp):
    """Under `latency PROG:*`: an entry and a return probe on every
    function, AUTO then TRAP."""
    out = os.path.join(tmp, "latency.json")
    returns, left = {}, {}
    for strategy in ("auto", "trap"):
        label = f"{name} every entry and return {strategy}"
        p, _, _, own, perr = D.probed(strategy, [f"{argv[0]}:*"], argv, stdin, out,
                                      verb="latency")
        D.same_outcome(label, plain, p, perr)
        lost = [l for l in D.losses(own) if not (leaves_by_longjmp(name) and LEFT in l)]
        R.check(not lost, f"{label}: nothing lost", "\n".join(lost))
        left[strategy] = sum(int(m.group(1)) for l in own for m in [LEFT_COUNT.search(l)] if m)
        returns[strategy] = latency_returns(out)
        refused = [l for l in own if l.startswith("nanoprobe: cannot place ")]
        if refused:
            note(f"{label}: {len(refused)} refused at attach")
            for why, n in sorted(D.refusal_reasons(own).items(), key=lambda kv: -kv[1])[:6]:
                note(f"    {n} x {why}")
    note(f"{name}: returns counted auto {returns['auto']}, trap {returns['trap']}; "
         f"calls left by longjmp auto {left['auto']}, trap {left['trap']}")
    R.eq(left["auto"], left["trap"], f"{name}: AUTO and TRAP see the same calls left")
    R.check(returns["auto"] and returns["auto"] == returns["trap"],
            f"{name}: AUTO and TRAP count the same returns", str(returns))
    return returns["auto"] or 0


def run_program(name, path, tmp):
    argv, stdin = workload(name, path, tmp)
    plain = D.run(D.guest_wrapper() + argv, stdin)
    if not R.check(plain.returncode == 0 and plain.stdout, f"{name}: runs plainly",
                   plain.stderr.decode(errors="replace")[-1000:]):
        return
    returns = every_return(name, argv, stdin, plain, tmp)
    if COUNTS:
        _, fig = D.differential(f"{name} every entry counted", [f"{path}:*"], argv, stdin,
                                plain, tmp)
        note(f"{name}: probes/refused/compared/hits of the counts {fig}")
    note(f"{name}: {returns} returns, {len(plain.stdout)} bytes of output")


def main():
    if not os.access(D.NANOPROBE, os.X_OK):
        print(f"nanoprobe not found at {D.NANOPROBE}", file=sys.stderr)
        return 2
    names = [f"{p}-{l}" for p in ("lua", "sqlite3") for l in LEVELS]
    wanted = sample([n for n in names if not sys.argv[1:] or n in sys.argv[1:]],
                    "NP_CORPUS_SAMPLE")
    started = time.monotonic()
    built = build_all(wanted)
    check_ipa_ra(built)
    with tempfile.TemporaryDirectory(prefix="np-corpus-") as tmp:
        for name in wanted:
            if name in built:
                run_program(name, built[name], tmp)
    note(f"{D.ISA}: corpus done in {time.monotonic() - started:.0f} s")
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
