# SPDX-License-Identifier: MIT
"""TAP-style results for the Python test programs: one `ok N - name` or
`not ok N - name` line per check (details of a failure on `#   ` lines),
and `N passed, M failed` at the end (read by tools/test-summary.py)."""
import sys


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
