# SPDX-License-Identifier: Apache-2.0
# Sourced by the door's test scripts (run.sh, host-passwd-churn.sh) after they set `needs` (what
# they need root for): `here`, this folder; `bin`, the binaries' folder named by the first
# argument, which is shifted off; and root, or the script stops saying why.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(cd "${1:?usage: $0 BIN_DIR [unittest args]}" && pwd)
shift
if [ "$(id -u)" -ne 0 ]; then
    echo "$0: needs root ($needs)" >&2
    exit 1
fi
