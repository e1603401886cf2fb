# SPDX-License-Identifier: Apache-2.0
"""Ending the processes a test started: shared by the PAM tests' sandbox and the fprintd door's
harness (Tests/fprintd/harness.py)."""

import subprocess


def stop_all(procs, timeout=5):
    """Terminates each of PROCS still running, the last started first; one that has not ended
    within TIMEOUT seconds is killed."""
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
