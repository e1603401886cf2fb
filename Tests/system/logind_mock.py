#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A private system bus with python-dbusmock's logind template, driven line by line on stdin.

Usage: logind_mock.py DIRECTORY [--greeter] [--on-bus ADDRESS] [--remove-directory] [--monitor].
Prints
`ready ADDRESS` once the mock owns org.freedesktop.login1 (give ADDRESS to the daemon as
DBUS_SYSTEM_BUS_ADDRESS), then answers each command with one line. With --remove-directory it
removes DIRECTORY when its input ends (or at `quit`):

  lid closed|open          LidClosed on the Manager
  session local|remote     GetSessionByPID answers session c1 for every pid; its Remote property
  session none             GetSessionByPID fails with NoSessionForPID, as for a pid outside sessions
  add-session ID SEAT UID NAME CLASS active|inactive local|remote
                           a session (SEAT `-`: none, as for ssh); logind's properties as it has them
  place UID ID|none        GetSessionByPID for a process whose real uid is UID (`*`: any other)
  slow MS                  GetSessionByPID answers MS milliseconds late (0: at once), so that
                           a client's questions sent together are all on the bus before it answers
  set-active ID yes|no     the session's Active property (it comes to the front, or goes behind)
  sleep | wake             emit PrepareForSleep(true | false)
  inhibitors               `inhibitors WHO:WHAT:MODE …` (ListInhibitors)
  sync                     asks the bus itself (GetId), answered once that is done: with --monitor,
                           monitor.log has every message routed before once its line for GetId is there
  quit

With --greeter, every process starts out in session c1: class greeter, active on seat0, local —
where a display manager's worker (root) asks for whoever types their name. The test harnesses
stand there (docs/security.md: who may be asked for a finger).

The template has no GetSessionByPID or LidClosed; both are added here, as logind has them.
With --monitor, every message on the bus is logged as it is routed, one line each, in
DIRECTORY/monitor.log (`dbus-monitor --profile`), so that tests can count the questions a client
asks and the round trips it waits for.
"""
import json
import os
import shutil
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

# GetSessionByPID: the session placed for the process's real uid (`place`), else for `*`.
BY_PID = """
import json
with open(%r) as f:
    places = json.load(f)
uid = '*'
try:
    with open('/proc/%%d/status' %% args[0]) as f:
        uid = [l.split()[1] for l in f if l.startswith('Uid:')][0]
except OSError:
    pass
if places.get('slow-ms'):
    import time
    time.sleep(float(places['slow-ms']) / 1000)
session = places.get(uid, places.get('*'))
if session is None:
    raise dbus.exceptions.DBusException('no session for pid %%d' %% args[0],
                                        name='org.freedesktop.login1.NoSessionForPID')
ret = '/org/freedesktop/login1/session/' + session
"""


def add_session(bus, mock, words):
    """add-session ID SEAT UID NAME CLASS active|inactive local|remote"""
    sid, seat, uid, name, klass, active, remote = words
    path = mock.AddSession(sid, "seat0" if seat == "-" else seat, dbus.UInt32(int(uid)), name,
                           active == "active")
    session = bus.get_object("org.freedesktop.login1", path)
    props = dbus.Interface(session, dbus.PROPERTIES_IFACE)
    props.Set(SESSION, "Class", klass)
    props.Set(SESSION, "Active", active == "active")
    props.Set(SESSION, "Remote", remote == "remote")
    if seat == "-":
        props.Set(SESSION, "Seat", dbus.Struct(("", dbus.ObjectPath("/")), signature="so"))


def main():
    directory = sys.argv[1]
    if "--on-bus" in sys.argv[2:]:
        # A bus that is already there (the fprintd door's private system bus, whose policy lets
        # root own org.freedesktop.login1): the mock joins it instead of starting its own.
        address = sys.argv[sys.argv.index("--on-bus") + 1]
        bus_daemon = None
    else:
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
    # With --monitor, every message on the bus as it is routed, a line each (dbus-monitor --profile: type, time,
    # serial, sender, destination, path, interface, member), in DIRECTORY/monitor.log: tests count
    # the round trips a client waits for with it (a call sent before the answer to the last one
    # is in the same round trip).
    monitor = None
    if "--monitor" in sys.argv[2:]:
        with open(os.path.join(directory, "monitor.log"), "w") as log:
            monitor = subprocess.Popen(["dbus-monitor", "--address", address, "--profile"], stdout=log,
                                       stderr=subprocess.DEVNULL)
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
        places_file = os.path.join(directory, "places.json")
        places = {}

        def place(uid, session):
            if session is None:
                places.pop(uid, None)
            else:
                places[uid] = session
            with open(places_file + ".new", "w") as f:
                json.dump(places, f)
            os.replace(places_file + ".new", places_file)

        place("*", None)
        mock.AddMethod(MANAGER, "GetSessionByPID", "u", "o", BY_PID % places_file)
        if "--greeter" in sys.argv[2:]:
            session = bus.get_object("org.freedesktop.login1", SESSION_PATH)
            session.Set(SESSION, "Class", "greeter", dbus_interface=dbus.PROPERTIES_IFACE)
            place("*", "c1")
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
                place("*", None)
            elif words[0] == "session" and words[1:] in (["local"], ["remote"]):
                place("*", "c1")
                session = bus.get_object("org.freedesktop.login1", SESSION_PATH)
                session.Set(SESSION, "Remote", words[1] == "remote", dbus_interface=dbus.PROPERTIES_IFACE)
            elif words[0] == "add-session" and len(words) == 8:
                add_session(bus, mock, words[1:])
            elif words[0] == "set-active" and len(words) == 3:
                session = bus.get_object("org.freedesktop.login1", PATH + "/session/" + words[1])
                session.Set(SESSION, "Active", words[2] == "yes", dbus_interface=dbus.PROPERTIES_IFACE)
            elif words[0] == "place" and len(words) == 3:
                place(words[1], None if words[2] == "none" else words[2])
            elif words[0] == "slow" and len(words) == 2 and words[1].isdigit():
                place("slow-ms", words[1] if words[1] != "0" else None)
            elif words in (["sleep"], ["wake"]):
                mock.EmitSignal(MANAGER, "PrepareForSleep", "b", [words[0] == "sleep"])
            elif words == ["sync"]:
                bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId",
                                  "", [])
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
        if monitor:
            monitor.kill()
            monitor.wait()
        mock_server.kill()
        mock_server.wait()
        if bus_daemon:
            bus_daemon.kill()
            bus_daemon.wait()
        if "--remove-directory" in sys.argv[2:]:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
