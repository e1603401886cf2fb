#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs fprintd's tests/fprintd.py (from the fprintd source tree given as argv[1]) under unittest with
a time limit per test: several of its tests wait for a D-Bus signal without limit, so a daemon that
never sends it would stop the whole run. A GLib timeout wakes the default main context every 0.2 s so
that the per-test SIGALRM can end a wait inside GLib. Writes a JSON summary to argv[2].
The suite's logind answers GetSessionByPID with an active greeter session (UPSTREAM_NO_SESSION=1:
not, as the suite has it).
UPSTREAM_STORAGE_VIA_LIST=1: the suite's storage checks ask ListEnrolledFingers instead of looking
for fprintd's files."""
import json
import os
import signal
import sys
import time
import unittest

source, summary_path = sys.argv[1], sys.argv[2]
limit = int(os.environ.get("UPSTREAM_TEST_SECONDS", "120"))
sys.path.insert(0, os.path.join(source, "tests"))
sys.argv = [os.path.join(source, "tests", "fprintd.py")] + sys.argv[3:]

import fprintd  # noqa: E402  (the upstream suite, from the fetched source tree)
from gi.repository import GLib  # noqa: E402

GLib.timeout_add(200, lambda: True)

if not os.environ.get("UPSTREAM_NO_SESSION"):
    # localauthd asks logind where each caller sits (docs/security.md, "Who may be asked for a
    # finger"); the suite's python-dbusmock logind has no GetSessionByPID, so its callers (root)
    # would be in no session and refused every finger. As this project's own harnesses do, every
    # caller is put in an active local greeter session on seat0, where root may ask for any account.
    import dbus  # noqa: E402

    _spawn = fprintd.FPrintdTest.spawn_server_template.__func__

    def _spawn_with_session(cls, template, parameters=None, stdout=None, system_bus=None):
        server, obj = _spawn(cls, template, parameters, stdout, system_bus)
        if template == "logind":
            path = obj.AddSession("c1", "seat0", dbus.UInt32(0), "root", True)
            session = cls.get_dbus(system_bus=True).get_object("org.freedesktop.login1", path)
            session.Set("org.freedesktop.login1.Session", "Class", "greeter", dbus_interface=dbus.PROPERTIES_IFACE)
            obj.AddMethod("org.freedesktop.login1.Manager", "GetSessionByPID", "u", "o", "ret = %r" % str(path))
        return server, obj

    fprintd.FPrintdTest.spawn_server_template = classmethod(_spawn_with_session)

if os.environ.get("UPSTREAM_STORAGE_VIA_LIST"):
    # fprintd's suite checks a print is stored by looking for fprintd's own file
    # (STATE_DIRECTORY/<user>/<driver>/<device>/<finger>); localauthd keeps its own store. With this
    # set, the same fact is checked through the API (ListEnrolledFingers), so that the rest of those
    # tests runs too.
    def stored(self, user, finger):
        try:
            return self.get_finger_name(finger) in self.device.ListEnrolledFingers("(s)", user)
        except GLib.GError as e:
            if "NoEnrolledPrints" not in e.message:
                raise
            return False

    fprintd.FPrintdTest.assertFingerInStorage = lambda self, user, finger: self.assertTrue(stored(self, user, finger))
    fprintd.FPrintdTest.assertFingerNotInStorage = lambda self, user, finger: self.assertFalse(
        stored(self, user, finger))


class TestTimeout(Exception):
    pass


def on_alarm(_signum, _frame):
    raise TestTimeout("no result after %d s" % limit)


signal.signal(signal.SIGALRM, on_alarm)


class Result(unittest.TextTestResult):
    outcomes = {}

    def startTest(self, test):
        self._started = time.monotonic()
        signal.alarm(limit)
        super().startTest(test)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def _record(self, test, outcome, detail=""):
        Result.outcomes[test.id()] = {"outcome": outcome, "seconds": round(time.monotonic() - self._started, 2),
                                      "detail": detail[-4000:]}

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "FAIL", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "ERROR", self.errors[-1][1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)


started = time.monotonic()
loader = unittest.TestLoader()
suite = loader.loadTestsFromNames(sys.argv[1:], fprintd) if len(sys.argv) > 1 else loader.loadTestsFromModule(fprintd)
runner = unittest.TextTestRunner(verbosity=2, resultclass=Result)
result = runner.run(suite)
with open(summary_path, "w") as f:
    json.dump({"seconds": round(time.monotonic() - started), "tests": Result.outcomes}, f, indent=1)
sys.exit(0 if result.wasSuccessful() else 1)
