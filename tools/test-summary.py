#!/usr/bin/env python3
"""Add up the "N passed, N failed" lines every test program prints.

meson's own summary counts programs; this counts the cases inside them and
prints one closing line in the same "N passed, N failed" form."""
import json
import re
import sys

passed = failed = 0
programs_failed = 0
try:
    with open(sys.argv[1]) as f:
        for line in f:
            t = json.loads(line)
            found = re.findall(r"^(\d+) passed, (\d+) failed$", t.get("stdout", ""), re.M)
            if found:
                passed += int(found[-1][0])
                failed += int(found[-1][1])
            elif t.get("result") == "OK":
                passed += 1
            if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
                programs_failed += 1
except FileNotFoundError:
    sys.exit(0)
failed = max(failed, programs_failed)
print(f"{passed} passed, {failed} failed")
