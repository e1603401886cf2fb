#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fprintd door's tests (Tests/fprintd/test_door.py) in a private mount and pid namespace, as
# root: the test users, the system bus and polkitd they set up exist only there, and every process
# they start ends with the namespace.   Tests/fprintd/run.sh BIN_DIR [unittest arguments…]
set -euo pipefail
needs="private namespaces, test users, polkitd"
. "$(dirname "$0")/script-start.sh"
exec unshare --mount --pid --fork --mount-proc --propagation private \
    /usr/bin/python3 "$here/test_door.py" "$bin" "$@"
