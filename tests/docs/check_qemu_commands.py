# SPDX-License-Identifier: MIT
"""Every command the repository shows for running an arm64 program under
qemu-aarch64 with the cross sysroot names the cross libc first.

`qemu-aarch64 -L /usr/aarch64-linux-gnu PROG` takes the cross ld.so from
the sysroot, but the loader then finds libc.so.6 through the host's
ld.so.cache and its multiarch directories: on a machine with libc6:arm64
installed (the engine's arm64 libelf needs it) that is the multiarch libc,
of another Debian revision than the cross loader. The two disagree on the
loader's private data, and the program's first pthread_create (the
agent's, under nanoprobe) walks a stack list at the wrong offset forever
(docs/reliability.md, issue 17 item 15). So each such command must set
the guest's LD_LIBRARY_PATH with -E, the cross sysroot's lib before any
multiarch directory.

Usage: check_qemu_commands.py SOURCE_ROOT"""
import os
import re
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap import Results  # noqa: E402

SYSROOT = "/usr/aarch64-linux-gnu"
CROSS_LIB = SYSROOT + "/lib"
MULTIARCH = ("/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu")
PLACES = ("README.md", "docs", "tests", "tools", "bench", "examples", "Makefile", "cross")
SUFFIXES = (".md", ".sh", ".py", ".ini", "Makefile")


def files(root):
    for place in PLACES:
        top = os.path.join(root, place)
        if os.path.isfile(top):
            yield top
        for d, _, names in os.walk(top):
            for n in sorted(names):
                if n.endswith(SUFFIXES) and n != os.path.basename(__file__):
                    yield os.path.join(d, n)


def commands(path):
    """(line number, text) of each qemu-aarch64 command, continuation
    lines joined: a trailing backslash, or in Markdown an inline code span
    that goes on on the next line."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    markdown = path.endswith(".md")

    def goes_on(text):
        if text.endswith("\\"):
            return True
        return markdown and not text.lstrip().startswith("```") and text.count("`") % 2 == 1

    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while goes_on(text) and i + 1 < len(lines):
            i += 1
            text = (text[:-1] if text.endswith("\\") else text) + " " + lines[i].strip()
        i += 1
        for m in re.finditer(r"qemu-aarch64\s+-L\s+\S+[^`'\"]*", text):
            yield start + 1, m.group(0)


def library_path(cmd):
    """The guest's LD_LIBRARY_PATH that -E sets, as a list, or None."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    for a, b in zip(words, words[1:]):
        if a == "-E" and b.startswith("LD_LIBRARY_PATH="):
            return b.split("=", 1)[1].split(":")
    return None


def verdict(cmd):
    """None if the command runs with the cross libc, else why not."""
    words = cmd.split()
    if len(words) < 3 or words[2].rstrip("/") != SYSROOT:
        return None  # another sysroot: a root of its own
    dirs = library_path(cmd)
    if dirs is None:
        return "no -E LD_LIBRARY_PATH=" + CROSS_LIB + ":...: the host's multiarch libc is used"
    if CROSS_LIB not in dirs:
        return f"LD_LIBRARY_PATH {':'.join(dirs)} lacks {CROSS_LIB}"
    first_multi = min((dirs.index(d) for d in MULTIARCH if d in dirs), default=len(dirs))
    if dirs.index(CROSS_LIB) > first_multi:
        return f"LD_LIBRARY_PATH {':'.join(dirs)} names the multiarch libc first"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    R = Results()
    # the rule itself, on the forms it must tell apart
    R.check(verdict("qemu-aarch64 -L /usr/aarch64-linux-gnu ./prog") is not None,
            "a bare -L command is refused")
    R.check(verdict("qemu-aarch64 -L /usr/aarch64-linux-gnu -E "
                    "LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu:/usr/aarch64-linux-gnu/lib p")
            is not None, "the multiarch directory first is refused")
    R.check(verdict("qemu-aarch64 -L /usr/aarch64-linux-gnu -E "
                    "LD_LIBRARY_PATH=build/src:/usr/aarch64-linux-gnu/lib:"
                    "/usr/lib/aarch64-linux-gnu p") is None,
            "the cross libc first is accepted")
    seen = 0
    for path in files(root):
        for line, cmd in commands(path):
            why = verdict(cmd)
            if why is None and cmd.split()[2].rstrip("/") != SYSROOT:
                continue
            seen += 1
            R.check(why is None, f"{os.path.relpath(path, root)}:{line}", f"{cmd}\n{why}")
    R.check(seen > 0, "the repository shows such commands", "none found: is the root right?")
    return R.summary()


if __name__ == "__main__":
    sys.exit(main())
