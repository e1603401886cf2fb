#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs fprintd's own test suite (tests/fprintd.py of an fprintd source tree, e.g. 1.94.2, fetched
# separately: it is not part of this repository) against `localauthd --fprintd-compat`, from outside.
#
#   Tests/fprintd/upstream-suite.sh FPRINTD_SOURCE [LOCALAUTHD] [unittest arguments…]
#
# The suite finds its daemon as $FPRINT_BUILD_DIR/fprintd and the CLI as $FPRINT_BUILD_DIR/../utils:
# a scratch directory holds a wrapper named fprintd that starts localauthd with --fprintd-compat
# (the suite's -t, "no idle exit", is what localauthd does anyway) and links to Debian's fprintd-*
# tools. The suite sets STATE_DIRECTORY and RUNTIME_DIRECTORY, which localauthd honours. Each test
# gets at most UPSTREAM_TEST_SECONDS (120) (Tests/fprintd/upstream_driver.py). Prints a summary:
# counts and every test that did not pass, with the last line of its traceback; UPSTREAM_SUMMARY=FILE
# keeps the JSON of every test's outcome, UPSTREAM_KEEP=1 the full output; UPSTREAM_STORAGE_VIA_LIST=1
# checks "is the print stored" through ListEnrolledFingers instead of fprintd's files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "${1:?usage: $0 FPRINTD_SOURCE [LOCALAUTHD] [unittest args]}" && pwd)
shift
daemon=${1:-$(cd "$(dirname "$0")/../.." && pwd)/.build/debug/localauthd}
[ $# -gt 0 ] && shift
[ -x "$daemon" ] || { echo "no localauthd at $daemon" >&2; exit 2; }
[ -f "$source_dir/tests/fprintd.py" ] || { echo "no tests/fprintd.py in $source_dir" >&2; exit 2; }

scratch=$(mktemp -d)
# The suite's own helpers (its private bus, dbusmock's polkitd) may outlive a test that timed out:
# at the end, every process that carries this run's FPRINT_BUILD_DIR goes, and only those.
cleanup() {
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}; pid=${pid%/environ}
        [ "$pid" = "$$" ] && continue
        { tr '\0' '\n' < "$environ"; } 2>/dev/null | grep -qx "FPRINT_BUILD_DIR=$scratch/src" && kill "$pid" 2>/dev/null
    done
    rm -rf "$scratch"
}
trap cleanup EXIT
mkdir "$scratch/src" "$scratch/utils"
# A copy, so that rebuilding while the suite runs changes nothing.
cp "$daemon" "$scratch/localauthd"
# UPSTREAM_LOG_LEVEL=debug: the daemon's own debug records in the output too.
printf 'log-level = %s\n' "${UPSTREAM_LOG_LEVEL:-info}" > "$scratch/localauthd.conf"
cat > "$scratch/src/fprintd" <<WRAPPER
#!/bin/sh
# fprintd's test suite starts its daemon as "fprintd -t".
exec "$scratch/localauthd" --fprintd-compat --config "$scratch/localauthd.conf"
WRAPPER
chmod 0755 "$scratch/src/fprintd"
for tool in enroll verify list delete; do ln -s "/usr/bin/fprintd-$tool" "$scratch/utils/fprintd-$tool"; done

log="$scratch/suite.log"
summary=${UPSTREAM_SUMMARY:-$scratch/summary.json}
set +e
(cd "$source_dir/tests" && FPRINT_BUILD_DIR="$scratch/src" TOPSRCDIR="$source_dir" G_DEBUG=fatal-criticals \
    G_MESSAGES_DEBUG=all /usr/bin/python3 "$here/upstream_driver.py" "$source_dir" "$summary" "$@") \
    >"$log" 2>&1
status=$?
set -e
/usr/bin/python3 - "$summary" <<'SUMMARY'
import json, sys
data = json.load(open(sys.argv[1]))
tests = data["tests"]
counts = {}
for name, t in tests.items():
    counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
print("fprintd's suite: %d tests, %d passed, %d failed, %d errors, %d skipped in %d s" % (
    len(tests), counts.get("ok", 0), counts.get("FAIL", 0), counts.get("ERROR", 0), counts.get("skipped", 0),
    data["seconds"]))
for name, t in sorted(tests.items()):
    if t["outcome"] != "ok":
        last = [l for l in t["detail"].strip().splitlines() if l.strip()][-1:] or [""]
        print("  %-7s %s: %s" % (t["outcome"], name.replace("fprintd.", ""), last[0][:160]))
SUMMARY
echo "(full output: $log; kept only with UPSTREAM_KEEP=1)"
[ -n "${UPSTREAM_KEEP:-}" ] && cp "$log" "${UPSTREAM_KEEP_TO:-/tmp}/fprintd-suite.log"
exit "$status"
