#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The PAM, terminal and stack tests run programs as test accounts (uids 64200 and up) that load
# the module and the daemon from this checkout. They need every directory from / down to the
# checkout searchable by others; under a 0700 home they failed 21 of 22 cases with nothing saying
# why. This says why first.
set -eu
dir=$(pwd -P)
blocked=""
while :; do
    if [ "$(($(stat -c '%#a' "$dir") & 1))" -eq 0 ]; then blocked="$blocked $dir"; fi
    [ "$dir" = / ] && break
    dir=$(dirname "$dir")
done
if [ -n "$blocked" ]; then
    echo "make test: the tests run programs from this checkout as other users, but these" >&2
    echo "directories are not searchable by others:$blocked" >&2
    echo "Fix: chmod o+x on each of them, or clone into a directory such as /tmp or /srv." >&2
    exit 1
fi
