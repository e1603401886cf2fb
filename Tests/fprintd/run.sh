#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fprintd door's tests (Tests/fprintd/test_door.py) in a private mount and pid namespace, as
# root: the test users, the system bus and polkitd they set up exist only there, and every process
# they start ends with the namespace.   Tests/fprintd/run.sh BIN_DIR [unittest arguments…]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:?usage: $0 BIN_DIR [unittest args]}" && pwd)
shift
if [ "$(id -u)" -ne 0 ]; then
    echo "Tests/fprintd/run.sh: needs root (private namespaces, test users, polkitd)" >&2
    exit 1
fi
exec unshare --mount --pid --fork --mount-proc --propagation private \
    /usr/bin/python3 "$here/test_door.py" "$bin" "$@"
