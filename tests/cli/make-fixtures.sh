#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the fixture program and the copies distributions ship:
#   OUT            -g, full .symtab
#   OUT.stripped   strip --strip-all: .dynsym and .eh_frame are all that is left
#   OUT.mini       stripped + MiniDebugInfo (.gnu_debugdata), made as Fedora does
#   OUT.debug      objcopy --only-keep-debug: the separate debug file; the test
#                  places it under .build-id/xx/yyyy.debug in a directory of its own
# usage: make-fixtures.sh OUT fixture.c fixture.S CC [CC-ARGS...]
set -eu
out=$1 src=$2 asm=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# -O1 and no inlining keep one out-of-line body per name; two exports give
# .dynsym something to hold next to the MiniDebugInfo table.
"$@" -g -O1 -fno-inline -fasynchronous-unwind-tables -o "$out" "$src" "$asm" \
	-Wl,--build-id -Wl,--export-dynamic-symbol=np_fx_add \
	-Wl,--export-dynamic-symbol=np_fx_mul

strip --strip-all -o "$out.stripped" "$out"
objcopy --only-keep-debug "$out" "$out.debug"

# MiniDebugInfo: the function symbols .dynsym lacks, in the .symtab of an
# xz-compressed debug-only ELF stored as .gnu_debugdata.
nm -D "$out" --format=posix --defined-only | awk '{ print $1 }' | sort >"$tmp/dynsyms"
nm "$out" --format=posix --defined-only | awk '$2 == "T" || $2 == "t" { print $1 }' |
	sort >"$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" >"$tmp/keep"
objcopy -S --remove-section .gdb_index --remove-section .comment \
	--keep-symbols="$tmp/keep" "$out.debug" "$tmp/mini"
xz --threads=1 "$tmp/mini"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$out.stripped" "$out.mini"
