#!/bin/sh
# make install ARCH=riscv64 PREFIX=DIR: the cross-built library, header,
# nanoprobe.pc, CLI and agent are RISC-V files, and a program cross-built
# with pkg-config alone against them (shared and static) runs under
# qemu-riscv64 with a probe that counts. The libraries the engine needs
# come from the sysroot make deps unpacks (cross/riscv64-sysroot.sh).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
sysroot=$src/cross/sysroot/riscv64
libdir=$sysroot/usr/lib/riscv64-linux-gnu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -C "$src" --no-print-directory install ARCH=riscv64 PREFIX="$work/prefix" BUILD="$work/build" \
	>"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
for f in include/nanoprobe/nanoprobe.h lib/libnanoprobe.so lib/libnanoprobe.a lib/pkgconfig/nanoprobe.pc \
	bin/nanoprobe lib/nanoprobe/libnanoprobe-agent.so; do
	[ -e "$work/prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
for f in lib/libnanoprobe.so bin/nanoprobe lib/nanoprobe/libnanoprobe-agent.so; do
	riscv64-linux-gnu-readelf -h "$work/prefix/$f" | grep -q 'Machine:.*RISC-V' ||
		{ echo "not a RISC-V file: $f"; exit 1; }
done
export PKG_CONFIG_LIBDIR="$work/prefix/lib/pkgconfig:$libdir/pkgconfig"
cc="riscv64-linux-gnu-gcc --sysroot=$sysroot -L$libdir"
run="qemu-riscv64 -L $sysroot -E LD_LIBRARY_PATH=$work/prefix/lib"
$cc "$src/tests/install/consumer.c" -o "$work/shared" $(pkg-config --cflags --libs nanoprobe)
$run "$work/shared"
$cc "$src/tests/install/consumer.c" -o "$work/static" $(pkg-config --cflags nanoprobe) \
	"$work/prefix/lib/libnanoprobe.a" \
	$(pkg-config --static --libs-only-l nanoprobe | sed 's/-lnanoprobe//')
$run "$work/static"
echo "2 passed, 0 failed"
