#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The nanoprobe command as a good Unix citizen (issue 21): pipes that
close (| head), write errors (/dev/full), UTF-8 through -j and json.loads,
--help, --version, "did you mean", one message prefix, the man page,
several -p, and name resolution (imports, scripts and shims, public
names).

Output and environment as test_cli.py's (whose helpers this uses); the
extra programs: NP_PROG_NAMES, NP_PROG_IMPORTER, NP_MAN_PAGE.
Arguments: names (substrings) of the cases to run; none: all of them.
"""
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as T  # noqa: E402
from test_cli import R, np, run, describe, ENV, COUNTER, SERVER, THREADS, NANOPROBE  # noqa: E402
from tap import run_cases  # noqa: E402

NAMES = T._path("NP_PROG_NAMES", "tests/cli/names")
IMPORTER = T._path("NP_PROG_IMPORTER", "tests/cli/importer")
MAN_PAGE = T._path("NP_MAN_PAGE", "tools/nanoprobe/nanoprobe.1")
VERBS = ["trace", "count", "latency", "run", "watch", "list", "analyze", "bench"]

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def popen(args, ignore_sigpipe=False, **kw):
    def child():
        os.setsid()
        if ignore_sigpipe:
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    return subprocess.Popen([str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                            preexec_fn=child, **kw)


def wait(p, timeout=T.TIMEOUT):
    """Its status and stderr; killed (status None) if it does not end."""
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        T._kill_group(p)
        p.wait()
        return None, p.stderr.read().decode(errors="replace") + "\n[test: killed]"
    return p.returncode, p.stderr.read().decode(errors="replace")


# --------------------------------------------------------------------------
# 1. A reader that goes away: nanoprobe ... | head


def read_lines(f, n, timeout=T.TIMEOUT):
    """Up to n lines, as head would read them, waiting at most timeout: a
    command that keeps its lines in a buffer gives none (and the case
    fails) rather than blocking the test."""
    fd, buf, deadline = f.fileno(), b"", time.monotonic() + timeout
    while buf.count(b"\n") < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
    return [l + b"\n" for l in buf.split(b"\n")[:-1]][:n]


@case
@T.needs_ptrace
def trace_into_head_detaches_and_dies_of_sigpipe():
    """trace -p PID | head -3: once head has gone, nanoprobe's next write
    fails; it removes its probes and ends as a program whose reader went
    away does (killed by SIGPIPE, 141 in a shell). Before, it ignored the
    EPIPE and ran until killed. The server goes on, its code the file's."""
    for ignore in (False, True):
        label = "SIGPIPE ignored" if ignore else "SIGPIPE default"
        srv = T.Server()
        site = T.Site(srv.pid, SERVER, "handle")
        try:
            p = popen([NANOPROBE, "trace", "-p", srv.pid, "handle v=$arg1:s64"],
                      ignore_sigpipe=ignore)
            R.check(site.wait(True, proc=p), f"{label}: the probe is placed")
            for i in range(3):
                srv.ask(i)
            got = read_lines(p.stdout, 3)
            R.eq(len(got), 3, f"{label}: head read 3 event lines", got)
            p.stdout.close()  # head exits
            deadline = time.monotonic() + T.TIMEOUT
            while p.poll() is None and time.monotonic() < deadline:
                srv.ask(7)  # events to write, into the closed pipe
                time.sleep(0.02)
            status, err = wait(p)
            if ignore:
                R.eq(status, 1, f"{label}: exit status 1", err)
                R.check("nanoprobe trace: stdout: Broken pipe" in err,
                        f"{label}: says what failed, with the stream", err)
            else:
                R.eq(status, -signal.SIGPIPE, f"{label}: killed by SIGPIPE (141)", err)
                R.check("nanoprobe" not in err, f"{label}: nothing said (the signal says it)",
                        err)
            T.server_goes_on(srv, site, label)
            T.server_final(srv, label)
        finally:
            srv.kill()


@case
def started_program_under_head():
    """trace -- CMD | head: the same with a program nanoprobe started, which
    runs on unprobed and, writing to the closed pipe too, dies of SIGPIPE
    itself: it got SIGPIPE as nanoprobe got it, not ignored as the
    session's signal handling left it (an ignored signal stays ignored
    across exec)."""
    p = popen([NANOPROBE, "trace", "tick v=$arg1:s64", "--", THREADS, 2, 20000000])
    got = read_lines(p.stdout, 3)
    R.eq(len(got), 3, "head read 3 event lines", got)
    p.stdout.close()
    status, err = wait(p)
    R.eq(status, -signal.SIGPIPE, "nanoprobe killed by SIGPIPE", err)
    R.check("killed by signal 13" in err,
            "the program, printing its total into the closed pipe, died of SIGPIPE too", err)

    plain = run(["grep", "^SigIgn", "/proc/self/status"])
    probed = np("count", "-o", "/dev/null", "c:open*", "--", "grep", "^SigIgn", "/proc/self/status")
    R.eq(probed.stdout, plain.stdout, "the started program's ignored signals are a plain run's "
         "(SIGPIPE not among them)", describe(probed))

    # under nohup (SIGHUP ignored) and a shell's background job (SIGINT
    # ignored): the session catches both, which exec would reset
    def deaf():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    grep = ["grep", "^SigIgn", "/proc/self/status"]
    plain = subprocess.run(grep, capture_output=True, text=True, preexec_fn=deaf)
    probed = subprocess.run([NANOPROBE, "count", "-o", "/dev/null", "c:open*", "--", *grep],
                            capture_output=True, text=True, preexec_fn=deaf, env=ENV)
    R.eq(probed.stdout, plain.stdout, "under nohup, the started program ignores SIGHUP and "
         "SIGINT as a plain run does", probed.stderr)


# --------------------------------------------------------------------------
# 2. Write errors


@case
def full_disk_is_an_error_with_the_stream_named():
    want = T.plain([COUNTER, 10])
    for args, stream, label in (
            (["count", "-o", "/dev/full", "work"], "-o /dev/full", "count -o /dev/full"),
            (["trace", "-o", "/dev/null", "--export-trace", "/dev/full", "work"],
             "--export-trace /dev/full", "trace --export-trace /dev/full"),
            (["latency", "-j", "-o", "/dev/full", "work"], "-o /dev/full", "latency -o /dev/full")):
        p = np(*args, "--", COUNTER, 10)
        R.eq(p.returncode, 1, f"{label}: exit status 1 (was 0)", describe(p))
        verb = args[0]
        R.check(f"nanoprobe {verb}: {stream}: No space left on device" in p.stderr,
                f"{label}: says so, naming the stream", describe(p))
        R.eq(p.stdout, want, f"{label}: the program ran as it would have")

    for args, label in ((["count", "work", "--", COUNTER, 10], "count"),
                        (["list", COUNTER], "list"),
                        (["analyze", COUNTER], "analyze"),
                        (["run", "-e", 'BEGIN { printf("hello\\n"); exit(); }'], "run"),
                        (["--help"], "--help")):
        with open("/dev/full", "w") as full:
            p = subprocess.run([NANOPROBE] + [str(a) for a in args], stdout=full,
                               stderr=subprocess.PIPE, text=True, env=ENV, timeout=T.TIMEOUT)
        R.eq(p.returncode, 1, f"{label} > /dev/full: exit status 1", p.stderr)
        R.check(re.search(r"^nanoprobe( \w+)?: stdout: No space left on device$", p.stderr,
                          re.M), f"{label} > /dev/full: says stdout is full", p.stderr)


@case
@T.needs_ptrace
def full_disk_ends_a_session_detached():
    """-p, -o /dev/full: the first write that fails ends the session as
    Ctrl-C would (the probes removed), and nanoprobe says so."""
    srv = T.Server()
    site = T.Site(srv.pid, SERVER, "handle")
    try:
        p = popen([NANOPROBE, "trace", "-o", "/dev/full", "-p", srv.pid, "handle"])
        R.check(site.wait(True, proc=p), "the probe is placed")
        deadline = time.monotonic() + T.TIMEOUT
        while p.poll() is None and time.monotonic() < deadline:
            srv.ask(3)
            time.sleep(0.02)
        status, err = wait(p)
        R.eq(status, 1, "exit status 1", err)
        R.check("nanoprobe trace: -o /dev/full: No space left on device" in err, "says why", err)
        T.server_goes_on(srv, site, "after /dev/full")
        T.server_final(srv, "after /dev/full")
    finally:
        srv.kill()


# --------------------------------------------------------------------------
# 3. UTF-8 and JSON


@case
def utf8_round_trips_through_json():
    p = np("trace", "-j", "say s=+0($arg1):string", "--", NAMES, 1)
    R.eq(p.returncode, 0, "trace -j exits 0", describe(p))
    objs = []
    for line in p.stdout.splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError as e:
            R.check(False, "every line is JSON", f"{e}: {line!r}")
    said = [o["args"]["s"] for o in objs]
    R.eq([o["task"] for o in objs], ["café"] * 4, "the thread's UTF-8 name, as UTF-8", objs)
    R.eq(said[:2], ["café", "日本語 ✓"], "UTF-8 strings pass through as UTF-8")
    raw = [s.encode("utf-8", "surrogateescape") for s in said[2:]]
    R.eq(raw, [b"bad \xff\x80 \xc0\x80 \xed\xa0\x80", b"tab\there \x01"],
         "bytes that are not UTF-8 come back through surrogateescape; control characters "
         "are escaped")
    R.check('"bad \\udcff\\udc80 \\udcc0\\udc80 \\udced\\udca0\\udc80"' in p.stdout,
            "an invalid byte XX is written \\udcXX", p.stdout)
    R.eq(T.program_lines(p.stderr), ["names: n=1 sum=42"],
         "the program's stdout went to stderr, leaving JSON alone on stdout", describe(p))

    p = np("trace", "say s=+0($arg1):string", "--", NAMES, 1)
    lines = [l for l in p.stdout.splitlines() if "probe_names:say" in l]
    R.eq([l.split(" s=", 1)[1] for l in lines],
         ['"café"', '"日本語 ✓"', '"bad \\xff\\x80 \\xc0\\x80 \\xed\\xa0\\x80"',
          '"tab\\x09here \\x01"'], "text: UTF-8 kept, the rest \\xNN", describe(p))


@case
def group_and_event_names_are_words():
    for spec, what in (("p:grpé/ev work", "bad group name"), ("p:grp/e-v work", "bad event name"),
                       ("p:9grp/ev work", "bad group name"), ("work x-y=%di", "bad argument name")):
        p = np("trace", spec, "--", COUNTER, 1)
        R.eq(p.returncode, 2, f"{spec!r}: a usage error", describe(p))
        R.check(what in p.stderr, f"{spec!r}: {what}", describe(p))
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "my-prog.x")
        os.symlink(COUNTER, prog)
        p = np("trace", "-j", "-o", os.path.join(d, "out"), "work", "--", prog, 1)
        with open(os.path.join(d, "out")) as f:
            groups = {json.loads(l)["group"] for l in f}
    R.eq(groups, {"probe_counter"}, "a group made from a file name is a word", describe(p))


# --------------------------------------------------------------------------
# 4. Help, version, suggestions, one prefix


def help_options(verb):
    """The options --help lists: [(flags, text)]."""
    p = np(verb, "--help")
    R.eq(p.returncode, 0, f"{verb} --help exits 0", describe(p))
    opts = []
    for line in p.stdout.split("\noptions:\n", 1)[-1].split("\n\n", 1)[0].splitlines():
        flags, _, text = line.strip().partition("  ")
        if not line.strip().startswith("-") and opts and not opts[-1][1]:
            opts[-1] = (opts[-1][0], line.strip())  # the text below long flags
            continue
        opts.append((", ".join(re.findall(r"(?<!\w)--?[\w-]+", flags)), text.strip()))
    return opts, p.stdout


@case
def every_verb_helps_with_every_option():
    for verb in VERBS:
        opts, text = help_options(verb)
        R.check(text.startswith(f"usage: nanoprobe {verb} "), f"{verb}: a usage line", text)
        R.check(opts and all(t.strip() for _, t in opts), f"{verb}: options, each with a line",
                text)
        R.check("docs/cli.md" not in text and "nanoprobe(1)" in text,
                f"{verb}: refers to the man page, not a file that is not installed", text)
        for flags, _ in opts:
            name = flags.split(", ")[-1]
            if name in ("-h", "--help", "--version"):
                continue
            p = np(verb, name, "1")
            R.check("unknown option" not in p.stderr,
                    f"{verb}: {name}, which --help lists, is an option the verb takes",
                    describe(p))
    for verb in ("trace", "count", "latency"):
        names = {f.split(", ")[-1] for f, _ in help_options(verb)[0]}
        R.check({"--output", "--strategy", "--buffer-kb", "--pid", "--duration", "--json"} <= names,
                f"{verb} --help: -o, --strategy, --buffer-kb and the others", names)
    p, q = np("help", "count"), np("count", "--help")
    R.eq(p.stdout, q.stdout, "help VERB is VERB --help")
    p = np("count", "-o", "--help", "x")
    R.check("usage:" not in p.stdout, "-o --help: a file named --help, not the help", describe(p))


@case
def version_three_ways():
    outs = [np(*a) for a in (["--version"], ["version"], ["count", "--version"])]
    R.check(all(p.returncode == 0 for p in outs), "exit status 0", [describe(p) for p in outs])
    R.eq(len({p.stdout for p in outs}), 1, "the same line", [p.stdout for p in outs])
    R.check(re.fullmatch(r"nanoprobe \d+\.\d+\.\d+ \(git \S+\)\n", outs[0].stdout),
            "nanoprobe VERSION (git DESCRIBE)", outs[0].stdout)


@case
def did_you_mean():
    for args, want in ((["cuont"], "nanoprobe: unknown verb 'cuont'; did you mean: count?"),
                       (["count", "--jsno"], "nanoprobe count: unknown option '--jsno'; "
                        "did you mean: --json?"),
                       (["latency", "--mrege"], "did you mean: --merge?"),
                       (["list", "--nmaes", COUNTER], "did you mean: --names?"),
                       (["analyze", "--acrh", "x", COUNTER], "did you mean: --arch?"),
                       (["run", "--map-kyes", "3"], "did you mean: --map-keys?"),
                       (["-p", "1", "count"], "'-p' is not a verb: the verb comes first")):
        p = np(*args)
        R.eq(p.returncode, 2, f"{' '.join(args)}: a usage error", describe(p))
        R.check(want in p.stderr, f"{' '.join(args)}: {want}", describe(p))


@case
def one_message_prefix():
    """Every message is 'nanoprobe VERB: ...' (list: and analyze: were
    bare, --export-trace's errors a bare path, refusals 'nanoprobe:')."""
    with tempfile.TemporaryDirectory() as d:
        for args, verb in ((["list", COUNTER, "nosuchfn"], "list"),
                           (["list", "/nonexistent/file"], "list"),
                           (["analyze", "--arch", "vax", COUNTER], "analyze"),
                           (["trace", "--export-trace", f"{d}/no/such/dir.json", "work", "--",
                             COUNTER, 1], "trace"),
                           (["trace", "greet+4", "work", "--", COUNTER, 1], "trace"),
                           (["count", "-p", "999999999", "work"], "count"),
                           (["run", "--map-keys", "0", "-e", "BEGIN { exit(); }"], "run"),
                           (["bench", "--threads", "0"], "bench")):
            p = np(*args)
            # messages, not the program's lines nor the session's header
            own = [l for l in p.stderr.splitlines() if l and not l.startswith("counter: ")
                   and not l.startswith(" ") and not l.startswith("Clock: ")]
            R.check(own and all(l.startswith(f"nanoprobe {verb}: ") for l in own),
                    f"{' '.join(map(str, args))}: "
                    f"'nanoprobe {verb}: ' on every message", describe(p))


@case
def man_page_renders():
    R.check(os.path.exists(MAN_PAGE), "the man page is built (scdoc)", MAN_PAGE)
    p = subprocess.run(["man", "-l", MAN_PAGE], capture_output=True, text=True,
                       env=dict(ENV, MANWIDTH="80", MANPAGER="cat", PAGER="cat"),
                       timeout=T.TIMEOUT)
    R.eq(p.returncode, 0, "man -l renders it", p.stderr)
    text = re.sub(r".\x08", "", p.stdout)
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "VERBS", "SESSION OPTIONS", "PROBE SPECS",
                    "JSON OUTPUT", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"):
        R.check(re.search(rf"^{section}$", text, re.M), f"section {section}", text[:3000])
    R.check(not re.search(r"\b_\w+_\b|\*\w", text), "no scdoc markup left over", text)
    flat = re.sub(r"\s+", " ", text.replace("‐\n", "").replace("\u2010", "-"))
    for verb in VERBS:
        R.check(f" {verb} " in flat, f"the man page has {verb}")
        for flags, _ in help_options(verb)[0]:
            for f in flags.split(", "):
                R.check(f in flat, f"the man page names {verb}'s {f}")


# --------------------------------------------------------------------------
# 5. Verbs that aggregate: -i, -n, a histogram per function, columns in line


@case
def several_processes_are_refused_clearly():
    for args in (["-p", "1", "-p", "2"], ["-p", "1,2"]):
        p = np("count", *args, "work")
        R.eq(p.returncode, 2, f"{' '.join(args)}: a usage error (was: only the last traced)",
             describe(p))
        R.check("one process per session" in p.stderr, f"{' '.join(args)}: says why",
                describe(p))
    # run takes several (one session, tests/cli/test_tree.py): each is looked up
    p = np("run", "-p", "999998,999999", "-e", "uprobe:c:malloc { @ = count(); }")
    R.eq(p.returncode, 1, "run -p 999998,999999: taken, each looked up", describe(p))
    R.check("999998" in p.stderr and "not found" in p.stderr, "run: says which", describe(p))


@case
def latency_per_function_merged_or_not():
    n = 40
    p = np("latency", "-j", "a_*", "short_one", "--", NAMES, n)
    objs, _ = T.parse_json_lines(p.stdout)
    stats = {o["probe"]: o["data"]["count"] for o in objs if o.get("type") == "stats"}
    R.eq(stats, {"a_function_whose_name_is_much_longer_than_the_forty_four_columns": n,
                 "short_one": n}, "a histogram each, each with its own count", describe(p))
    hists = [o for o in objs if o.get("type") == "hist"]
    R.eq(sorted(sum(b["count"] for b in h["data"]["@nsecs"]) for h in hists), [n, n],
         "each histogram's buckets add up to its calls")
    p = np("latency", "-j", "--merge", "a_*", "short_one", "--", NAMES, n)
    objs, _ = T.parse_json_lines(p.stdout)
    stats = [o for o in objs if o.get("type") == "stats"]
    R.eq([(("probe" in o), o["data"]["count"]) for o in stats], [(False, 2 * n)],
         "--merge: one histogram of every call", describe(p))
    p = np("latency", "-u", "a_*", "short_one", "--", NAMES, n)
    heads = re.findall(r"^@usecs\[(.*)\]:$", p.stdout, re.M)
    R.eq(sorted(heads), ["a_function_whose_name_is_much_longer_than_the_forty_four_columns",
                         "short_one"], "text: @usecs[FUNCTION]: per function", describe(p))
    R.check(re.search(r"^count 40, average \d+\.\d\d usecs, min \d+\.\d\d usecs", p.stdout, re.M),
            "averages and times in usecs keep two decimals (not '0 usecs')", describe(p))
    p = np("latency", "-j", "-n", "1", "a_*", "short_one", "--", NAMES, n)
    objs, _ = T.parse_json_lines(p.stdout)
    R.eq(len([o for o in objs if o.get("type") == "stats"]), 1, "-n 1: one function",
         describe(p))


@case
def intervals_below_a_second_and_top_n():
    p = np("count", "-j", "-i", "0.2", "tick", "--", THREADS, 2, 30000000)
    objs, _ = T.parse_json_lines(p.stdout)
    stamps = [o.get("time") for o in objs if o.get("type") == "counts"]
    R.check(len(stamps) >= 2 and all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", s or "")
                                      for s in stamps), "-i stamps: HH:MM:SS.mmm", stamps)
    R.eq(len(set(stamps)), len(stamps), "no two reports share a stamp (0.2 s apart)", stamps)
    R.eq(sum(r["count"] for o in objs if o.get("type") == "counts" for r in o["counts"]),
         2 * 30000000, "the intervals add up", describe(p))
    p = np("latency", "-j", "-i", "0.2", "tick", "--", THREADS, 2, 300000)
    objs, _ = T.parse_json_lines(p.stdout)
    counts = [o["data"]["count"] for o in objs if o.get("type") == "stats"]
    R.check(all(o.get("time") for o in objs), "latency -i: every line has its interval's time")
    R.eq(sum(counts), 2 * 300000, "latency -i: the intervals' calls add up", describe(p))
    p = np("count", "-n", "1", "a_*", "short_one", "main", "--", NAMES, 5)
    table, _ = T.parse_count_table(p.stdout)
    R.eq(len(table), 1, "count -n 1: one row", describe(p))


@case
def columns_stay_in_line_for_any_name_length():
    p = np("count", "a_*", "short_one", "--", NAMES, 7)
    rows = [l for l in p.stdout.splitlines() if l.startswith(("FUNC", "a_function", "short_one"))]
    R.eq(len(rows), 3, "a header and two rows", describe(p))
    R.eq(len({len(r) for r in rows}), 1, "every row as wide: the counts end in one column", rows)
    long = "a_function_whose_name_is_much_longer_than_the_forty_four_columns"
    q = np("list", NAMES)
    lines = q.stdout.splitlines()
    R.eq(len({l.rindex(" ") for l in lines}), 1, "list: SOURCE in one column", q.stdout)
    R.check(long in q.stdout, "list shows the long name whole", q.stdout)


# --------------------------------------------------------------------------
# 6. Name resolution


@case
def imported_functions_resolve_to_their_library():
    p = np("count", "-j", "imported_fn", "--", IMPORTER, 9)
    counts, _ = T.json_counts(p.stdout)
    R.eq(counts, {"imported_fn": 9}, "an import is probed in the library that defines it "
         "(was: unknown symbol)", describe(p))
    R.check("'imported_fn' is imported by" in p.stderr and "libimported.so" in p.stderr,
            "and says so", describe(p))
    p = np("count", "other_fn", "--", IMPORTER, 9)
    R.eq(p.returncode, 1, "a function of a needed library the program never calls: refused",
         describe(p))
    R.check("libimported.so, a library it needs, defines it: libimported.so:other_fn"
            in p.stderr, "with a hint that names the library", describe(p))
    if os.path.exists("/usr/bin/sqlite3"):
        p = np("count", "-j", "sqlite3_step", "--", "sqlite3", ":memory:", "select 1;")
        counts, _ = T.json_counts(p.stdout)
        R.check(p.returncode == 0 and (counts or {}).get("sqlite3_step", 0) > 0,
                "sqlite3_step in /usr/bin/sqlite3: libsqlite3's, counted", describe(p))


def script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


@case
def scripts_and_shims_are_followed():
    with tempfile.TemporaryDirectory() as d:
        # a version manager and its shim, shaped like pyenv's
        os.makedirs(f"{d}/libexec")
        os.makedirs(f"{d}/shims")
        script(f"{d}/libexec/fakeenv", f"""#!/bin/sh
[ "$FAKEENV_ROOT" = "{d}" ] || {{ echo "FAKEENV_ROOT not set" >&2; exit 1; }}
case "$1" in
which) [ "$2" = counter ] && echo {COUNTER} ;;
exec) shift; shift; exec {COUNTER} "$@" ;;
esac
""")
        script(f"{d}/shims/counter", f"""#!/usr/bin/env bash
set -e
program="${{0##*/}}"
export FAKEENV_ROOT="{d}"
exec "{d}/libexec/fakeenv" exec "$program" "$@"
""")
        env = dict(ENV, PATH=f"{d}/shims:" + ENV.get("PATH", ""))
        p = run([NANOPROBE, "count", "-j", "work", "--", "counter", 6], env=env)
        counts, _ = T.json_counts(p.stdout)
        R.eq(counts, {"work": 6}, "a shim: the program its manager runs (was: not an ELF file)",
             describe(p))
        R.check(f"counter is a script: probes go into {os.path.realpath(COUNTER)}, the program "
                "its version manager runs" in p.stderr, "and says so", describe(p))
        p = run([NANOPROBE, "list", "counter", "work"], env=env)
        R.check(p.returncode == 0 and p.stdout.startswith("work: "), "list follows it too",
                describe(p))
        # a wrapper with one literal exec; one that execs a variable
        script(f"{d}/wrap.sh", f"#!/bin/sh\necho wrapping\nexec {COUNTER} 4\n")
        script(f"{d}/vague.sh", f'#!/bin/sh\nexec "$PROG" 4\n')
        p = np("count", "-j", "work", "--", f"{d}/wrap.sh")
        counts, _ = T.json_counts(p.stdout)
        R.eq(counts, {"work": 4}, "a wrapper: the program it execs", describe(p))
        p = np("count", "work", "--", f"{d}/vague.sh")
        R.eq(p.returncode, 1, "a wrapper that execs a variable: refused", describe(p))
        R.check("execs a program named by a variable" in p.stderr and "PATH:SYMBOL" in p.stderr,
                "with why and how to name the program instead", describe(p))
        # a script's interpreter, found through env
        script(f"{d}/hello.py", "#!/usr/bin/env python3\nprint('hello')\n")
        p = np("list", f"{d}/hello.py", "main")
        R.eq(p.returncode, 0, "a script: its interpreter, through env (python3)", describe(p))
    shim = os.path.expanduser("~/.pyenv/shims/python3")
    if os.path.exists(shim):
        p = run([NANOPROBE, "list", "python3", "main"],
                env=dict(ENV, PATH=os.path.dirname(shim) + ":" + ENV.get("PATH", "")))
        R.eq(p.returncode, 0, "pyenv's python3 shim: followed to pyenv's python", describe(p))


@case
def globs_name_the_public_alias():
    p = np("count", "-j", "c:*malloc", "--", COUNTER, 1)
    counts, _ = T.json_counts(p.stdout)
    names = set(counts or {})
    R.check("malloc" in names, "malloc by its name", describe(p))
    R.check(not any(n.startswith("__GI_") or n == "__libc_malloc" for n in names),
            "no internal alias for a function that has a public name (was __GI___libc_malloc)",
            names)


# --------------------------------------------------------------------------


def main():
    return run_cases(R, CASES, (NANOPROBE, COUNTER, NAMES, IMPORTER), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
