#!/bin/sh
# Script costs, nanoprobe run against bpftrace, the same script on the same
# loop in one run (docs/performance.md, "Scripts"). As root, with bpftrace.
#   bench/scripts.sh [BUILD]     (default build)
#   bench/scripts.sh BUILD usdt  the usdt probe bench:work instead, and a
#                                uprobe on its function, in the same run
#   bench/scripts.sh BUILD before OTHER [ROUNDS]
#                                two builds' nanoprobe run on the same
#                                scripts, interleaved run by run for ROUNDS
#                                rounds (default 25): a change's before and after
# ns per call of work(): the best of 5 runs each (3 for bpftrace, fewer calls),
# in thread CPU time, minus the unprobed loop's.
B=${1:-build}
NP=$B/tools/nanoprobe/nanoprobe
LOOP=$B/bench/script-loop
best() { sort -n | head -1; }
ns() { sed -n 's/ ns\/call.*//p'; }
if [ "$2" = before ]; then
	out=$(mktemp)
	for r in $(seq "${4:-25}"); do
		echo "unprobed base $($LOOP 1000000 | ns)" >>"$out"
		for b in "$3" "$B"; do
			echo "count_verb $b $($b/tools/nanoprobe/nanoprobe count work -- $LOOP 1000000 2>/dev/null | ns)" >>"$out"
			while read -r name script; do
				s=$(echo "$script" | sed "s|LOOP|$LOOP|")
				echo "$name $b $($b/tools/nanoprobe/nanoprobe run -e "$s" -- $LOOP 1000000 | ns)" >>"$out"
			done <<'SCRIPTS'
empty_block uprobe:LOOP:work { }
predicate_rejects uprobe:LOOP:work /arg0 > 1000000000/ { @c = count(); }
count_scalar uprobe:LOOP:work { @c = count(); }
count_by_arg uprobe:LOOP:work { @[arg0 & 63] = count(); }
hist uprobe:LOOP:work { @h = hist(arg0); }
SCRIPTS
		done
	done
	# the best run of each script and build, minus the best unprobed loop
	awk -v before="$3" -v after="$B" '
		!($1 SUBSEP $2 in best) || $3 < best[$1, $2] { best[$1, $2] = $3 }
		$2 != "base" && !seen[$1]++ { order[++n] = $1 }
		END {
			printf "%-18s %10s %10s   ns per hit over the unprobed loop\n", "", "before", "after"
			for (i = 1; i <= n; i++)
				printf "%-18s %10.1f %10.1f\n", order[i],
					best[order[i], before] - best["unprobed", "base"],
					best[order[i], after] - best["unprobed", "base"]
		}' "$out"
	rm -f "$out"
	exit 0
fi
if [ "$2" = usdt ]; then
	base=$(for i in 1 2 3 4 5; do $LOOP 1000000 usdt | ns; done | best)
	echo "unprobed (work_usdt): $base ns/call"
	while read -r name script; do
		s=$(echo "$script" | sed "s|LOOP|$LOOP|")
		a=$(for i in 1 2 3 4 5; do $NP run -e "$s" -- $LOOP 1000000 usdt | ns; done | best)
		b=$(for i in 1 2 3; do bpftrace -e "$s" -c "$LOOP 20000 usdt" 2>/dev/null | ns; done | best)
		printf '%-22s nanoprobe %8.1f   bpftrace %9.1f   ns per hit\n' "$name" \
			"$(echo "$a - $base" | bc)" "$(echo "$b - $base" | bc)"
	done <<'SCRIPTS'
uprobe_count uprobe:LOOP:work_usdt { @c = count(); }
usdt_count usdt:LOOP:bench:work { @c = count(); }
usdt_count_by_arg usdt:LOOP:bench:work { @[arg0 & 63] = count(); }
SCRIPTS
	exit 0
fi
base=$(for i in 1 2 3 4 5; do $LOOP 1000000 | ns; done | best)
echo "unprobed: $base ns/call"
# the engine's own floor in this run: nanoprobe count's handler, one increment
c=$(for i in 1 2 3 4 5; do $NP count work -- $LOOP 1000000 2>/dev/null | ns; done | best)
printf '%-22s nanoprobe %8.1f   (nanoprobe count work: no script)\n' count_verb "$(echo "$c - $base" | bc)"
while read -r name script; do
	s=$(echo "$script" | sed "s|LOOP|$LOOP|")
	a=$(for i in 1 2 3 4 5; do $NP run -e "$s" -- $LOOP 1000000 | ns; done | best)
	b=$(for i in 1 2 3; do bpftrace -e "$s" -c "$LOOP 20000" 2>/dev/null | ns; done | best)
	printf '%-22s nanoprobe %8.1f   bpftrace %9.1f   ns per hit\n' "$name" \
		"$(echo "$a - $base" | bc)" "$(echo "$b - $base" | bc)"
done <<'SCRIPTS'
predicate_rejects uprobe:LOOP:work /arg0 > 1000000000/ { @c = count(); }
count_by_arg uprobe:LOOP:work { @[arg0 & 63] = count(); }
hist uprobe:LOOP:work { @h = hist(arg0); }
ustack5_key uprobe:LOOP:work { @[ustack(5)] = count(); }
count_scalar uprobe:LOOP:work { @c = count(); }
SCRIPTS
