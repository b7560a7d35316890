#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make demo: the nanoprobe command on examples/shop.c, a small order
# pipeline (parse_order -> checkout -> price_item -> price_lookup,
# apply_discount, confirm_payment). Each step prints the command as you
# would type it, then its real output. docs/cli.md explains every option.
#
#   sh examples/demo.sh BUILD_DIR
set -eu

build=$(cd "${1:?usage: demo.sh BUILD_DIR}" && pwd)
# So that the commands below read as you would type them.
PATH=$build/tools/nanoprobe:$build/examples:$PATH
export PATH

step() {
	printf '\n== %s\n' "$*"
}

# Show a command, then run it (stderr too: nanoprobe's banner and errors).
run() {
	printf '$ %s\n' "$1"
	eval "$1" 2>&1
}

tmp=$(mktemp -d)
shop_pid=
cleanup() {
	if [ -n "$shop_pid" ]; then
		kill "$shop_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

step "1. Where can price_item be probed? (nothing runs: nanoprobe reads the file)"
run "nanoprobe list shop price_item"
echo "# JUMP: a jump to a trampoline is patched in, a few ns per hit;"
echo "# TRAP: a breakpoint, about 2 us per hit, where a jump cannot go safely."

step "2. How often is each price_* function called in 5000 orders?"
run "nanoprobe count 'price_*' -- shop"

step "3. How long does checkout take? Orders of 100 EUR or more wait ~20 us for the bank"
run "nanoprobe latency -u checkout -- shop"

step "4. Each price_item call of one order: its arguments (a string, an int), its result"
run "nanoprobe trace 'price_item sku=\$arg1:string qty=\$arg2:s32' 'r price_item cents=\$retval:s64' -- shop 1"

# -p PID needs ptrace: with Yama's ptrace_scope at 2 only root may, at 3
# nobody (shop --serve lifts the limit of 1 for itself).
can_attach() {
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	[ "$scope" -le 1 ] || { [ "$scope" -eq 2 ] && [ "$(id -u)" -eq 0 ]; }
}

step "5. Attach to a process that is already running (-p PID)"
if ! can_attach; then
	echo "skipped: /proc/sys/kernel/yama/ptrace_scope is $scope (see docs/cli.md)"
	exit 0
fi
# shop --serve checks out the orders it reads on stdin and waits for more.
mkfifo "$tmp/orders"
echo '$ shop --serve < orders &'
shop --serve <"$tmp/orders" >"$tmp/shop.out" &
shop_pid=$!
exec 3>"$tmp/orders"
# Until shop runs (before, the pid is still a shell's), at most 5 s.
i=0
until grep -q waiting "$tmp/shop.out" || [ "$i" -ge 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
cat "$tmp/shop.out"
# 100 orders of 2 items each arrive while nanoprobe is attached, 50 after.
orders() {
	i=0
	while [ "$i" -lt "$2" ]; do
		echo "$(($1 + i)) apple:2 tea:1"
		i=$((i + 1))
	done >&3
}
(sleep 1 && orders 1 100) &
run "nanoprobe count -p $shop_pid -d 2 'price_*'"
wait $!
orders 101 50
exec 3>&-
wait "$shop_pid"
shop_pid=
echo "# after nanoprobe detached, shop went on; at the end of its input it said:"
tail -n 1 "$tmp/shop.out"
