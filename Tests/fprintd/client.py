#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A D-Bus client of fprintd's API, driven line by line, for the door's tests.

Run as any uid (the tests start it through setpriv as their test users), it holds one connection to
the system bus, so a Claim it makes lasts until it exits, as a real client's does. Each input line is
a JSON command; each answer is one JSON line:

  {"call": "Claim", "args": ["alice"], "path": "/net/reactivated/Fprint/Device/0"}
      -> {"ok": [...]} or {"error": "net.reactivated.Fprint.Error.AlreadyInUse", "message": "..."}
  {"manager": "GetDevices"}                       -> the Manager's answer, the same way
  {"get": "finger-needed"}                        -> {"ok": value} (Properties.Get)
  {"set": "finger-needed", "value": true}         -> Properties.Set's answer
  {"signals": true}                               -> {"ok": [[name, args], ...]} received so far, cleared
  {"wait": "VerifyStatus", "timeout": 10}         -> {"ok": args} of the first such signal, or {"error": "timeout"}
  {"quit": true}

Signals are collected from the moment the client starts: VerifyStatus, VerifyFingerSelected,
EnrollStatus and PropertiesChanged of the device path given as argv[1].
"""
import json
import sys
import threading
import time

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BUS = "net.reactivated.Fprint"
DEVICE = "net.reactivated.Fprint.Device"
MANAGER = "net.reactivated.Fprint.Manager"


def main():
    device_path = sys.argv[1] if len(sys.argv) > 1 else "/net/reactivated/Fprint/Device/0"
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    received = []
    lock = threading.Lock()

    def on_signal(_conn, _sender, path, interface, member, params):
        with lock:
            received.append((time.monotonic(), member, params.unpack(), path))

    bus.signal_subscribe(BUS, None, None, None, None, Gio.DBusSignalFlags.NONE, on_signal)
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()

    def answer(value):
        sys.stdout.write(json.dumps(value) + "\n")
        sys.stdout.flush()

    def call(path, interface, method, args, signature):
        try:
            params = GLib.Variant(signature, tuple(args)) if signature else None
            reply = bus.call_sync(BUS, path, interface, method, params, None, Gio.DBusCallFlags.NONE, 60000, None)
            return {"ok": list(reply.unpack()) if reply else []}
        except GLib.Error as e:
            name = Gio.DBusError.get_remote_error(e) or "unknown"
            message = e.message.split(": ", 1)[-1] if ": " in e.message else e.message
            return {"error": name, "message": message}

    answer({"ready": bus.get_unique_name()})
    for line in sys.stdin:
        command = json.loads(line)
        if "quit" in command:
            break
        if "call" in command:
            args = command.get("args", [])
            signature = command.get("signature", "(" + "s" * len(args) + ")")
            answer(call(command.get("path", device_path), DEVICE, command["call"], args, signature))
        elif "manager" in command:
            answer(call("/net/reactivated/Fprint/Manager", MANAGER, command["manager"], [], None))
        elif "get" in command:
            result = call(command.get("path", device_path), "org.freedesktop.DBus.Properties", "Get",
                          [DEVICE, command["get"]], "(ss)")
            if "ok" in result:
                result["ok"] = result["ok"][0]
            answer(result)
        elif "set" in command:
            answer(call(command.get("path", device_path), "org.freedesktop.DBus.Properties", "Set",
                        [DEVICE, command["set"], GLib.Variant("b", bool(command.get("value")))], "(ssv)"))
        elif "signals" in command:
            with lock:
                taken = [[member, args] for (_, member, args, _) in received]
                received.clear()
            answer({"ok": taken})
        elif "wait" in command:
            deadline = time.monotonic() + command.get("timeout", 10)
            found = None
            while found is None and time.monotonic() < deadline:
                with lock:
                    for i, (_, member, args, _) in enumerate(received):
                        if member == command["wait"]:
                            found = args
                            del received[: i + 1]
                            break
                if found is None:
                    time.sleep(0.01)
            answer({"ok": list(found)} if found is not None else {"error": "timeout"})
        else:
            answer({"error": "bad command"})
    loop.quit()


if __name__ == "__main__":
    main()
