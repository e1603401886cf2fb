#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs fprintd's own test suite (tests/fprintd.py of an fprintd source tree, e.g. 1.94.2, fetched
# separately: it is not part of this repository) against `localauthd --fprintd-compat`, from outside.
#
#   tests/fprintd/upstream-suite.sh FPRINTD_SOURCE [LOCALAUTHD] [unittest arguments…]
#
# The suite finds its daemon as $FPRINT_BUILD_DIR/fprintd and the CLI as $FPRINT_BUILD_DIR/../utils:
# a scratch directory holds a wrapper named fprintd that starts localauthd with --fprintd-compat
# (the suite's -t, "no idle exit", is what localauthd does anyway) and links to Debian's fprintd-*
# tools. The suite sets STATE_DIRECTORY and RUNTIME_DIRECTORY, which localauthd honours. Prints the
# suite's verbose output, then a summary: counts and every test that did not pass.
set -euo pipefail
source_dir=$(cd "${1:?usage: $0 FPRINTD_SOURCE [LOCALAUTHD] [unittest args]}" && pwd)
shift
daemon=${1:-$(cd "$(dirname "$0")/../.." && pwd)/.build/debug/localauthd}
[ $# -gt 0 ] && shift
[ -x "$daemon" ] || { echo "no localauthd at $daemon" >&2; exit 2; }
[ -f "$source_dir/tests/fprintd.py" ] || { echo "no tests/fprintd.py in $source_dir" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/src" "$scratch/utils"
cat > "$scratch/src/fprintd" <<WRAPPER
#!/bin/sh
# fprintd's test suite starts its daemon as "fprintd -t".
exec "$daemon" --fprintd-compat
WRAPPER
chmod 0755 "$scratch/src/fprintd"
for tool in enroll verify list delete; do ln -s "/usr/bin/fprintd-$tool" "$scratch/utils/fprintd-$tool"; done

log="$scratch/suite.log"
started=$(date +%s)
set +e
(cd "$source_dir/tests" && FPRINT_BUILD_DIR="$scratch/src" TOPSRCDIR="$source_dir" G_DEBUG=fatal-criticals \
    G_MESSAGES_DEBUG=all /usr/bin/python3 fprintd.py "$@") 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
elapsed=$(($(date +%s) - started))

echo
echo "=== fprintd's suite against $daemon: $(grep -cE ' \.\.\. ok$' "$log") passed," \
    "$(grep -cE ' \.\.\. (FAIL|ERROR)$' "$log") failed, $(grep -cE ' \.\.\. skipped' "$log") skipped in ${elapsed} s" \
    "(exit $status)"
grep -E ' \.\.\. (FAIL|ERROR)$' "$log" | sed 's/^/  /' || true
exit "$status"
