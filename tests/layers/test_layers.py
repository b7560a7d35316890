#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/check-layers.py passes on the tree, and fails, naming the file
and the header, on each violation planted in a copy of it."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap import Results  # noqa: E402

R = Results()
ROOT = os.path.abspath(sys.argv[1])
CHECK = os.path.join(ROOT, "tools/check-layers.py")

# (file, the include planted in it): each breaks the rule one way
PLANTED = [
    ("src/arch/x86_64/decode.c", "core/site.h"),       # pure ISA code reaching up
    ("src/arch/arm64/emit.c", "host/host.h"),          # ... or into the runtime
    ("src/core/probe.c", "agent/agent.h"),             # core reaching up
    ("src/core/region.c", "host/x86_64/internal.h"),   # core past the contract
    ("src/core/codemem.c", "core/batch.h"),            # code memory asking for batches
    ("src/core/symbols.c", "core/site.h"),             # ... what modules say, for sites
    ("src/host/x86_64/runtime.c", "core/site.h"),      # a host past the contract
    ("src/host/arm64/runtime.c", "core/engine.h"),
    ("src/agent/agent.c", "core/engine.h"),            # the agent past core/embed.h
    ("src/agent/vm.c", "core/plan.h"),                 # agent into core's insides
    ("tools/nanoprobe/main.c", "core/engine.h"),       # the command into core
    # the command's folders (tools/nanoprobe/)
    ("tools/nanoprobe/symbols/resolve.c", "session/session.h"),  # symbols up into the session
    ("tools/nanoprobe/session/session.c", "verbs/chrome.h"),     # the session into a verb
    ("tools/nanoprobe/session/tree.c", "commands.h"),   # ... or the table of verbs, by name
    ("tools/nanoprobe/bench/bench_loop.c", "session/session.h"),  # bench's parts run no session
    ("tools/nanoprobe/inject/inject.c", "cli.h"),       # the injector needs nothing of the command
    ("tools/nanoprobe/script/run.c", "verbs/cmd_list.h"),  # one verb into another
]


def check(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


def copy_tree(dst):
    for top in ("src", "tools", "examples"):
        shutil.copytree(os.path.join(ROOT, top), os.path.join(dst, top),
                        ignore=shutil.ignore_patterns("*.o", "__pycache__"))


def main():
    p = check(ROOT)
    R.eq(p.returncode, 0, "the tree keeps the rule", p.stdout + p.stderr)
    for rel, inc in PLANTED:
        with tempfile.TemporaryDirectory(prefix="np-layers-") as tmp:
            copy_tree(tmp)
            path = os.path.join(tmp, rel)
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(f'#include "{inc}"\n' + text)
            p = check(tmp)
            lines = p.stdout.splitlines()
            R.eq(p.returncode, 1, f"{rel} including {inc}: the check fails", p.stdout)
            want = f'check-layers: {rel}: includes "{inc}", which '
            R.check(len(lines) == 1 and lines[0].startswith(want),
                    f"{rel} including {inc}: one line, naming the file and the header",
                    p.stdout)
    with tempfile.TemporaryDirectory(prefix="np-layers-") as tmp:
        copy_tree(tmp)  # a debt paid: fork.c no longer needs core/thread.h
        path = os.path.join(tmp, "src/core/fork.c")
        with open(path) as f:
            text = f.read().replace('#include "core/thread.h"', "")
        with open(path, "w") as f:
            f.write(text)
        p = check(tmp)
        R.check(p.returncode == 1 and "remove the debt" in p.stdout,
                "a debt paid must leave the list", p.stdout)
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
