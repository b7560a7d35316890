#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The riscv64 libraries the cross build links against, unpacked into a
# sysroot: Debian 12 (bookworm) has no riscv64 binary packages, so they
# come from a later Debian release, fetched by apt itself under a private
# configuration (signature-checked indexes, Debian's archive keyring) and
# unpacked with dpkg-deb -x. Nothing is installed into the host's dpkg.
#
#   sh cross/riscv64-sysroot.sh [DIR]     (default: cross/sysroot/riscv64)
#   sh cross/riscv64-sysroot.sh DIR PKG...
#
# The second form unpacks other packages the same way, with the libraries
# they need (libc included): a root that qemu-riscv64 -L runs programs
# from (the differential runs, make check-riscv64-differential).
#
# Idempotent: a sysroot whose stamp names the same package list is kept.
# The suites tried, in order: trixie, then sid (a mirror may serve a
# trixie riscv64 index that does not match its signed Release file).
#
# The libc comes with them: the libraries need a newer glibc than
# bookworm's cross libc, so the sysroot's libc is the one linked against
# (cross/riscv64-linux-gnu.ini puts its directory first) and run with
# (qemu-riscv64 -L). Headers stay bookworm's: code built against an older
# glibc runs on a newer one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/sysroot/riscv64}
[ $# -gt 0 ] && shift
asked=$*
pkgs=${asked:-libc6-dev libelf-dev libdw-dev libzydis-dev libstdc++6 libatomic1}
stamp="$dest/.nanoprobe-sysroot"

# the machine file that tells meson where the sysroot is (not for a root
# of other packages)
write_ini() {
	[ -z "$asked" ] || return 0
	printf "# written by cross/riscv64-sysroot.sh\n[constants]\nsysroot = '%s'\n" "$dest" \
		> "$dest.ini"
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkgs" ]; then
	[ -f "$dest.ini" ] || write_ini
	exit 0
fi

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || { echo "riscv64-sysroot: $keyring missing (debian-archive-keyring)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fetch() { # suite
	rm -rf "$work/apt"
	mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/apt/etc/parts"
	: > "$work/apt/status"
	echo "deb [arch=riscv64 signed-by=$keyring] http://deb.debian.org/debian $1 main" \
		> "$work/apt/etc/sources.list"
	set -- -o Dir::State="$work/apt" -o Dir::State::Lists="$work/apt/lists" \
		-o Dir::State::status="$work/apt/status" -o Dir::Cache="$work/apt" \
		-o Dir::Cache::Archives="$work/apt/archives" \
		-o Dir::Etc::SourceList="$work/apt/etc/sources.list" -o Dir::Etc::SourceParts="$work/apt/etc/parts" \
		-o Dir::Etc::Preferences="$work/apt/etc/none" \
		-o Dir::Etc::PreferencesParts="$work/apt/etc/parts" \
		-o APT::Architecture=riscv64 -o APT::Architectures::=riscv64 \
		-o APT::Install-Recommends=false -o Acquire::Languages=none \
		-o Debug::NoLocking=true -o APT::Sandbox::User=root
	# apt-get update exits 0 even when an index fails its check: the
	# warning is what tells
	out=$(apt-get "$@" update 2>&1) || return 1
	case $out in *"Some index files failed"* | *"Failed to fetch"* | *"E: "*) echo "$out" | tail -3 >&2; return 1 ;; esac
	# shellcheck disable=SC2086
	apt-get "$@" install -y -qq --download-only $pkgs > /dev/null
}

suite=
for s in trixie sid; do
	if fetch "$s"; then
		suite=$s
		break
	fi
	echo "riscv64-sysroot: the $s riscv64 index is not usable here, trying the next suite" >&2
done
[ -n "$suite" ] || { echo "riscv64-sysroot: no Debian suite gave the riscv64 packages" >&2; exit 1; }

rm -rf "$dest.new"
mkdir -p "$dest.new"
for deb in "$work"/apt/archives/*.deb; do
	dpkg-deb -x "$deb" "$dest.new"
done
# merged /usr: the links base-files would make
for d in lib bin sbin; do
	[ -e "$dest.new/$d" ] || ln -s "usr/$d" "$dest.new/$d"
done
echo "$suite" > "$dest.new/.suite"
echo "$pkgs" > "$dest.new/.nanoprobe-sysroot"
rm -rf "$dest"
mv "$dest.new" "$dest"
write_ini
echo "riscv64-sysroot: $dest from Debian $suite"
