#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs LifecycleTests, the exit tests (each scenario in a child process of its own, since an
# unplugged virtual reader never returns to a process's one libfprint context). Under load, the
# child of a Swift Testing 6.3 exit test now and then dies of SIGILL with nothing on its stderr
# (seen in about 1 of 10 loaded runs, on code from before these tests too). A run whose only
# failures are such deaths is repeated once; any other failure, or a second such run, fails.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
    "$@" --filter LifecycleTests > "$log" 2>&1
    rc=$?
    cat "$log"
    [ $rc -eq 0 ] && exit 0
    issues=$(grep 'recorded an issue' "$log")
    if [ $attempt -eq 1 ] && [ -n "$issues" ] && ! grep -v 'signal(SIGILL' <<< "$issues" | grep -q .; then
        echo "exit-tests: only SIGILL deaths of exit-test children; running LifecycleTests once more"
        continue
    fi
    exit $rc
done
exit 1
