# SPDX-License-Identifier: MIT
"""TAP-style results for the Python test programs: one `ok N - name` or
`not ok N - name` line per check (details of a failure on `#   ` lines),
and `N passed, M failed` at the end (read by tools/test-summary.py)."""
import os
import sys
import traceback


class Results:
    def __init__(self):
        self.n = self.passed = self.failed = 0
        self.case = ""  # prefixed to every name while set

    def _label(self, name):
        return f"{self.case}: {name}" if self.case else name

    def check(self, cond, name, detail=""):
        self.n += 1
        if cond:
            self.passed += 1
            print(f"ok {self.n} - {self._label(name)}", flush=True)
        else:
            self.failed += 1
            print(f"not ok {self.n} - {self._label(name)}", flush=True)
            for line in str(detail).rstrip().splitlines()[:60]:
                print(f"#   {line}")
            sys.stdout.flush()
        return bool(cond)

    def eq(self, got, want, name, extra=""):
        detail = f"expected: {want!r}\ngot:      {got!r}"
        if extra:
            detail += "\n" + str(extra)
        return self.check(got == want, name, detail)

    def skip(self, name, why):
        self.n += 1
        self.passed += 1
        print(f"ok {self.n} - {self._label(name)} # SKIP {why}", flush=True)

    def summary(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def run_cases(results, cases, needed, wanted):
    """Each case function whose name contains one of wanted (all when
    empty), under its name, an exception failing it; first, every path
    in needed must exist. The exit status."""
    missing = [p for p in needed if not os.path.exists(p)]
    if missing:
        print(f"not ok 1 - missing: {' '.join(missing)}")
        print("0 passed, 1 failed")
        return 1
    for fn in cases:
        if wanted and not any(w in fn.__name__ for w in wanted):
            continue
        results.case = fn.__name__
        print(f"# {fn.__name__}", flush=True)
        try:
            fn()
        except Exception:
            results.check(False, "ran to the end", traceback.format_exc())
    return results.summary()


def sample(names, var):
    """names, or $var (a number) of them picked at random: the slow suites
    of make check sample on each run rather than run all or skip some.
    The pick is printed with the seed that repeats it ($var_SEED)."""
    import random
    count = int(os.environ.get(var) or 0)
    if not 0 < count < len(names):
        return list(names)
    seed = int(os.environ.get(var + "_SEED") or random.SystemRandom().randrange(1 << 30))
    picked = set(random.Random(seed).sample(list(names), count))
    chosen = [n for n in names if n in picked]
    print(f"# {count} of {len(names)} sampled: {' '.join(chosen)} "
          f"(all: {var}=0; this pick again: {var}_SEED={seed})", flush=True)
    return chosen
