#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A private system bus with python-dbusmock's logind template, driven line by line on stdin.

Usage: logind_mock.py DIRECTORY. Prints `ready ADDRESS` once the mock owns org.freedesktop.login1
(give ADDRESS to the daemon as DBUS_SYSTEM_BUS_ADDRESS), then answers each command with one line:

  lid closed|open          LidClosed on the Manager
  session local|remote     GetSessionByPID answers session c1 for every pid; its Remote property
  session none             GetSessionByPID fails with NoSessionForPID, as for a pid outside sessions
  sleep | wake             emit PrepareForSleep(true | false)
  inhibitors               `inhibitors WHO:WHAT:MODE …` (ListInhibitors)
  quit

The template has no GetSessionByPID or LidClosed; both are added here, as logind has them.
"""
import os
import subprocess
import sys
import time

import dbus
import dbusmock

MANAGER = "org.freedesktop.login1.Manager"
SESSION = "org.freedesktop.login1.Session"
PATH = "/org/freedesktop/login1"
SESSION_PATH = PATH + "/session/c1"

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
"""

NO_SESSION = (
    "raise dbus.exceptions.DBusException('no session for pid %d' % args[0], "
    "name='org.freedesktop.login1.NoSessionForPID')"
)


def main():
    directory = sys.argv[1]
    config = os.path.join(directory, "bus.conf")
    socket = os.path.join(directory, "system_bus_socket")
    with open(config, "w") as f:
        f.write(BUS_CONFIG.format(socket=socket))
    bus_daemon = subprocess.Popen(["dbus-daemon", "--config-file", config, "--nofork", "--print-address=1"],
                                  stdout=subprocess.PIPE, text=True)
    address = bus_daemon.stdout.readline().strip()
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
    mock_server = subprocess.Popen([sys.executable, "-m", "dbusmock", "--system", "--template", "logind"],
                                   env=env, stdout=subprocess.DEVNULL)
    try:
        bus = dbus.bus.BusConnection(address)
        deadline = time.monotonic() + 20
        while not bus.name_has_owner("org.freedesktop.login1"):
            if time.monotonic() > deadline or mock_server.poll() is not None:
                print("failed: dbusmock did not take org.freedesktop.login1", flush=True)
                return 1
            time.sleep(0.02)
        manager = bus.get_object("org.freedesktop.login1", PATH)
        mock = dbus.Interface(manager, dbusmock.MOCK_IFACE)
        mock.AddProperty(MANAGER, "LidClosed", False)
        mock.AddSession("c1", "seat0", dbus.UInt32(os.getuid()), "root", True)
        mock.AddMethod(MANAGER, "GetSessionByPID", "u", "o", NO_SESSION)
        print("ready " + address, flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words == ["quit"]:
                break
            if words[0] == "lid" and words[1:] in (["closed"], ["open"]):
                manager.Set(MANAGER, "LidClosed", words[1] == "closed", dbus_interface=dbus.PROPERTIES_IFACE)
            elif words[0] == "session" and words[1:] == ["none"]:
                mock.AddMethod(MANAGER, "GetSessionByPID", "u", "o", NO_SESSION)
            elif words[0] == "session" and words[1:] in (["local"], ["remote"]):
                mock.AddMethod(MANAGER, "GetSessionByPID", "u", "o", "ret = '%s'" % SESSION_PATH)
                session = bus.get_object("org.freedesktop.login1", SESSION_PATH)
                session.Set(SESSION, "Remote", words[1] == "remote", dbus_interface=dbus.PROPERTIES_IFACE)
            elif words in (["sleep"], ["wake"]):
                mock.EmitSignal(MANAGER, "PrepareForSleep", "b", [words[0] == "sleep"])
            elif words == ["inhibitors"]:
                held = dbus.Interface(manager, MANAGER).ListInhibitors()
                print("inhibitors " + " ".join(f"{who}:{what}:{mode}" for what, who, _, mode, _, _ in held),
                      flush=True)
                continue
            else:
                print("error: unknown command " + line.strip(), flush=True)
                continue
            print("ok", flush=True)
    finally:
        mock_server.kill()
        bus_daemon.kill()
        mock_server.wait()
        bus_daemon.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
