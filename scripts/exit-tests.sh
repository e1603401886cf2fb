#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Usage: exit-tests.sh SUITES SWIFT test --skip-build
# Runs SUITES (a --filter pattern, e.g. LifecycleTests|EvaluationRunTests), the exit tests: each
# scenario in a child process of its own, since libfprint allows one context per process and an
# unplugged virtual reader never returns to it. Swift Testing keeps a crashed child's stderr to
# itself, so the Swift runtime's backtracer writes each crash to a file, shown after a failed run.
# (The "SIGILL exit-test" deaths seen before were a real crash: work posted to the GLib thread ran
# nested inside fp_context_enumerate; see GLibThread.exclusively.)
set -uo pipefail
suites=$1
shift
crashes=$(mktemp -d)
trap 'rm -rf "$crashes"' EXIT
SWIFT_BACKTRACE="enable=yes,interactive=no,output-to=$crashes/backtrace" "$@" --filter "$suites"
rc=$?
if [ $rc -ne 0 ] && [ -s "$crashes/backtrace" ]; then
    echo "exit-tests: the last crashed child's backtrace:"
    cat "$crashes/backtrace"
fi
exit $rc
