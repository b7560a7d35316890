#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The completion scripts (tools/nanoprobe/completion/), loaded by the
shells (issue 21).

bash: the script is sourced in a bash that runs its completion function
as readline would (COMP_LINE, COMP_POINT, COMP_WORDS, COMP_CWORD), and
what it offers is compared with what the command says: the verbs, every
option of every verb's --help, the values of --strategy, the functions
of a file for PATH:PREFIX (as bash splits words at ':'), of the program
after --, of list's file. It is also loaded the way it is installed: by
the bash-completion package's loader, from a completions directory.

zsh: the script is found on $fpath by compinit, which binds it to
nanoprobe, and names every option of every verb's --help; an interactive
zsh in a pseudo-terminal (zsh_complete.zsh) completes lines as a user's
Tab would, compared as for bash.

Environment: as test_cli.py's; NP_COMPLETION_DIR (the scripts' folder).
Arguments: names (substrings) of the cases to run; none: all of them.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as T  # noqa: E402
from test_cli import R, np, describe, COUNTER, NANOPROBE  # noqa: E402
from tap import run_cases  # noqa: E402

DIR = os.environ.get("NP_COMPLETION_DIR") or os.path.join(T.ROOT, "tools/nanoprobe/completion")
BASH_SCRIPT = os.path.join(DIR, "nanoprobe.bash")
ZSH_SCRIPT = os.path.join(DIR, "_nanoprobe")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
VERBS = ["trace", "count", "latency", "run", "watch", "list", "analyze", "bench"]

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def help_flags(verb):
    """Every option word `nanoprobe VERB --help` lists."""
    p = np(verb, "--help")
    R.eq(p.returncode, 0, f"{verb} --help", describe(p))
    body = p.stdout.split("\noptions:\n", 1)[-1].split("\n\n", 1)[0]
    return {f for line in body.splitlines() if line.lstrip().startswith("-")
            for f in re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", line.strip().split("  ")[0])}


def complete(line, cursor_at_end=True, extra=""):
    """What bash's completion of `line` offers: the script sourced, the
    variables readline sets (words split as bash splits them, at ':' too),
    then _nanoprobe run. `nanoprobe` in the line is the command built."""
    line = line.replace("nanoprobe", NANOPROBE, 1)
    point = len(line)
    script = f"""
set -u
source {shlex.quote(BASH_SCRIPT)}
{extra}
COMP_LINE={shlex.quote(line)}
COMP_POINT={point}
COMP_WORDBREAKS=$' \\t\\n"\\'><=;|&(:'
# readline's words: split at blanks and at the word breaks, ':' kept as a word
words=()
rest=$COMP_LINE
re='^([^[:space:]:=]+|[:=])(.*)$'
while [[ -n $rest ]]; do
  rest=${{rest#"${{rest%%[![:space:]]*}}"}}
  [[ -z $rest ]] && break
  [[ $rest =~ $re ]] || break
  words+=("${{BASH_REMATCH[1]}}")
  rest=${{BASH_REMATCH[2]}}
done
[[ $COMP_LINE == *[[:space:]] ]] && words+=("")
COMP_WORDS=("${{words[@]}}")
COMP_CWORD=$(( ${{#words[@]}} - 1 ))
_nanoprobe nanoprobe "${{words[COMP_CWORD]}}" "${{words[COMP_CWORD-1]:-}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                       text=True, env=T.ENV, timeout=T.TIMEOUT)
    R.eq(p.returncode, 0, f"bash completes {line!r}", p.stderr)
    return [w for w in p.stdout.splitlines() if w]


# --------------------------------------------------------------------------


@case
def bash_offers_every_verb():
    got = complete("nanoprobe ")
    R.check(set(VERBS + ["help", "version", "--help", "--version"]) <= set(got),
            "every verb, help, version, --help, --version", got)
    R.eq(complete("nanoprobe la"), ["latency"], "a verb's prefix")
    R.eq(sorted(complete("nanoprobe help co")), ["count"], "help VERB")


@case
def bash_offers_every_option_of_every_verb():
    for verb in VERBS:
        flags = help_flags(verb)
        R.check(len(flags) >= 3, f"{verb}: --help lists options", flags)
        got = set(complete(f"nanoprobe {verb} -"))
        R.eq(sorted(flags - got), [], f"{verb}: every option --help lists is offered")
        R.eq(sorted(got - flags), [], f"{verb}: and no option --help does not list")


@case
def bash_offers_option_values():
    R.eq(sorted(complete("nanoprobe count --strategy ")), ["auto", "jump", "trap"],
         "--strategy's values")
    R.eq(sorted(complete("nanoprobe run -f j")), ["json"], "run -f's values")
    R.eq(sorted(complete("nanoprobe analyze --arch a")), ["arm64"], "--arch's values")
    pid = str(os.getpid())
    R.check(pid in complete(f"nanoprobe count -p {pid[:-1]}"), "-p: process ids", pid)


@case
def bash_offers_functions_for_specs():
    # PATH:PREFIX: bash splits the word at ':', so what is offered is the
    # part after the ':' (the script strips what readline keeps)
    got = complete(f"nanoprobe count {COUNTER}:gre")
    R.eq(sorted(got), ["greet", "greet_ptr"], "PATH:PREFIX: the functions of PATH", got)
    got = complete(f"nanoprobe trace -o /dev/null {COUNTER}:wo")
    R.eq(got, ["work"], "after an option and its value")
    got = complete("nanoprobe count c:mallo")
    R.check("malloc" in got, "c:PREFIX: libc's functions, the library named as for a spec", got)
    got = complete(f"nanoprobe list {COUNTER} gre")
    R.eq(sorted(got), ["greet", "greet_ptr"], "list FILE PREFIX: the file's functions")
    got = complete(f"nanoprobe count -- {COUNTER[:-3]}")
    R.check(COUNTER in got or os.path.basename(COUNTER) in [os.path.basename(g) for g in got],
            "after --: the command", got)


@case
def bash_loads_it_as_installed():
    """bash-completion's loader finds the script in a completions folder
    (where make install puts it, named nanoprobe) the first time
    nanoprobe is completed."""
    if not os.path.exists(BASH_COMPLETION):
        R.check(False, "the bash-completion package (make deps installs it)", BASH_COMPLETION)
        return
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/completions")
        shutil.copy(BASH_SCRIPT, f"{d}/completions/nanoprobe")
        script = f"""
export BASH_COMPLETION_USER_DIR={shlex.quote(d)}
source {BASH_COMPLETION}
complete -p nanoprobe >/dev/null 2>&1 && echo "bound too early"
__load_completion nanoprobe || _completion_loader nanoprobe
complete -p nanoprobe
"""
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                           text=True, env=T.ENV, timeout=T.TIMEOUT)
    R.check("bound too early" not in p.stdout and "complete -F _nanoprobe nanoprobe" in p.stdout,
            "the loader binds _nanoprobe to nanoprobe", f"{p.stdout}\n{p.stderr}")


def zsh_complete(line):
    """What zsh offers for `line` (tests/cli/zsh_complete.zsh); `nanoprobe`
    in it is the command built."""
    line = line.replace("nanoprobe", NANOPROBE, 1)
    p = subprocess.run([shutil.which("zsh"), "-f", os.path.join(T.HERE, "zsh_complete.zsh"), DIR,
                        line], capture_output=True, text=True, errors="replace",
                       env=dict(T.ENV, TERM="dumb"), timeout=T.TIMEOUT)
    R.eq(p.returncode, 0, f"zsh completes {line!r}", p.stderr)
    return re.findall(r"<m>([^<]*)</m>", p.stdout)


@case
def zsh_offers_verbs_options_and_functions():
    if not shutil.which("zsh"):
        R.check(False, "zsh (make deps installs it)")
        return
    got = zsh_complete("nanoprobe ")
    R.check(set(VERBS + ["help", "version", "--help", "--version"]) <= set(got),
            "every verb, help, version, --help, --version", got)
    for verb in VERBS:
        flags = help_flags(verb)
        got = set(zsh_complete(f"nanoprobe {verb} -"))
        R.eq(sorted(flags - got), [], f"zsh, {verb}: every option --help lists is offered")
        R.eq(sorted(got - flags), [], f"zsh, {verb}: and no option --help does not list")
    R.eq(sorted(zsh_complete("nanoprobe count --strategy ")), ["auto", "jump", "trap"],
         "zsh: --strategy's values")
    R.eq(sorted(zsh_complete(f"nanoprobe count {COUNTER}:gre")), ["greet", "greet_ptr"],
         "zsh: PATH:PREFIX, the functions of PATH")
    R.eq(sorted(zsh_complete(f"nanoprobe list {COUNTER} gre")), ["greet", "greet_ptr"],
         "zsh: list FILE PREFIX, the file's functions")


@case
def zsh_loads_it_and_names_every_option():
    zsh = shutil.which("zsh")
    if not zsh:
        R.check(False, "zsh (make deps installs it)")
        return
    p = subprocess.run([zsh, "-n", ZSH_SCRIPT], capture_output=True, text=True, timeout=T.TIMEOUT)
    R.eq(p.returncode, 0, "zsh parses the script", p.stderr)
    with tempfile.TemporaryDirectory() as d:
        script = f"""
fpath=({shlex.quote(DIR)} $fpath)
autoload -Uz compinit
compinit -u -d {shlex.quote(d)}/zcompdump
print -r -- "${{_comps[nanoprobe]}}"
"""
        p = subprocess.run([zsh, "-f", "-c", script], capture_output=True, text=True,
                           env=dict(T.ENV, HOME=d), timeout=T.TIMEOUT)
    R.eq(p.stdout.strip(), "_nanoprobe", "compinit binds _nanoprobe to nanoprobe", p.stderr)
    text = open(ZSH_SCRIPT).read()
    for verb in VERBS:
        R.check(re.search(rf"^\s+'?{verb}[:)]", text, re.M), f"zsh: the verb {verb}")
        for f in sorted(help_flags(verb)):
            R.check(re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text),
                    f"zsh: {verb}'s {f}", f)


# --------------------------------------------------------------------------


def main():
    return run_cases(R, CASES, (NANOPROBE, COUNTER, BASH_SCRIPT, ZSH_SCRIPT), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
