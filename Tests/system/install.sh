#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make install PREFIX=/usr DESTDIR=… lays out exactly Tests/system/install-tree.txt; the units
# pass systemd-analyze verify and score SAFE in systemd-analyze security (loaded from that tree);
# every man page renders without a warning; a bad configuration gives the promised error;
# make uninstall leaves the tree empty. Uses the debug build (BUILT=.build/debug by default).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILT=${BUILT:-.build/debug}
dest=$(mktemp -d /tmp/la-install-XXXXXX)
scratch=$(mktemp -d /tmp/la-root-XXXXXX)
trap 'rm -rf "$dest" "$scratch"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }

make -s install PREFIX=/usr DESTDIR="$dest" BUILT="$BUILT" >/dev/null
diff -u Tests/system/install-tree.txt <(cd "$dest" && find . -mindepth 1 | sort | sed 's|^\./||') ||
    fail "the installed tree differs from Tests/system/install-tree.txt"
pass "make install lays out the documented tree"

[ "$(stat -c %a "$dest/usr/sbin/localauthd")" = 755 ] || fail "localauthd is not 0755"
grep -qx 'ExecStart=/usr/sbin/localauthd' "$dest/usr/lib/systemd/system/localauthd.service" ||
    fail "ExecStart does not name the installed daemon"
pass "installed unit starts the installed daemon"

# systemd-analyze loads the units from the tree (--root); the targets they name come from the host.
cp -a "$dest/." "$scratch/"
cp -n /lib/systemd/system/*.target /lib/systemd/system/*.slice "$scratch/usr/lib/systemd/system/" 2>/dev/null || true
units=("$scratch/usr/lib/systemd/system/localauthd.socket" "$scratch/usr/lib/systemd/system/localauthd.service")
out=$(MANPATH="$dest/usr/share/man" systemd-analyze verify --root="$scratch" "${units[@]}" 2>&1) ||
    fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify reported: $out"
pass "systemd-analyze verify reports nothing"

# The ssh agent's user units (issue 30), verified as the user manager loads them: from a copy whose
# ExecStart names the installed tree's localauthctl (a user manager's --root is not supported).
mkdir -m 0700 "$scratch/user-runtime" "$scratch/user-units"
sed "s|^ExecStart=/usr/bin/|ExecStart=$dest/usr/bin/|" "$dest/usr/lib/systemd/user/localauth-ssh-agent.service" \
    > "$scratch/user-units/localauth-ssh-agent.service"
cp "$dest/usr/lib/systemd/user/localauth-ssh-agent.socket" "$scratch/user-units/"
out=$(XDG_RUNTIME_DIR="$scratch/user-runtime" MANPATH="$dest/usr/share/man" systemd-analyze verify --user \
    "$scratch/user-units/localauth-ssh-agent.socket" "$scratch/user-units/localauth-ssh-agent.service" 2>&1) ||
    fail "systemd-analyze verify --user failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify --user reported: $out"
grep -qx 'ExecStart=/usr/bin/localauthctl ssh-agent' "$dest/usr/lib/systemd/user/localauth-ssh-agent.service" ||
    fail "the agent's ExecStart does not name the installed localauthctl"
pass "the ssh agent's user units pass systemd-analyze verify --user"
score=$(MANPATH="$dest/usr/share/man" systemd-analyze security --root="$scratch" --offline=yes "${units[1]}" 2>&1 |
    sed -n 's/.*Overall exposure level for localauthd.service: \([0-9.]*\) .*/\1/p')
[ -n "$score" ] || fail "systemd-analyze security gave no score"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || fail "exposure $score is above 2.0"
pass "systemd-analyze security exposure $score"

for page in $(cd "$dest" && find usr/share/man -name '*.gz' | sort); do
    warnings=$(MANWIDTH=80 man --warnings -l "$dest/$page" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "$page: $warnings"
    [ "$(MANWIDTH=80 man -l "$dest/$page" 2>/dev/null | wc -l)" -gt 10 ] || fail "$page renders empty"
done
pass "every man page renders with man -l"

for shell in bash zsh fish; do
    case $shell in
    bash) f=usr/share/bash-completion/completions/localauthctl; bash -n "$dest/$f" || fail "$f" ;;
    zsh) f=usr/share/zsh/vendor-completions/_localauthctl ;;
    fish) f=usr/share/fish/vendor_completions.d/localauthctl.fish ;;
    esac
    grep -q enroll "$dest/$f" || fail "$f does not complete enroll"
done
pass "bash, zsh and fish completions name the subcommands"

check_config() { # text, expected output line
    printf '%s\n' "$1" > "$scratch/bad.conf"
    set +e
    got=$("$dest/usr/sbin/localauthd" --check-config --config "$scratch/bad.conf" 2>&1)
    status=$?
    set -e
    [ "$status" = 1 ] || fail "--check-config exit $status for '$1'"
    [ "$got" = "$scratch/bad.conf:$2" ] || fail "for '$1': expected '$scratch/bad.conf:$2', got '$got'"
    set +e
    "$dest/usr/sbin/localauthd" --config "$scratch/bad.conf" --socket "$scratch/s" --state-dir "$scratch/st" \
        >/dev/null 2>"$scratch/err"
    status=$?
    set -e
    [ "$status" = 2 ] || fail "the daemon started (exit $status) with '$1'"
    grep -qF "refusing to start: $scratch/bad.conf:$2" "$scratch/err" || fail "no refusal for '$1': $(cat "$scratch/err")"
}
check_config $'# x\nidle-exit-seconds = soon' "2: idle-exit-seconds: 'soon' is not a whole number from 0 to 86400"
check_config 'log-level = loud' "1: log-level: 'loud' is not one of trace, debug, info, notice, warning, error, critical"
check_config 'finger-attempts = 0' "1: finger-attempts: '0' is not a whole number from 1 to 20"
"$dest/usr/sbin/localauthd" --check-config --config "$dest/usr/share/doc/localauth/localauthd.conf" >/dev/null ||
    fail "the installed example configuration is not valid"
pass "bad configuration values give the promised errors; the example is valid"

make -s uninstall PREFIX=/usr DESTDIR="$dest" >/dev/null
left=$(cd "$dest" && find . -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
pass "make uninstall removes every file"
