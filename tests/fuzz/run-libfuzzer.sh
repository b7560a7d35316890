#!/bin/sh
# Run a libFuzzer binary for a bounded number of runs (a fixed -seed, so
# that a result reproduces) over a copy of its seeds:
#   run-libfuzzer.sh FUZZER RUNS SEED_DIR_OR_FILE...
# (libFuzzer writes new inputs into its first corpus directory: a temporary
# one, so that the source tree's corpus stays as checked in.)
set -eu
fuzzer=$1 runs=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/np-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/artifacts"
for s in "$@"; do
	if [ -d "$s" ]; then
		cp "$s"/* "$work/corpus/"
	else
		cp "$s" "$work/corpus/"
	fi
done
export DEBUGINFOD_URLS=
"$fuzzer" -seed=1 -runs="$runs" -max_total_time=10 -artifact_prefix="$work/artifacts/" \
	-print_final_stats=1 "$work/corpus" || {
	rc=$?
	for a in "$work"/artifacts/*; do
		[ -e "$a" ] || continue
		echo "crashing input $a:"
		od -An -tx1 "$a" | head -20
	done
	exit $rc
}
