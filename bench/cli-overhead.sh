#!/bin/sh
# SPDX-License-Identifier: MIT
# What a nanoprobe command costs the program it traces, per hit: the
# bundled counter program calls work() N times and reports how long that
# loop took (NP_COUNTER_TIME); each row runs it under one command, side by
# side in one run, and gives (loop time - unprobed loop time) / N, best of
# REPS runs (3 unless set; more on a busy machine). TIME=cpu takes the
# loop's cpu time rather than its elapsed time: on a machine whose other
# work keeps the program waiting for a cpu, the difference between rows is
# then the probes' and not the waits'. With perf installed and root, the
# kernel's own uprobe (perf probe + perf stat, counting only) is measured
# on the same loop for comparison.
#
#   [REPS=N] [TIME=cpu] bench/cli-overhead.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-20000000}
reps=${REPS:-3}
case ${TIME:-wall} in
cpu) field=loop_cpu_ns ;;
*) field=loop_ns ;;
esac
np=$build/tools/nanoprobe/nanoprobe
prog=$(realpath "$build/tests/cli/counter")
export NP_COUNTER_TIME=1

loop_ns() { # command...: the loop's time in ns, best of $reps
	best=
	for _ in $(seq "$reps"); do
		"$@" >/dev/null 2>/tmp/np-overhead.err || true
		t=$(sed -n "s/^.*$field=\([0-9]*\).*/\1/p" /tmp/np-overhead.err)
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	echo "$best"
}

row() { # name calls command...
	name=$1 calls=$2
	shift 2
	base=$(loop_ns "$prog" "$calls")
	t=$(loop_ns "$@")
	awk -v name="$name" -v t="$t" -v b="$base" -v c="$calls" 'BEGIN {
		printf "%-44s %8.1f ns/hit  (%d calls, unprobed %.1f ns/call)\n",
		       name, (t - b) / c, c, b / c }'
}

row "nanoprobe count" "$n" "$np" count work -- "$prog" "$n"
row "nanoprobe latency" "$n" "$np" latency work -- "$prog" "$n"
sed -n 's/^Clock: /    clock: /p' /tmp/np-overhead.err
# the same with its clock read through the vDSO (the row above reads the
# TSC where the kernel vouches for it: its clock line says)
row "nanoprobe latency, NANOPROBE_CLOCK=vdso" "$n" \
	env NANOPROBE_CLOCK=vdso "$np" latency work -- "$prog" "$n"
# trace: as many calls as one 64 MiB ring holds, so every event is recorded
# (a full ring drops instead: cheaper, and not what this row is about)
m=$((n / 20))
row "nanoprobe trace, 1 arg, every event kept" "$m" \
	"$np" trace --buffer-kb 65536 -o /dev/null 'work i=%di:u64' -- "$prog" "$m"
row "nanoprobe trace, the same, NANOPROBE_CLOCK=vdso" "$m" env NANOPROBE_CLOCK=vdso \
	"$np" trace --buffer-kb 65536 -o /dev/null 'work i=%di:u64' -- "$prog" "$m"

# The kernel's uprobe, counted by perf: fewer calls, it is slow.
if command -v perf >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	k=$((n / 100))
	mount | grep -q tracefs || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
	if perf probe -q -x "$prog" work 2>/dev/null; then
		row "kernel uprobe (perf stat -e, counting)" "$k" \
			perf stat -e probe_counter:work -o /dev/null "$prog" "$k"
		perf probe -q -d probe_counter:work
	fi
fi
