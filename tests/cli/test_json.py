#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every verb's -j output against docs/nanoprobe.schema.json (issue 21).

Each verb is run the ways that make each kind of line it can print (trace:
entries with every kind of value, returns; count and latency: totals, -i
intervals, --merge; watch: accesses and the summary; list: functions and
instructions; analyze: sites and a summary; bench: rows; run -f json:
bpftrace's lines). Every line of stdout must be one JSON object valid
against the verb's definition in the schema, and against the schema as a
whole; every kind of line the verb prints must have been seen. Lines
broken on purpose (no type, a field the schema does not name, a wrong
type) must be refused, so that a schema that accepts anything fails too.

Environment: as test_cli.py's, plus NP_PROG_NAMES, NP_PROG_WATCHED and
NP_SCHEMA (the schema file). Arguments: names (substrings) of the cases
to run; none: all of them.
"""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as T  # noqa: E402
from test_cli import R, np, describe, COUNTER, THREADS  # noqa: E402
from tap import run_cases  # noqa: E402

try:
    import jsonschema
except ImportError:  # make deps installs python3-jsonschema
    jsonschema = None

NAMES = T._path("NP_PROG_NAMES", "tests/cli/names")
WATCHED = T._path("NP_PROG_WATCHED", "tests/cli/watched")
SCHEMA_PATH = os.environ.get("NP_SCHEMA") or os.path.join(T.ROOT, "docs/nanoprobe.schema.json")

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def load_schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


SCHEMA = load_schema()


def validator(defname=None):
    """A validator of one $defs entry (the schema whole when None)."""
    schema = SCHEMA
    if defname:
        schema = dict(SCHEMA)
        schema.pop("anyOf")
        schema["$ref"] = f"#/$defs/{defname}"
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(schema)
    return cls(schema)


def errors(v, obj):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]


def check_lines(label, p, defname, kinds, allow_empty=False):
    """Every stdout line of p is an object valid against $defs[defname] and
    the whole schema; the types seen include every one of `kinds`.
    Returns the objects."""
    R.eq(p.returncode, 0, f"{label}: exit status 0", describe(p))
    one, whole = validator(defname), validator()
    objs = []
    for line in p.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError as e:
            R.check(False, f"{label}: every line of stdout is JSON", f"{e}: {line!r}")
            continue
        objs.append(obj)
        bad = errors(one, obj)
        R.check(not bad, f"{label}: a {obj.get('type')!r} line is a valid {defname}",
                f"{line}\n" + "\n".join(bad))
        R.check(not errors(whole, obj), f"{label}: and valid against the whole schema", line)
    R.check(objs or allow_empty, f"{label}: some lines", describe(p))
    seen = {o.get("type") for o in objs}
    R.check(set(kinds) <= seen, f"{label}: lines of every type {sorted(kinds)}", sorted(seen))
    return objs


def refused(defname, obj, why):
    R.check(errors(validator(defname), obj), f"{defname}: the schema refuses {why}",
            json.dumps(obj))


def clock_checked(defname, label, objs):
    """Every line says its clock; the schema refuses one that does not, or
    names a clock that is none of nanoprobe's."""
    R.check(all(o.get("clock") in ("tsc", "vdso") for o in objs),
            f"{label}: every line names its clock, tsc or vdso", objs)
    o = copy.deepcopy(objs[0])
    o.pop("clock", None)
    refused(defname, o, "a line without its clock")
    o["clock"] = "hpet"
    refused(defname, o, "a clock that is not tsc, vdso or unknown")


def broken_copies(defname, obj, open_ended=False):
    """The schema refuses a line with no type, an unknown field (unless
    the line is open-ended, as bench rows are), a wrong type: it describes
    the lines, it does not merely accept them."""
    o = copy.deepcopy(obj)
    o.pop("type")
    refused(defname, o, "a line without its type")
    o = copy.deepcopy(obj)
    o["no_such_field"] = [] if open_ended else 1
    refused(defname, o, "a field it does not name" if not open_ended else "a field not a number "
            "or string")
    o = copy.deepcopy(obj)
    o["type"] = "no-such-type"
    refused(defname, o, "a type that is not the verb's")


# --------------------------------------------------------------------------


@case
def trace_lines():
    p = np("trace", "-j", "greet name=+0($arg1):string times=$arg2:s32 raw=%si:x64 w=$arg2:u8",
           "greet_ptr p=+0($arg1):string", "r:probe_counter/greeted greet rv=$retval:s64",
           "--", COUNTER, 3)
    objs = check_lines("trace", p, "trace_line", {"event"})
    rets = [o for o in objs if "ret" in o]
    R.check(rets and len(rets) < len(objs), "trace: entry and return lines both checked", objs)
    R.check(any(o["args"].get("p") is None for o in objs if o["event"] == "greet_ptr"),
            "trace: a value that could not be read is null", objs)
    broken_copies("trace_line", objs[0])
    clock_checked("trace_line", "trace", objs)
    o = copy.deepcopy(objs[0])
    o["args"]["name"] = [1]
    refused("trace_line", o, "a value that is neither number, string nor null")
    p = np("trace", "-j", "say s=+0($arg1):string", "--", NAMES, 1)
    check_lines("trace (UTF-8 and invalid bytes)", p, "trace_line", {"event"})


@case
def count_lines():
    p = np("count", "-j", "work", "greet", "--", COUNTER, 5)
    objs = check_lines("count", p, "count_line", {"counts"})
    broken_copies("count_line", objs[0])
    p = np("count", "-j", "-i", "0.2", "-n", "1", "tick", "--", THREADS, 2, 3000000)
    objs = check_lines("count -i", p, "count_line", {"counts"})
    R.check(all("time" in o for o in objs), "count -i: every report has its time", objs)


@case
def latency_lines():
    for extra in ([], ["--merge"], ["-u", "-n", "1"]):
        p = np("latency", "-j", *extra, "a_*", "short_one", "--", NAMES, 30)
        objs = check_lines(f"latency {' '.join(extra)}", p, "latency_line", {"hist", "stats"})
        broken_copies("latency_line", objs[0])
        clock_checked("latency_line", f"latency {' '.join(extra)}", objs)
    p = np("latency", "-j", "-i", "0.2", "tick", "--", THREADS, 2, 300000)
    objs = check_lines("latency -i", p, "latency_line", {"hist", "stats"})
    R.check(all("time" in o for o in objs), "latency -i: every line has its time", objs)
    # the vDSO, asked for: the same lines, and their clock says so
    env = dict(T.ENV, NANOPROBE_CLOCK="vdso")
    p = np("latency", "-j", "a_*", "--", NAMES, 3, env=env)
    objs = check_lines("NANOPROBE_CLOCK=vdso latency", p, "latency_line", {"hist", "stats"})
    R.eq({o.get("clock") for o in objs}, {"vdso"}, "NANOPROBE_CLOCK=vdso latency: clock vdso")
    p = np("trace", "-j", "greet", "--", COUNTER, 3, env=env)
    objs = check_lines("NANOPROBE_CLOCK=vdso trace", p, "trace_line", {"event"})
    R.eq({o.get("clock") for o in objs}, {"vdso"}, "NANOPROBE_CLOCK=vdso trace: clock vdso")


def hw_watchpoints():
    p = np("watch", "flag", "--", WATCHED, 0)
    return "no hardware breakpoints" not in p.stderr and "not allowed" not in p.stderr


@case
def watch_lines():
    if not hw_watchpoints():
        print("# skip watch: no hardware breakpoints for this process here")
        return
    p = np("watch", "-j", "total:8", "tick:x", "--", WATCHED, 2, 5, 3)
    objs = check_lines("watch", p, "watch_line", {"access", "summary"})
    broken_copies("watch_line", objs[0])
    broken_copies("watch_line", objs[-1])


@case
def list_lines():
    p = np("list", "-j", COUNTER)
    objs = check_lines("list", p, "list_line", {"function"})
    broken_copies("list_line", objs[0])
    p = np("list", "-j", COUNTER, "greet")
    objs = check_lines("list FUNC", p, "list_line", {"instruction"})
    broken_copies("list_line", objs[0])


@case
def analyze_lines():
    p = np("analyze", "-j", COUNTER)
    objs = check_lines("analyze", p, "analyze_line", {"site", "summary"})
    broken_copies("analyze_line", objs[0])
    broken_copies("analyze_line", objs[-1])


@case
def bench_lines():
    p = np("bench", "-j", "-d", "0.02", "--backend", "none,jump", "uprobe-nop")
    objs = check_lines("bench", p, "bench_line", {"bench"})
    broken_copies("bench_line", objs[0], open_ended=True)


@case
def run_lines():
    prog = ('uprobe:%s:work { @calls = count(); @h = hist(arg0); printf("w %%d\\n", arg0); } '
            'END { print(@calls); }' % COUNTER)
    p = np("run", "-f", "json", "-e", prog, "--", COUNTER, 4)
    objs = check_lines("run -f json", p, "run_line", {"printf", "map", "hist"})
    R.eq(T.program_lines(p.stderr), ["counter: n=4 sum=3009"],
         "run -f json: the program's stdout went to stderr, leaving JSON alone on stdout "
         "(it was in the stream)", describe(p))
    o = copy.deepcopy(objs[0])
    o.pop("type")
    refused("run_line", o, "a line without its type")


# --------------------------------------------------------------------------


def main():
    if jsonschema is None:
        print("not ok 1 - python3-jsonschema is needed (make deps installs it)")
        print("0 passed, 1 failed")
        return 1
    return run_cases(R, CASES, (T.NANOPROBE, COUNTER, NAMES, WATCHED, SCHEMA_PATH),
                     sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
