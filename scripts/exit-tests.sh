#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Usage: exit-tests.sh SUITES SWIFT test --skip-build
# Runs SUITES (a --filter pattern, e.g. LifecycleTests|EvaluationRunTests), the exit tests: each
# scenario in a child process of its own, since libfprint allows one context per process and an
# unplugged virtual reader never returns to it. Under load, the child of a Swift Testing 6.3 exit
# test now and then dies of SIGILL with nothing on its stderr (seen in about 1 of 10 loaded runs,
# on code from before these tests too). A run whose only failures are such deaths is repeated
# once; any other failure, or a second such run, fails.
set -uo pipefail
suites=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2; do
    "$@" --filter "$suites" > "$log" 2>&1
    rc=$?
    cat "$log"
    [ $rc -eq 0 ] && exit 0
    issues=$(grep 'recorded an issue' "$log")
    if [ $attempt -eq 1 ] && [ -n "$issues" ] && ! grep -v 'signal(SIGILL' <<< "$issues" | grep -q .; then
        echo "exit-tests: only SIGILL deaths of exit-test children; running $suites once more"
        continue
    fi
    exit $rc
done
exit 1
