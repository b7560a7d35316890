#!/bin/sh
# Every instruction of the riscv64 libc's .text, as rv-dis (our decoder and
# formatter) and riscv64-linux-gnu-objdump print it, must agree. objdump
# skips runs of zero parcels ("..."), so those lines are left out of ours.
# Skips (exit 77) without the cross binutils or libc6-riscv64-cross.
set -eu
dis=$1
libc=${2:-/usr/riscv64-linux-gnu/lib/libc.so.6}
command -v riscv64-linux-gnu-objdump >/dev/null || { echo "skip: no objdump"; exit 77; }
[ -f "$libc" ] || { echo "skip: no $libc"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
riscv64-linux-gnu-objcopy -O binary --only-section=.text "$libc" "$tmp/text.bin"
vma=$(riscv64-linux-gnu-objdump -h "$libc" | awk '$2 == ".text" { print $4 }')
"$dis" "$tmp/text.bin" "$vma" | grep -v "	unimp\$" > "$tmp/ours"
riscv64-linux-gnu-objdump -d --no-show-raw-insn -j .text "$libc" |
  grep -E '^ +[0-9a-f]+:' | grep -v "	unimp\$" |
  sed -E 's/^ +//; s/ +#.*$//; s/([\t ,])([0-9a-f]+) <[^>]*>/\10x\2/; s/[[:space:]]+$//' > "$tmp/theirs"
n=$(wc -l < "$tmp/theirs")
if ! diff "$tmp/ours" "$tmp/theirs" > "$tmp/diff"; then
  echo "rv-dis and objdump differ on $(grep -c '^<' "$tmp/diff") of $n instructions:"
  head -40 "$tmp/diff"
  exit 1
fi
echo "ok: $n instructions of $libc agree with objdump"
