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


class LogindMock:
    """A running logind_mock.py, every process in its greeter session until told otherwise.
    `address` is its bus (for DBUS_SYSTEM_BUS_ADDRESS); with `on_bus` it joins that bus instead of
    starting its own. `start` is how the process is started (a harness's own Popen that tracks it)."""

    def __init__(self, directory, on_bus=None, env=None, start=subprocess.Popen):
        self.directory = directory
        command = ["/usr/bin/python3", MOCK, directory, "--greeter"] + (["--on-bus", on_bus] if on_bus else [])
        self.process = start(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
        line = self.process.stdout.readline().strip()
        if not line.startswith("ready "):
            self.process.kill()
            raise RuntimeError("logind mock: %r" % line)
        self.address = line[len("ready "):]

    def say(self, command):
        """One of logind_mock.py's commands (e.g. `session none`); returns its answer line."""
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def stop(self, timeout=10):
        """Closes its input, which stops it (and its own bus), and waits."""
        self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.process.stdout.close()


_mock = None


def address():
    """The mock system bus's address, for the daemon's DBUS_SYSTEM_BUS_ADDRESS."""
    global _mock
    if _mock is None:
        directory = tempfile.mkdtemp(prefix="la-seat-")
        _mock = LogindMock(directory)

        def stop():
            _mock.stop()
            subprocess.run(["rm", "-rf", directory])

        atexit.register(stop)
    return _mock.address


def say(command):
    """One line to the mock (logind_mock.py's commands, e.g. `session none`), once it answers."""
    address()
    answer = _mock.say(command)
    if answer != "ok":
        raise RuntimeError("logind mock, %r: %r" % (command, answer))


def env(base=None):
    """`base` (default: this process's environment) with the mock bus named."""
    return dict(os.environ if base is None else base, DBUS_SYSTEM_BUS_ADDRESS=address())
