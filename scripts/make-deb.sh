#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds dist/localauth_VERSION_ARCH.deb (make deb): the tree `make install PREFIX=/usr` lays out,
# from the release build (the Swift runtime linked statically, so nothing needs /opt/swift), with
# maintainer scripts that register the PAM profile with pam-auth-update (it stays disabled until
# an administrator selects it) and remove it again, as libpam-fprintd does; and
# dist/localauth-fprintd-compat_VERSION_all.deb (fprintd's D-Bus API, below).
set -euo pipefail
version=${DEB_VERSION:-0.1.0}
built=${BUILT:-.build/release}
arch=$(dpkg --print-architecture)
out=dist/localauth_${version}_${arch}.deb

for binary in "$built/localauthd" "$built/localauthctl"; do
    if ldd "$binary" | grep -q 'libswiftCore'; then
        echo "make-deb: $binary links the Swift runtime dynamically; build it with --static-swift-stdlib" >&2
        exit 1
    fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
make -s install PREFIX=/usr DESTDIR="$root" BUILT="$built" >/dev/null
install -m 0644 LICENSE "$root/usr/share/doc/localauth/copyright"
# Symbols and debug information out, as dh_strip does (the daemon: 30 MB → 13 MB).
strip --remove-section=.comment "$root/usr/sbin/localauthd" "$root/usr/bin/localauthctl"
strip --remove-section=.comment --strip-unneeded "$(find "$root" -name pam_localauth.so)"

# Shared-library dependencies as Debian computes them (dpkg-shlibdeps wants a debian/control).
mkdir -p "$stage/debian"
printf 'Source: localauth\n\nPackage: localauth\nArchitecture: any\n' > "$stage/debian/control"
module=$(find "$root" -name pam_localauth.so)
depends=$(cd "$stage" && dpkg-shlibdeps -O -e"root/usr/sbin/localauthd" -e"root/usr/bin/localauthctl" \
    -e"${module#"$stage"/}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# Packed relative relocations (DT_RELR, the Makefile's -z pack-relative-relocs) need glibc 2.36: the
# binaries ask for the version GLIBC_ABI_DT_RELR, which no symbol of libc6's symbols file carries,
# so dpkg-shlibdeps does not see it.
# (grep without -q reads all of it: under pipefail an early exit would fail the pipe on SIGPIPE.)
if readelf -V "$root/usr/sbin/localauthd" "$root/usr/bin/localauthctl" | grep 'Name: GLIBC_ABI_DT_RELR' >/dev/null; then
    depends=$(sed -E 's/libc6 \(>= 2\.([0-9]|[12][0-9]|3[0-5])(\.[0-9]+)?\)/libc6 (>= 2.36)/' <<<"$depends")
    grep -qE 'libc6 \(>= 2\.(3[6-9]|[4-9][0-9])' <<<"$depends" || { echo "make-deb: DT_RELR needs libc6 (>= 2.36): $depends" >&2; exit 1; }
fi

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
    packaging/deb/control.in > "$root/DEBIAN/control"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"

mkdir -p dist
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "$out"
dpkg-deb --info "$out" | sed -n 's/^ \(Package\|Version\|Depends\|Installed-Size\):/  \1:/p'

# The second package, localauth-fprintd-compat_VERSION_all.deb: fprintd's D-Bus API (off unless
# installed; Provides/Conflicts/Replaces fprintd, so installing localauth alone never fights fprintd).
compat=$stage/compat
compat_out=dist/localauth-fprintd-compat_${version}_all.deb
make -s install-fprintd-compat PREFIX=/usr DESTDIR="$compat" >/dev/null
install -d -m 0755 "$compat/usr/share/doc/localauth-fprintd-compat" "$compat/DEBIAN"
install -m 0644 LICENSE "$compat/usr/share/doc/localauth-fprintd-compat/copyright"
size=$(du -sk --exclude=DEBIAN "$compat" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@SIZE@|$size|" packaging/fprintd-compat/control.in > "$compat/DEBIAN/control"
install -m 0755 packaging/fprintd-compat/postinst packaging/fprintd-compat/postrm "$compat/DEBIAN/"
(cd "$compat" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$compat/DEBIAN/md5sums"
chmod 0644 "$compat/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$compat" "$compat_out" >/dev/null
echo "$compat_out"
dpkg-deb --info "$compat_out" | sed -n 's/^ \(Package\|Version\|Depends\|Provides\|Conflicts\):/  \1:/p'
