#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make test-deb: `dpkg -i` of the package on this machine, then `dpkg -r` and `dpkg -P`. Every file
# lands and goes; /etc/pam.d is not changed (the profile is registered, Default: no); the installed
# binaries run without /opt/swift and serve. Changes the machine while it runs, so it is not part
# of `make test`; it refuses to touch an installed localauth.
set -uo pipefail
deb=${1:?usage: deb.sh PACKAGE.deb}
[ "$(id -u)" -eq 0 ] || { echo "test-deb: dpkg -i needs root" >&2; exit 1; }
if dpkg-query -W -f='${Status}' localauth 2>/dev/null | grep -q 'installed\|config-files'; then
    echo "test-deb: a localauth package is already on this machine; not touching it" >&2
    exit 1
fi
failed=0
ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failed=1; }
pam_hash() { cat /etc/pam.d/* 2>/dev/null | sha256sum; }
work=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
daemon=

before=$(pam_hash)
if dpkg -i "$deb" > "$work/install.log" 2>&1; then ok "dpkg -i installs cleanly"; else
    fail "dpkg -i: $(cat "$work/install.log")"; fi
dpkg-query -L localauth | while read -r path; do [ -d "$path" ] || echo "$path"; done > "$work/files"
missing=$(while read -r f; do [ -e "$f" ] || echo "$f"; done < "$work/files")
[ -z "$missing" ] && ok "all $(wc -l < "$work/files") packaged files are in place" || fail "missing: $missing"
grep -qx localauth /var/lib/pam/seen && ok "pam-auth-update registered the profile" \
    || fail "the profile is not in /var/lib/pam/seen"
[ "$(pam_hash)" = "$before" ] && ok "/etc/pam.d unchanged (the profile is off until selected)" \
    || fail "/etc/pam.d changed on install"
if ldd /usr/sbin/localauthd /usr/bin/localauthctl | grep -q '/opt/swift\|libswift'; then
    fail "the installed binaries need the Swift toolchain's libraries"
else
    ok "the installed binaries link no Swift library dynamically"
fi
env -i PATH=/usr/bin:/bin /usr/sbin/localauthd --check-config > "$work/check.log" 2>&1 \
    && ok "localauthd --check-config runs" || fail "localauthd --check-config: $(cat "$work/check.log")"
env -i PATH=/usr/bin:/bin /usr/sbin/localauthd --socket "$work/socket" --state-dir "$work/state" \
    --virtual-reader 2> "$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/socket" ] && break; sleep 0.05; done
if env -i PATH=/usr/bin:/bin LOCALAUTHD_SOCKET="$work/socket" localauthctl devices > "$work/devices.log" 2>&1 \
    && grep -q "Virtual device" "$work/devices.log"; then
    ok "the installed daemon serves the installed localauthctl"
else
    fail "localauthctl devices: $(cat "$work/devices.log" "$work/daemon.log")"
fi
kill "$daemon"; wait "$daemon" 2>/dev/null; daemon=

if dpkg -r localauth > "$work/remove.log" 2>&1; then ok "dpkg -r removes cleanly"; else
    fail "dpkg -r: $(cat "$work/remove.log")"; fi
left=$(while read -r f; do [ -e "$f" ] && echo "$f"; done < "$work/files")
[ -z "$left" ] && ok "no packaged file is left" || fail "left behind: $left"
grep -qx localauth /var/lib/pam/seen 2>/dev/null && fail "the profile is still registered" \
    || ok "pam-auth-update --remove unregistered the profile"
[ "$(pam_hash)" = "$before" ] && ok "/etc/pam.d unchanged after removal" || fail "/etc/pam.d changed on removal"
if dpkg -P localauth > "$work/purge.log" 2>&1 && ! dpkg-query -W -f='${Status}' localauth 2>/dev/null \
    | grep -q 'installed\|config-files'; then
    ok "dpkg -P purges"
else
    fail "dpkg -P: $(cat "$work/purge.log")"
fi
# localauth-fprintd-compat: its fields and files. It conflicts with fprintd, which this machine
# needs for other tests, so it is installed here only where fprintd is not, and says so where it
# is; make test-boot installs and removes both packages on a booted system every time.
compat=$(dirname "$deb")/localauth-fprintd-compat_$(dpkg-deb -f "$deb" Version)_all.deb
if [ -f "$compat" ]; then
    for field in "Provides: fprintd" "Conflicts: fprintd" "Replaces: fprintd" \
        "Depends: localauth (= $(dpkg-deb -f "$deb" Version))"; do
        dpkg-deb -f "$compat" | grep -qF "$field" && ok "compat package: $field" || fail "compat package lacks $field"
    done
    contents=$(dpkg-deb -c "$compat")
    for f in usr/share/dbus-1/system.d/net.reactivated.Fprint.conf \
        usr/share/dbus-1/system-services/net.reactivated.Fprint.service \
        usr/share/polkit-1/actions/net.reactivated.fprint.device.policy \
        usr/lib/localauthd.conf.d/50-fprintd-compat.conf; do
        grep -q " ./$f\$" <<< "$contents" && ok "compat package has /$f" || fail "compat package lacks /$f"
    done
    if dpkg-query -W -f='${Status}' fprintd 2>/dev/null | grep -q 'install ok installed'; then
        # Not a pass: this machine's fprintd (make test needs it) conflicts with the package. The
        # booted-system tier installs and removes both packages with apt (make test-boot).
        echo "# compat package NOT installed on this machine: fprintd is installed here and they conflict;"
        echo "# make test-boot installs both packages on a booted Debian 12 and removes them (journeys d and e)"
    elif dpkg -i "$deb" "$compat" > "$work/compat.log" 2>&1; then
        ok "dpkg -i localauth localauth-fprintd-compat"
        dpkg -r localauth-fprintd-compat localauth > "$work/compat.log" 2>&1 && dpkg -P localauth >/dev/null 2>&1 \
            && ok "both removed" || fail "removal: $(cat "$work/compat.log")"
    else
        fail "dpkg -i of both: $(cat "$work/compat.log")"
    fi
else
    fail "no $compat next to $deb"
fi
exit $failed
