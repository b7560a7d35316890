#!/bin/sh
# make install PREFIX=DIR, then build and run a program against the result
# with pkg-config alone, shared and static, and a C++ one.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -C "$src" --no-print-directory install PREFIX="$work/prefix" BUILD="$work/build" >"$work/log" 2>&1 ||
	{ cat "$work/log"; exit 1; }
for f in include/nanoprobe/nanoprobe.h lib/libnanoprobe.so lib/libnanoprobe.a lib/pkgconfig/nanoprobe.pc \
	bin/nanoprobe lib/nanoprobe/libnanoprobe-agent.so; do
	[ -e "$work/prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc "$src/tests/install/consumer.c" -o "$work/shared" $(pkg-config --cflags --libs nanoprobe)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/shared"
cc "$src/tests/install/consumer.c" -o "$work/static" $(pkg-config --cflags nanoprobe) \
	"$work/prefix/lib/libnanoprobe.a" $(pkg-config --static --libs-only-l nanoprobe | sed 's/-lnanoprobe//')
"$work/static"
# the header from C++, as the README uses it, warnings as errors
c++ -std=c++17 -Wall -Wextra -Werror "$src/tests/install/consumer_cxx.cpp" -o "$work/cxx" \
	$(pkg-config --cflags --libs nanoprobe)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cxx"
# the installed command finds the installed agent (no build tree, no env)
out=$(env -u NANOPROBE_AGENT "$work/prefix/bin/nanoprobe" count -j main -- "$work/static" 2>&1) ||
	{ echo "installed nanoprobe failed: $out"; exit 1; }
echo "$out" | grep -q '"func":"main",.*"count":1[,}]' ||
	{ echo "installed nanoprobe did not count main once: $out"; exit 1; }
echo "3 passed, 0 failed"
