#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole flow on a temporary socket and state directory with libfprint's virtual reader:
# enrol a finger, authenticate through the real PAM stack, refuse a wrong finger.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.build/debug
MODULE=$PWD/pam/build/pam_localauth.so
USER_NAME=${SUDO_USER:-$(id -un)}
dir=$(mktemp -d /tmp/localauth-demo.XXXXXX)
chmod 755 "$dir"
export LOCALAUTHD_SOCKET=$dir/socket
bold=""; plain=""
if [ -t 1 ]; then bold=$'\033[1m'; plain=$'\033[0m'; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '$ %s\n' "$*"; "$@"; }

daemon=""
cleanup() {
    if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then kill -TERM "$daemon"; wait "$daemon" || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT

# A finger only answers the person at the reader who asked (docs/security.md): root's own process
# outside a login session is refused it. Run by sudo, pamtester asks as the person who ran sudo,
# for their own account; run by root itself (a container, CI, a root shell without logind), the
# demo stands at a simulated greeter (python-dbusmock's logind), where root may ask for anyone.
as_person=()
if [ "$(id -u)" -eq 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
    as_person=(setpriv --reuid="$SUDO_USER" --regid="$SUDO_USER" --init-groups --)
elif [ "$(id -u)" -eq 0 ] && { [ ! -S /run/dbus/system_bus_socket ] ||
    ! busctl --system status org.freedesktop.login1 >/dev/null 2>&1; }; then
    step "No logind here: the PAM steps run at a simulated greeter (Tests/system/logind_mock.py --greeter)"
    coproc MOCK { /usr/bin/python3 Tests/system/logind_mock.py "$dir" --greeter; }
    read -r ready address <&"${MOCK[0]}"
    [ "$ready" = ready ] || { echo "the logind mock did not start" >&2; exit 1; }
    export DBUS_SYSTEM_BUS_ADDRESS=$address
fi

step "Start localauthd with libfprint's virtual reader on $dir/socket"
"$BIN/localauthd" --socket "$dir/socket" --state-dir "$dir/state" --virtual-reader 2>"$dir/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$dir/socket" ] && break; sleep 0.05; done
[ -S "$dir/socket" ] || { cat "$dir/daemon.log"; echo "localauthd did not start" >&2; exit 1; }
run "$BIN/localauthctl" devices

step "Enrol $USER_NAME's right index finger (five touches of the simulated finger 'demo-finger')"
"$BIN/localauthctl" enroll --user "$USER_NAME" --finger right-index-finger &
enrol=$!
for i in 1 2 3 4 5; do "$BIN/localauthctl" simulate touch demo-finger --quiet; done
wait $enrol
run "$BIN/localauthctl" list --user "$USER_NAME"

if [ "$(id -u)" -ne 0 ]; then
    step "Skipping the PAM steps: pam_localauth.so believes only a daemon run by root (run make demo as root)"
    exit 0
fi

mkdir -p "$dir/pam.d"
: >"$dir/pam.d/other"
cat >"$dir/pam.d/localauth-demo" <<PAM
auth     required  $MODULE socket=$dir/socket tries=1 timeout=10
account  required  pam_permit.so
PAM
pam() { LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$dir/pam.d" "${as_person[@]}" pamtester -v localauth-demo "$USER_NAME" authenticate; }

step "pam_authenticate through pam_localauth.so (pamtester under pam_wrapper); the right finger touches"
(sleep 0.3; "$BIN/localauthctl" simulate touch demo-finger --quiet) &
touch=$!
if pam; then echo "=> PAM_SUCCESS"; else echo "=> unexpected failure" >&2; exit 1; fi
wait $touch

step "The same with a wrong finger ('stranger'): refused"
(sleep 0.3; "$BIN/localauthctl" simulate touch stranger --quiet) &
touch=$!
if pam; then echo "=> unexpected success" >&2; exit 1; else echo "=> refused, as it should be"; fi
wait $touch

step "The audit trail (localauthd's log)"
grep 'audit op=evaluate\|audit op=enroll' "$dir/daemon.log" || true

step "Stop localauthd (SIGTERM)"
kill -TERM "$daemon"; wait "$daemon"; daemon=""
echo "stopped cleanly"
