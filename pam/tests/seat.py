# SPDX-License-Identifier: Apache-2.0
"""Where the harnesses' PAM callers sit: python-dbusmock's logind (Tests/system/logind_mock.py
--greeter), one per test script, every process placed in an active local greeter session on seat0.

pamtester and pypamtest run as root (real uid 0) and ask for accounts that are not root's, as a
display manager's worker does at its greeter: the one place where root may ask for whoever types
their name (docs/security.md, "Who may be asked for a finger"). Without logind, a root caller with
no session and no virtual terminal in front is refused biometrics.
"""
import atexit
import os
import subprocess
import tempfile

MOCK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "system", "logind_mock.py")
_address = None
_mock = None


def address():
    """The mock system bus's address, for the daemon's DBUS_SYSTEM_BUS_ADDRESS."""
    global _address, _mock
    if _address is None:
        directory = tempfile.mkdtemp(prefix="la-seat-")
        mock = subprocess.Popen(["/usr/bin/python3", MOCK, directory, "--greeter"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = mock.stdout.readline().strip()
        if not line.startswith("ready "):
            mock.kill()
            raise RuntimeError("logind mock: %r" % line)

        def stop():
            mock.stdin.close()  # the mock stops its bus when its input closes
            try:
                mock.wait(timeout=10)
            except subprocess.TimeoutExpired:
                mock.kill()
            subprocess.run(["rm", "-rf", directory])

        atexit.register(stop)
        _mock = mock
        _address = line[len("ready "):]
    return _address


def say(command):
    """One line to the mock (logind_mock.py's commands, e.g. `session none`), once it answers."""
    address()
    _mock.stdin.write(command + "\n")
    _mock.stdin.flush()
    answer = _mock.stdout.readline().strip()
    if answer != "ok":
        raise RuntimeError("logind mock, %r: %r" % (command, answer))


def env(base=None):
    """`base` (default: this process's environment) with the mock bus named."""
    return dict(os.environ if base is None else base, DBUS_SYSTEM_BUS_ADDRESS=address())
