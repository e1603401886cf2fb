#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A screen locker's fingerprint half, as swaylock-fprintd and hyprlock do it: one GLib main loop
serves both the password field (keystrokes on stdin) and fprintd's D-Bus signals, so typing never
waits for the reader and a finger never waits for typing.

At start it claims the default device for its own user and starts a verification ("any"). A
"verify-no-match" starts the next verification at once; "verify-match" unlocks. Each line on stdin
is one key: a character is added to the password, "ENTER" submits it (the verification is stopped
and the device released, as a locker does when the password goes to PAM). Every step is printed as
one line with the monotonic time: `key N`, `status NAME`, `unlocked finger`, `unlocked password N`.
"""
import sys
import time

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BUS = "net.reactivated.Fprint"


def say(*words):
    print("%.6f %s" % (time.monotonic(), " ".join(str(w) for w in words)), flush=True)


def main():
    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    manager = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, BUS, "/net/reactivated/Fprint/Manager",
                                     "net.reactivated.Fprint.Manager", None)
    path = manager.GetDefaultDevice()
    device = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.NONE, None, BUS, path, "net.reactivated.Fprint.Device",
                                    None)
    loop = GLib.MainLoop()
    password = []

    def start():
        # Asynchronous, as a locker must: the main loop keeps reading keys meanwhile.
        device.call("VerifyStart", GLib.Variant("(s)", ("any",)), Gio.DBusCallFlags.NONE, -1, None, started)

    def started(proxy, result):
        try:
            proxy.call_finish(result)
            say("verifying")
        except GLib.Error as e:
            say("verify-start-failed", Gio.DBusError.get_remote_error(e))

    def on_signal(proxy, sender, name, params):
        if name != "VerifyStatus":
            return
        status, done = params.unpack()
        say("status", status)
        if not done:
            return
        device.VerifyStop()
        if status == "verify-match":
            device.Release()
            say("unlocked finger")
            loop.quit()
        elif status == "verify-no-match":
            start()

    def on_key(channel, condition):
        line = channel.readline()
        if not line:
            loop.quit()
            return False
        key = line.strip()
        if key == "ENTER":
            device.VerifyStop()
            device.Release()
            say("unlocked password", len(password))
            loop.quit()
            return False
        password.append(key)
        say("key", len(password))
        return True

    device.connect("g-signal", on_signal)
    device.Claim("(s)", "")
    say("claimed", path)
    start()
    GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.PRIORITY_DEFAULT,
                      GLib.IOCondition.IN | GLib.IOCondition.HUP, on_key)
    loop.run()


if __name__ == "__main__":
    main()
