#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two np-bench binaries side by side, run alternately in one sitting:
the median of each row over N runs of each, and their ratio, as the
markdown table docs/performance.md takes.

  python3 bench/compare.py BEFORE/np-bench AFTER/np-bench [N [CALLS]]

Rows are ns per hit (ns per call for the unprobed rows, ns per pair for
attach+detach). A machine that others share moves single runs by a factor
of two; alternating the binaries puts both through the same load."""
import json
import statistics
import subprocess
import sys


def key(row):
    if "target" in row:
        return (row["target"], row["probe"], row["strategy"], row["save"])
    return (row.get("bench", "?"), "", "", "")


def value(row):
    if "target" not in row:
        return row.get("us_per_pair", 0.0) * 1000
    return row["ns_per_hit"] if row["probe"] != "none" else row["ns_per_call"]


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    exes = {"before": sys.argv[1], "after": sys.argv[2]}
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    calls = sys.argv[4] if len(sys.argv) > 4 else "100000"
    rows = {name: {} for name in exes}
    for _ in range(runs):
        for name, exe in exes.items():
            out = subprocess.run([exe, "-n", calls, "-j"], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                row = json.loads(line)
                rows[name].setdefault(key(row), []).append(value(row))
    print("| target | probe | strategy | save | before | after | after / before |")
    print("|---|---|---|---|---|---|---|")
    for k, vals in rows["before"].items():
        if k in rows["after"]:
            b, a = statistics.median(vals), statistics.median(rows["after"][k])
            print(f"| {' | '.join(k)} | {b:.1f} | {a:.1f} | {a / b if b else 0:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
