#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The booted tier's root file system (make test-boot): a minimal Debian 12 made with mmdebstrap
# from this machine's own apt sources (no mirror is named here), cached under
# .build/boot-root/KEY/root, KEY a hash of the package list, this script and the sources. Prints
# the cached root's path. Debian's fprintd CLI tools (fprintd-list, fprintd-verify, …) are taken
# from Debian's fprintd package into /usr/local/bin: that package conflicts with
# localauth-fprintd-compat, whose D-Bus API they talk to. Debian's GDM PAM services come from the
# gdm3 package into /usr/local/share/boot-tier/gdm3 (only those files: GDM itself never runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${BOOT_ROOT_CACHE:-.build/boot-root}
sources=
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$f" ] && { sources=$f; break; }
done
[ -n "$sources" ] || { echo "test-boot: no apt sources on this machine to build the root from" >&2; exit 1; }
packages=$(grep -v '^#' "$here/packages.txt" | grep . | paste -sd, -)
key=$(cat "$here/packages.txt" "$here/root.sh" "$sources" | sha256sum | cut -c1-16)
root=$cache/$key/root
if [ -d "$root" ]; then echo "$root"; exit 0; fi
for tool in mmdebstrap systemd-nspawn; do
    command -v "$tool" >/dev/null || { echo "test-boot: $tool is missing (apt-get install mmdebstrap systemd-container)" >&2; exit 1; }
done
mkdir -p "$cache"
work=$(mktemp -d "$cache/.new-XXXXXX")
trap 'rm -rf "$work"' EXIT
SECONDS=0
# The hook runs in the new root while its apt lists are still there (mmdebstrap removes them after).
mmdebstrap --quiet --variant=minbase --include="$packages" \
    --customize-hook='chroot "$1" sh -ec "
        cd /var/cache/apt/archives && apt-get download -q=2 -o APT::Sandbox::User=root fprintd gdm3
        mkdir /tmp/x && dpkg-deb -x fprintd_*.deb /tmp/x && dpkg-deb -x gdm3_*.deb /tmp/x
        for t in list verify enroll delete; do install -m 0755 /tmp/x/usr/bin/fprintd-\$t /usr/local/bin/; done
        mkdir -p /usr/local/share/boot-tier/gdm3
        cp /tmp/x/etc/pam.d/gdm-* /usr/local/share/boot-tier/gdm3/
        rm -rf /tmp/x fprintd_*.deb gdm3_*.deb"' \
    bookworm "$work/root" "$sources" >&2
echo "test-boot: made the root in $SECONDS s ($(du -sh "$work/root" | cut -f1)): $root" >&2
mkdir -p "$cache/$key"
mv "$work/root" "$root"
echo "$root"
