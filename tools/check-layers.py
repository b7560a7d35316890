#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers stay layers: every `#include "..."` of the tree against the
dependency rule of docs/design.md ("Layers").

    arch  <-  plan  <-  core  <-  agent, tools
                         |
                        host (meets core through host/host.h only)

A layer includes its own headers and those of the layers below it, never
one above. src/arch is pure ISA code: it includes nothing of the engine.
core sees the host runtime only through its contract, host/host.h; the
runtime implements that contract in the engine's types (core/internal.h)
and uses the hit path's libc replacements (core/nolibc.h) and the piece
lists of trampolines (core/pieces.h).

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
    "src/host": ("arch/", "host/", "core/internal.h", "core/nolibc.h", "core/pieces.h"),
    "src/core": ("arch/", "plan/", "core/", "host/host.h", "nanoprobe/"),
    "src/agent": ("agent/", "arch/", "host/host.h", "core/nolibc.h", "core/clock.h",
                  "core/fork.h", "nanoprobe/"),
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

# (file, included): arrows that break the rule today, and why.
DEBTS = {
    ("src/agent/agent.c", "core/internal.h"): "np_fd_move_high: the engine's fd helper",
    ("src/agent/maskguard.c", "core/stop.h"): "np_patch_signal: the program must not block it",
    ("src/agent/modules.c", "core/internal.h"): "struct np_probe, to re-place probes",
    ("src/agent/signals.c", "core/internal.h"): "np_trap_chain_swap",
    ("src/agent/signals.c", "core/stop.h"): "np_patch_signal: the program must not block it",
    ("tools/nanoprobe/verbs/watch_spec.c", "core/watch.h"):
        "np_watch_check_shape, shared with core",
}

# Headers the build makes in a folder of the build tree, beside the sources.
GENERATED = {"tools/nanoprobe/version.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".S", ".cpp")


def layer_of(rel):
    for prefix in sorted(RULES, key=len, reverse=True):
        if rel == prefix or rel.startswith(prefix + "/"):
            return prefix
    return None


def allowed(root, rel, inc, rules):
    if "/" not in inc:  # a header of the file's own folder?
        own = os.path.join(os.path.dirname(rel), inc)
        if own in GENERATED or os.path.isfile(os.path.join(root, own)):
            return True
    return any(inc == p or (p.endswith("/") and inc.startswith(p)) for p in rules)


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
