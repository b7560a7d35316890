#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unpack Debian packages of another architecture into a directory, for the
differential runs under qemu-user (issue 4). Never installs them: a
program package of another architecture would replace the host's own.

    debroot.py ARCH DIR PACKAGE...

Downloads (`apt-get download PKG:ARCH`) each package and the shared
libraries it needs that are not installed for ARCH already (the closure of
Depends and Pre-Depends through packages of Section libs; whatever is
installed for ARCH, such as libc6, is the host's multiarch copy), then
`dpkg-deb -x` each into DIR/root. DIR/packages lists what was asked for
and what is unpacked; a second run asking the same does nothing.
"""
import os
import subprocess
import sys

APT_OPTS = ["-o", "DPkg::Lock::Timeout=600", "-q"]


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def installed(pkgs):
    """Those of pkgs (NAME:ARCH) installed for their architecture."""
    out = sh(["dpkg-query", "-W", "-f=${Package}:${Architecture} ${Status}\n"] + pkgs).stdout
    return {l.split()[0] for l in out.splitlines() if l.endswith("ok installed")}


def sections(pkgs):
    """NAME:ARCH -> Section, from one apt-cache call (apt is slow to start)."""
    out, name, arch = {}, None, None
    for line in sh(["apt-cache", "show", "--no-all-versions"] + pkgs).stdout.splitlines():
        key, _, value = line.partition(": ")
        if key == "Package":
            name = value
        elif key == "Architecture":
            arch = value
        elif key == "Section":
            out[f"{name}:{arch}"] = value
    return out


def depends(pkgs):
    """The first alternative of each Depends/Pre-Depends of each package."""
    out = sh(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
              "--no-breaks", "--no-replaces", "--no-enhances"] + pkgs).stdout
    deps, alternative = set(), False
    for line in out.splitlines():
        field = line.strip()
        kind, _, name = field.lstrip("|").partition(": ")
        if kind in ("Depends", "PreDepends") and line.startswith("  ") and \
                not line.startswith("   "):
            if not alternative and not name.startswith("<"):
                deps.add(name)
            alternative = field.startswith("|")
    return deps


def closure(arch, wanted):
    """The packages to unpack: the wanted ones, and the libraries they need
    that are not installed for arch (Section libs: a program's Depends on
    dpkg or install-info are for its maintainer scripts)."""
    level = [f"{p}:{arch}" for p in wanted]
    seen = set(level)
    while level:
        deps = {d if ":" in d else f"{d}:{arch}" for d in depends(level)} - seen
        seen |= deps
        deps = sorted(deps - installed(sorted(deps))) if deps else []
        section = sections(deps) if deps else {}
        level = [d for d in deps if section.get(d) == "libs"]
        wanted = wanted + level
    return sorted(p if ":" in p else f"{p}:{arch}" for p in wanted)


def ensure_lists(arch, probe):
    """The package lists of arch: `make deps` adds the architecture, and
    its lists come with the next update."""
    if sh(["apt-cache", "show", "--no-all-versions", f"{probe}:{arch}"]).returncode:
        subprocess.run(["apt-get", "update"] + APT_OPTS, check=True)


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    arch, top, wanted = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3:]
    stamp = os.path.join(top, "packages")
    root, debs = os.path.join(top, "root"), os.path.join(top, "debs")
    asked = f"# {arch}: {' '.join(wanted)}"
    if os.path.exists(stamp) and open(stamp).readline().strip() == asked and os.path.isdir(root):
        return 0
    ensure_lists(arch, wanted[0])
    pkgs = closure(arch, wanted)
    subprocess.run(["rm", "-rf", root, debs], check=True)
    os.makedirs(debs)
    os.chmod(debs, 0o777)  # apt's download user writes there
    if subprocess.run(["apt-get", "download"] + APT_OPTS + pkgs, cwd=debs).returncode:
        subprocess.run(["apt-get", "update"] + APT_OPTS, check=True)
        subprocess.run(["apt-get", "download"] + APT_OPTS + pkgs, cwd=debs, check=True)
    for deb in sorted(os.listdir(debs)):
        subprocess.run(["dpkg-deb", "-x", os.path.join(debs, deb), root], check=True)
    with open(stamp, "w") as f:
        f.write(asked + "\n" + "\n".join(pkgs) + "\n")
    print(f"debroot: {len(pkgs)} {arch} packages unpacked in {root}: {' '.join(pkgs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
