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
  {"eavesdrop": true}                             -> AddMatch of every signal the service sends, also to
                                                     others (eavesdrop=true): {"ok": []} or the bus's error
  {"flood": "Claim", "args": [""], "count": 500, "window": 100}
                                                  -> that many calls, `window` in flight at a time:
                                                     {"ok": {"<error name: message>" or "ok": count, ...},
                                                      "seconds": t}
  {"send": "Claim", "args": [""]}                 -> the call sent (on the wire), its answer never read:
                                                     {"ok": []}
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

    def call_bus(method, *args):
        try:
            bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
                          GLib.Variant("(" + "s" * len(args) + ")", args), None, Gio.DBusCallFlags.NONE, 10000, None)
            return {"ok": []}
        except GLib.Error as e:
            return {"error": Gio.DBusError.get_remote_error(e) or "unknown", "message": e.message}

    def flood(method, args, count, window=100):
        """`count` calls on this connection, `window` of them in flight at once (the bus daemon's own
        limit is 128 pending replies a connection), sent from the main loop's thread so that their
        answers arrive there; waits for all of them. Answers are counted by error name and message."""
        answers = {}
        done = threading.Event()
        started = time.monotonic()
        params = GLib.Variant("(" + "s" * len(args) + ")", tuple(args))
        sent = [0]

        def send_one():
            sent[0] += 1
            bus.call(BUS, device_path, DEVICE, method, params, None, Gio.DBusCallFlags.NONE, 120000, None,
                     answered)

        def answered(conn, result):
            try:
                conn.call_finish(result)
                key = "ok"
            except GLib.Error as e:
                message = e.message.split(": ", 1)[-1] if ": " in e.message else e.message
                key = "%s: %s" % (Gio.DBusError.get_remote_error(e) or "unknown", message[:40])
            answers[key] = answers.get(key, 0) + 1
            if sum(answers.values()) == count:
                done.set()
            elif sent[0] < count:
                send_one()

        def send():
            for _ in range(min(window, count)):
                send_one()
            return False

        GLib.idle_add(send)
        done.wait(150)
        return {"ok": answers, "seconds": round(time.monotonic() - started, 3)}

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
        elif "eavesdrop" in command:
            rule = "type='signal',sender='%s',eavesdrop=true" % BUS
            answer(call_bus("AddMatch", rule))
        elif "flood" in command:
            answer(flood(command["flood"], command.get("args", []), command.get("count", 100),
                         command.get("window", 100)))
        elif "send" in command:
            args = command.get("args", [])
            bus.call(BUS, device_path, DEVICE, command["send"], GLib.Variant("(" + "s" * len(args) + ")", tuple(args)),
                     None, Gio.DBusCallFlags.NONE, 60000, None, None)
            bus.flush_sync(None)  # on the wire before the answer
            answer({"ok": []})
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
