#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The booted tier's root file system (make test-boot): a minimal Debian 12 made with mmdebstrap
# from this machine's own apt sources (no mirror is named here), cached under
# .build/boot-root/KEY/root, KEY a hash of the package list, this script, the sources and the
# package's Recommends. Prints the cached root's path. Debian's fprintd CLI tools (fprintd-list,
# fprintd-verify, …) are taken from Debian's fprintd package into /usr/local/bin: that package
# conflicts with localauth-fprintd-compat, whose D-Bus API they talk to. Debian's GDM PAM
# services come from the gdm3 package into /usr/local/share/boot-tier/gdm3 (only those files: GDM
# itself never runs). The package's Recommends (packaging/deb/control.in) are downloaded into the
# root's apt cache, its lists kept, and not installed: apt pulls them in at the tier's install.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${BOOT_ROOT_CACHE:-.build/boot-root}
sources=
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$f" ] && { sources=$f; break; }
done
[ -n "$sources" ] || { echo "test-boot: no apt sources on this machine to build the root from" >&2; exit 1; }
packages=$(grep -v '^#' "$here/packages.txt" | grep . | paste -sd, -)
recommends=$(sed -n 's/^Recommends: //p' "$here/../../packaging/deb/control.in" | tr -d ' ' | tr ',' ' ')
# The bench on the booted system (bench/boot.py, make bench-boot) sets Debian's fprintd beside
# localauthd: fprintd and libpam-fprintd (with what they depend on) wait in the root's apt cache
# too, installed only in the bench's booted copy (fprintd conflicts with localauth-fprintd-compat,
# which the tier installs).
bench_packages="fprintd libpam-fprintd"
key=$( (cat "$here/packages.txt" "$here/root.sh" "$sources"; echo "$recommends") | sha256sum | cut -c1-16)
root=$cache/$key/root
if [ -d "$root" ]; then echo "$root"; exit 0; fi
for tool in mmdebstrap systemd-nspawn; do
    command -v "$tool" >/dev/null || { echo "test-boot: $tool is missing (apt-get install mmdebstrap systemd-container)" >&2; exit 1; }
done
mkdir -p "$cache"
work=$(mktemp -d "$cache/.new-XXXXXX")
trap 'rm -rf "$work"' EXIT
SECONDS=0
mmdebstrap --quiet --variant=minbase --include="$packages" \
    --skip=cleanup/apt/lists --skip=cleanup/apt/cache \
    --customize-hook='chroot "$1" sh -ec "
        apt-get install -q=2 -y --download-only --no-install-recommends '"$recommends"'
        apt-get install -q=2 -y --download-only --no-install-recommends '"$bench_packages"'
        mkdir /tmp/x && cd /tmp/x && apt-get download -q=2 -o APT::Sandbox::User=root fprintd gdm3
        dpkg-deb -x fprintd_*.deb . && dpkg-deb -x gdm3_*.deb .
        for t in list verify enroll delete; do install -m 0755 usr/bin/fprintd-\$t /usr/local/bin/; done
        mkdir -p /usr/local/share/boot-tier/gdm3
        cp etc/pam.d/gdm-* /usr/local/share/boot-tier/gdm3/
        cd / && rm -rf /tmp/x"' \
    bookworm "$work/root" "$sources" >&2
for p in $recommends $bench_packages; do
    ls "$work/root/var/cache/apt/archives/${p}_"*.deb >/dev/null \
        || { echo "test-boot: the package's Recommends ($p) is not in the root's apt cache" >&2; exit 1; }
done
echo "test-boot: made the root in $SECONDS s ($(du -sh "$work/root" | cut -f1)): $root" >&2
mkdir -p "$cache/$key"
mv "$work/root" "$root"
# Roots made for another list are not used again: one cached root at a time (each ~380 MB).
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name '.new-*' -exec rm -rf {} +
echo "$root"
