#!/bin/sh
# SPDX-License-Identifier: MIT
# What a nanoprobe command costs the program it traces, per hit: the
# bundled counter program calls work() N times and reports how long that
# loop took (NP_COUNTER_TIME); each row runs it under one command, side by
# side in one run, and gives (loop time - unprobed loop time) / N, best of
# 3. With perf installed and root, the kernel's own uprobe (perf probe +
# perf stat, counting only) is measured on the same loop for comparison.
#
#   bench/cli-overhead.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-20000000}
np=$build/tools/nanoprobe/nanoprobe
prog=$(realpath "$build/tests/cli/counter")
export NP_COUNTER_TIME=1

loop_ns() { # command...: the loop's time in ns, best of 3
	best=
	for _ in 1 2 3; do
		"$@" >/dev/null 2>/tmp/np-overhead.err || true
		t=$(sed -n 's/^loop_ns=//p' /tmp/np-overhead.err)
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
# trace: as many calls as one 64 MiB ring holds, so every event is recorded
# (a full ring drops instead: cheaper, and not what this row is about)
m=$((n / 20))
row "nanoprobe trace, 1 arg, every event kept" "$m" \
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
