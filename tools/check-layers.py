#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers stay layers: every `#include "..."` of the tree against the
dependency rule of docs/design.md ("Layers").

    arch  <-  plan  <-  core  <-  agent (through core/embed.h), tools
                         |
                        host (meets core through host/host.h, host/layout.h)

A layer includes its own headers and those of the layers below it, never
one above. src/arch is pure ISA code: it includes nothing of the engine.
core and the host runtimes meet only through the host contract: host/host.h
(what a runtime provides, and the engine's few services it may call) and
host/layout.h (the objects both read: the context, the site, region and
thread blocks). A runtime includes those and the hit path's libc
replacements (core/nolibc.h), nothing else of core. The agent enters
core through core/embed.h and core/fork.h (and the libc replacements and
the clock).

Inside core, the concerns are layers too (CORE_TIERS): the base (engine
state, the fork protocol, code writes, the process's maps and tasks),
then code memory and what the modules say, then threads, traps and the
stop, then placing probes (sites, regions, batches, the patch protocols).
A core file includes the headers of its own tier and the ones below.

The command (tools/nanoprobe) keeps the same rule between its folders:

    inject, output, symbols  <-  session  <-  verbs, script (`run`)
                    symbols  <-  bench    <-  verbs (`bench`)

and main.c, at the top of the folder, includes any of them. The headers
beside it are included by name where a rule lists them: cli.h (the
message prefix, the option tables) by every folder but inject/,
suggest.h by symbols/, commands.h (the table of verbs) by the verbs.

An include without a '/' names a header of the file's own folder, or one
the build makes there (GENERATED); any other is checked as the rule
names it ("cli.h": the command's frame, found on its include path).

DEBTS lists the arrows that break the rule today, each with why it is
still there; the check fails on any other, and on a debt that is paid
(remove it from the list). Usage: check-layers.py [ROOT]; exit 0 when
the tree keeps the rule, 1 with one line per violation.
"""
import os
import re
import sys

# layer -> the include prefixes it may use, or exact headers (no '/' at the end)
RULES = {
    "src/arch": ("arch/",),
    "src/plan": ("arch/", "plan/"),
    "src/host": ("arch/", "plan/plan.h", "host/", "core/nolibc.h", "nanoprobe/"),
    "src/core": ("arch/", "plan/", "core/", "host/host.h", "host/layout.h", "nanoprobe/"),
    "src/agent": ("agent/", "arch/", "host/host.h", "core/embed.h", "core/fork.h",
                  "core/nolibc.h", "core/clock.h", "nanoprobe/"),
    "tools/nanoprobe": ("agent/proto.h", "agent/vm.h", "agent/vm_run.h", "arch/", "plan/",
                        "nanoprobe/", "bench/", "inject/", "output/", "script/", "session/",
                        "symbols/", "verbs/"),
    "tools/nanoprobe/verbs": ("cli.h", "commands.h", "arch/", "plan/", "nanoprobe/", "bench/",
                              "inject/", "output/", "session/", "symbols/"),
    "tools/nanoprobe/script": ("cli.h", "commands.h", "agent/vm.h", "agent/vm_run.h", "arch/",
                               "nanoprobe/", "inject/", "output/", "session/", "symbols/"),
    "tools/nanoprobe/session": ("cli.h", "agent/proto.h", "agent/vm.h", "nanoprobe/", "inject/",
                                "output/", "symbols/"),
    "tools/nanoprobe/bench": ("nanoprobe/", "symbols/"),
    "tools/nanoprobe/symbols": ("cli.h", "suggest.h", "agent/proto.h", "arch/", "plan/",
                                "nanoprobe/"),
    "tools/nanoprobe/output": ("cli.h",),
    "tools/nanoprobe/inject": (),  # ptrace and the ELF files of the process alone
    "tests": None,  # tests reach into every layer on purpose
    "bench": None,
    "examples": ("nanoprobe/",),
}

# The tiers of core, lowest first: the concern each header (and the .c of
# the same name) belongs to. A core file that no tier names is checked
# against the layers only.
CORE_TIERS = (
    ("base", ("nolibc", "clock", "maps", "engine", "embed", "sigchain", "tasks",
              "code_write", "log", "uread", "fork")),
    ("memory and modules", ("codemem", "reclaim", "modules", "symbols", "fde", "entry",
                            "neighbors")),
    ("threads, traps and the stop", ("thread", "shadow", "stacks", "unwind", "ctx", "stop",
                                     "stack_scan", "trap", "watch", "watch_hit")),
    ("placing probes", ("site", "probe", "region", "region_index", "region_write",
                        "word_write", "batch", "plan_host")),
)
TIER = {name: i for i, (_, names) in enumerate(CORE_TIERS) for name in names}

# (file, included): arrows that break the rule today, and why.
DEBTS = {
    ("src/core/fork.c", "core/thread.h"):
        "np_thread_wait_site: the quiesce queue waits out handlers",
    ("src/core/neighbors.c", "core/plan_host.h"):
        "np_read_original: neighbours' code as it was before any patch",
    ("src/core/reclaim.c", "core/stop.h"): "np_threads_census: the census asks every thread",
    ("src/core/reclaim.c", "core/trap.h"):
        "np_trap_each_published: a trampoline the trap table sends to stays",
    ("src/core/trap.c", "core/site.h"):
        "np_region_insn_index, np_region_refresh: the table's entries are regions",
}

# Headers the build makes in a folder of the build tree, beside the sources.
# frida_count.h: frida_count.py as a C string, made in tools/nanoprobe's
# build folder and included by bench/bench_tools.c alone.
GENERATED = {"tools/nanoprobe/version.h", "tools/nanoprobe/bench/frida_count.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".S", ".cpp")


def layer_of(rel):
    for prefix in sorted(RULES, key=len, reverse=True):
        if rel == prefix or rel.startswith(prefix + "/"):
            return prefix
    return None


def tier_of(path):
    return TIER.get(os.path.splitext(os.path.basename(path))[0])


def allowed(root, rel, inc, rules):
    if "/" not in inc:  # a header of the file's own folder?
        own = os.path.join(os.path.dirname(rel), inc)
        if own in GENERATED or os.path.isfile(os.path.join(root, own)):
            return True
    if not any(inc == p or (p.endswith("/") and inc.startswith(p)) for p in rules):
        return False
    if rel.startswith("src/core/") and inc.startswith("core/"):
        mine, theirs = tier_of(rel), tier_of(inc)
        return mine is None or theirs is None or theirs <= mine
    return True


def violations(root):
    found, seen_debts = [], set()
    for top in ("src", "tools", "examples"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                layer = layer_of(rel)
                rules = RULES.get(layer) if layer else ()
                if rules is None:
                    continue
                with open(path, errors="replace") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    if allowed(root, rel, inc, rules):
                        continue
                    if (rel, inc) in DEBTS:
                        seen_debts.add((rel, inc))
                        continue
                    where = layer or "a folder no layer names"
                    mine = tier_of(rel) if rel.startswith("src/core/") else None
                    if mine is not None and inc.startswith("core/") and tier_of(inc) is not None:
                        found.append(f"{rel}: includes \"{inc}\", which {where} may not "
                                     f"(a core file of '{CORE_TIERS[mine][0]}' may include "
                                     f"its own tier and those below, not "
                                     f"'{CORE_TIERS[tier_of(inc)][0]}')")
                        continue
                    found.append(f"{rel}: includes \"{inc}\", which {where} may not "
                                 f"(it may: {', '.join(rules) or 'nothing of the tree'})")
    for rel, inc in sorted(set(DEBTS) - seen_debts):
        found.append(f"{rel}: no longer includes \"{inc}\": remove the debt from "
                     "tools/check-layers.py")
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    found = violations(root)
    for line in found:
        print(f"check-layers: {line}")
    if not found:
        print(f"check-layers: the layers of {root} keep the rule "
              f"({len(DEBTS)} arrows owed, listed in DEBTS)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
