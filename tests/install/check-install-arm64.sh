#!/bin/sh
# make install ARCH=arm64 PREFIX=DIR: the cross-built library, header,
# nanoprobe.pc, CLI and agent are aarch64 files, and a program cross-built
# with pkg-config alone against them (shared and static) runs under
# qemu-aarch64 with a probe that counts.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -C "$src" --no-print-directory install ARCH=arm64 PREFIX="$work/prefix" BUILD="$work/build" \
	>"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
for f in include/nanoprobe/nanoprobe.h lib/libnanoprobe.so lib/libnanoprobe.a lib/pkgconfig/nanoprobe.pc \
	bin/nanoprobe lib/nanoprobe/libnanoprobe-agent.so; do
	[ -e "$work/prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
for f in lib/libnanoprobe.so bin/nanoprobe lib/nanoprobe/libnanoprobe-agent.so; do
	aarch64-linux-gnu-readelf -h "$work/prefix/$f" | grep -q 'Machine:.*AArch64' ||
		{ echo "not an aarch64 file: $f"; exit 1; }
done
export PKG_CONFIG_LIBDIR="$work/prefix/lib/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig"
cc=aarch64-linux-gnu-gcc
run="qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=$work/prefix/lib:/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu"
$cc "$src/tests/install/consumer.c" -o "$work/shared" $(pkg-config --cflags --libs nanoprobe)
$run "$work/shared"
$cc "$src/tests/install/consumer.c" -o "$work/static" $(pkg-config --cflags nanoprobe) \
	"$work/prefix/lib/libnanoprobe.a" -L/usr/lib/aarch64-linux-gnu \
	$(pkg-config --static --libs-only-l nanoprobe | sed 's/-lnanoprobe//')
$run "$work/static"
echo "2 passed, 0 failed"
