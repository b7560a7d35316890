#!/bin/sh
# SPDX-License-Identifier: MIT
# What a nanoprobe command costs the program it traces, per hit: the
# bundled counter program calls work() N times; each row runs it under one
# command, side by side in one run, and reports (time - plain time) / N.
# With perf installed and root, the kernel's own uprobe (perf probe + perf
# stat, counting only) is measured on the same function for comparison.
#
#   bench/cli-overhead.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-20000000}
np=$build/tools/nanoprobe/nanoprobe
prog=$(realpath "$build/tests/cli/counter")

calc() { awk "BEGIN { print $1 }"; }

seconds() { # command...: wall seconds, best of 3
	best=
	for _ in 1 2 3; do
		t0=$(date +%s.%N)
		"$@" >/dev/null 2>/tmp/np-overhead.err
		t1=$(date +%s.%N)
		t=$(calc "$t1 - $t0")
		if [ -z "$best" ] || [ "$(calc "$t < $best")" = 1 ]; then best=$t; fi
	done
	echo "$best"
}

row() { # name seconds calls [baseline]
	printf '%-34s %10.3f s %10.1f ns/hit\n' "$1" "$2" \
		"$(calc "($2 - ${4:-$plain}) * 1000000000 / $3")"
}

plain=$(seconds "$prog" "$n")
printf '%-34s %10.3f s   (%s calls of work)\n' "no probe" "$plain" "$n"
row "nanoprobe count" "$(seconds "$np" count work -- "$prog" "$n")" "$n"
row "nanoprobe latency" "$(seconds "$np" latency work -- "$prog" "$n")" "$n"
row "nanoprobe trace -o /dev/null (1 arg)" \
	"$(seconds "$np" trace -o /dev/null 'work i=%di:u64' -- "$prog" "$n")" "$n"
# a full ring drops rather than waits: say how many events made it
sed -n 's/^nanoprobe trace: /    (last run: /p' /tmp/np-overhead.err | sed 's/$/)/'

# The kernel's uprobe, counted by perf: fewer calls, it is slow.
if command -v perf >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	k=$((n / 100))
	mount | grep -q tracefs || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
	if perf probe -q -x "$prog" work 2>/dev/null; then
		plain_k=$(seconds "$prog" "$k")
		t=$(seconds perf stat -e probe_counter:work "$prog" "$k")
		row "kernel uprobe (perf stat, $k calls)" "$t" "$k" "$plain_k"
		perf probe -q -d probe_counter:work
	fi
fi
