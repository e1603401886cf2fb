#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The door's tests while the host's /etc/passwd, /etc/group and /etc/shadow are replaced under them
# (issue 26): a harness that bind-mounted copies of those files over the real ones lost its test
# users to any `useradd` on the host (the kernel detaches a mount whose file is replaced), and 13
# tests failed with "Failed to get information about user UID 64201". Runs Tests/fprintd/run.sh with
# the given unittest arguments in a mount namespace whose /etc is a copy, standing for the host,
# while `useradd` and `userdel` replace that copy's files every 0.1 s. The real host's files are
# never touched (`useradd -l` writes no lastlog or faillog record either).
#   Tests/fprintd/host-passwd-churn.sh BIN_DIR [unittest arguments…]
set -euo pipefail
needs="private namespaces, useradd"
. "$(dirname "$0")/script-start.sh"
exec unshare --mount --propagation private /usr/bin/env HERE="$here" BIN="$bin" bash -c '
    set -u
    host=$(mktemp -d /tmp/la-host-etc.XXXXXX)
    cp -a /etc/. "$host"
    mount --bind "$host" /etc
    churn() {
        local n=0
        while :; do
            useradd -M -l -s /usr/sbin/nologin la-churn >/dev/null 2>&1 && n=$((n + 1))
            userdel la-churn >/dev/null 2>&1
            echo "$n" > "$host.count"
            sleep 0.1
        done
    }
    churn &
    churner=$!
    "$HERE/run.sh" "$BIN" "$@"
    rc=$?
    kill "$churner"
    wait "$churner" 2>/dev/null
    echo "host-passwd-churn: useradd replaced the host'"'"'s /etc/passwd $(cat "$host.count") times during the run" >&2
    umount /etc
    rm -rf "$host" "$host.count"
    exit $rc
' host-passwd-churn "$@"
