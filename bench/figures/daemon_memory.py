# SPDX-License-Identifier: Apache-2.0
"""Figure 7: the daemons' memory (RSS, PSS, private dirty) idle after start, after figure 1 and
after --auths authentications (`Bench.memory` takes each reading)."""
import subprocess
import time

from common import PRINT_ID


def idle_after_start(bench):
    """Idle after a fresh start and one list request, settled."""
    for side in bench.sides:
        side.restart()
        side.auths = 0
        subprocess.run(side.list_cmd(), env=side.env(), capture_output=True, check=True)
    time.sleep(1)
    bench.memory("idle after start")


def after_authentications(bench):
    """Up to --auths authentications each, then settled."""
    a = bench.args
    for side in bench.sides:
        left = a.auths - side.auths
        while left > 0:
            side.client(min(left, 250), [(side.match, PRINT_ID)])
            left = a.auths - side.auths
    time.sleep(1)
    bench.memory("after %d authentications" % a.auths)
