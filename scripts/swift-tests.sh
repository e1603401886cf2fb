#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Usage: swift-tests.sh LOG SWIFT test --skip-build [ARGUMENTS…]
# Runs the Swift tests, their output shown and appended to LOG. After a failed run, it repeats
# which tests failed and why at the very end, where a log cut to its last lines (CI's) shows it:
# a run of 134 tests prints the failures among hundreds of lines.
set -uo pipefail
log=$1
shift
before=$(cat "$log" 2>/dev/null | wc -l)
"$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
    echo "swift-tests: failed (exit $rc); the issues, then the tests that failed:"
    tail -n +"$((before + 1))" "$log" | grep -a -E '^✘ Test .* recorded an issue' | tail -n 20 | cut -c1-400
    tail -n +"$((before + 1))" "$log" | grep -a -E '^✘ (Test|Suite) .* failed after' | tail -n 12 | cut -c1-200
fi
exit "$rc"
