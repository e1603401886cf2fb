#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a PAM test with a /tmp of its own (a tmpfs in a private mount namespace, gone with it).
# pam_wrapper keeps each client's copy of the service files in /tmp/pam.X, one of 62 names picked
# from the pid, checked and created without a lock: two runs at once (other clones' tests on the
# same machine) can pick the same directory, and the first to exit deletes it under the other.
# A working directory under /tmp (a checkout cloned there, as CI may) is bound back at its own
# path: the old /tmp is still reachable as the current directory once the tmpfs covers it
# (--no-canonicalize: mount would otherwise look the path up in the new tmpfs).
# Without root (no namespace), the test runs as it is.
if [ "$(id -u)" != 0 ] || [ -n "$LA_PRIVATE_TMP" ]; then
    exec "$@"
fi
exec unshare --mount --propagation private -- env LA_PRIVATE_TMP=1 LA_KEEP="$PWD" sh -c '
    cd /tmp && mount -t tmpfs -o mode=1777,size=512m tmpfs /tmp || exit 1
    case "$LA_KEEP" in
    /tmp/*)
        rel=${LA_KEEP#/tmp/}
        mkdir -p "/tmp/$rel" && mount --no-canonicalize --bind "./$rel" "/tmp/$rel" || exit 1
        ;;
    esac
    cd "$LA_KEEP" && exec "$@"' private-tmp "$@"
