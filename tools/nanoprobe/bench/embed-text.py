#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a text file as a C string constant, so that the executable carries
it (frida_count.py, which `nanoprobe bench` runs under Frida's Python).

    embed-text.py IN OUT.h NAME
"""
import sys


def main():
    src, out, name = sys.argv[1:4]
    with open(src) as f:
        text = f.read()
    lines = [f"/* generated from {src.rsplit('/', 1)[-1]} by embed-text.py: do not edit */",
             f"static const char {name}[] ="]
    for line in text.splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append(f'\t"{esc}"')
    lines[-1] += ";"
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
