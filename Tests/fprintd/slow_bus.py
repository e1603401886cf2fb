#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A bus daemon that is slow to say who a sender is: relays every connection made to LISTEN to the
real system bus socket BUS, byte for byte (descriptors passed along), except that each answer to a
`GetConnectionCredentials` the connecting side asked for is handed over HOLD seconds late; every
other message passes at once, also those that arrive after the held answer (the bus daemon orders
only the messages of one sender, and that answer is org.freedesktop.DBus's alone).

Usage: slow_bus.py LISTEN BUS HOLD   (prints "ready" once it listens; ends on SIGTERM)

The fprintd door asks the bus daemon once per sender who it is (test_door.py, LookupTests): a door
that waited for the answer on its queue would serve nobody meanwhile."""
import os
import select
import signal
import socket
import struct
import sys
import time

LISTEN, BUS, HOLD = sys.argv[1], sys.argv[2], float(sys.argv[3])
FD_SPACE = socket.CMSG_SPACE(253 * 4)


def pad(n, to):
    return (to - n % to) % to


def message_length(buf):
    """The length of the first message in buf, or None while its header is incomplete."""
    if len(buf) < 16:
        return None
    order = "<" if buf[0:1] == b"l" else ">"
    body, _, fields = struct.unpack(order + "III", buf[4:16])
    return 16 + fields + pad(fields, 8) + body


def header(msg):
    """(type, serial, member, reply_serial) of one whole message."""
    order = "<" if msg[0:1] == b"l" else ">"
    kind = msg[1]
    _, serial, fields = struct.unpack(order + "III", msg[4:16])
    off, end = 16, 16 + fields
    member, reply = None, None
    while off < end:
        off += pad(off, 8)
        if off >= end:
            break
        code, siglen = msg[off], msg[off + 1]
        sig = msg[off + 2:off + 2 + siglen]
        off += 2 + siglen + 1
        if sig in (b"s", b"o"):
            off += pad(off, 4)
            (n,) = struct.unpack(order + "I", msg[off:off + 4])
            value = msg[off + 4:off + 4 + n].decode()
            off += 4 + n + 1
            if code == 3:
                member = value
        elif sig == b"g":
            n = msg[off]
            off += 1 + n + 1
        elif sig == b"u":
            off += pad(off, 4)
            (value,) = struct.unpack(order + "I", msg[off:off + 4])
            off += 4
            if code == 5:
                reply = value
        else:
            break
    return kind, serial, member, reply


class Pair:
    """One relayed connection: the client side (the daemon) and the bus side. Before BEGIN both
    speak lines (the client a NUL byte first); the bus daemon answers each line but BEGIN with one
    line, and sends framed messages after those answers."""

    def __init__(self, client):
        self.client = client
        self.bus = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.bus.connect(BUS)
        self.up, self.down = b"", b""
        self.commands = None  # the client's lines before BEGIN, once it has sent BEGIN
        self.answered = 0  # lines the bus daemon has sent
        self.asked = set()  # serials of the client's GetConnectionCredentials calls
        self.held = []  # (due, message)
        self.fds = []  # descriptors that came with bytes not passed on yet

    def from_client(self, data, fds):
        self.up += data
        if self.commands is None:
            i = self.up.find(b"BEGIN\r\n")
            if i >= 0:
                self.commands = self.up[:i].count(b"\r\n")
                self.up = self.up[i + 7:]
        if self.commands is not None:
            while True:
                n = message_length(self.up)
                if n is None or len(self.up) < n:
                    break
                kind, serial, member, _ = header(self.up[:n])
                if kind == 1 and member == "GetConnectionCredentials":
                    self.asked.add(serial)
                self.up = self.up[n:]
        self.send(self.bus, data, fds)

    def from_bus(self, data, fds):
        self.down += data
        out = b""
        while self.commands is None or self.answered < self.commands:
            i = self.down.find(b"\r\n")
            if i < 0:
                break
            out += self.down[:i + 2]
            self.down = self.down[i + 2:]
            self.answered += 1
        if self.commands is not None and self.answered >= self.commands:
            while True:
                n = message_length(self.down)
                if n is None or len(self.down) < n:
                    break
                msg, self.down = self.down[:n], self.down[n:]
                kind, _, _, reply = header(msg)
                if kind in (2, 3) and reply in self.asked:
                    self.asked.discard(reply)
                    self.held.append((time.monotonic() + HOLD, msg))
                else:
                    out += msg
        self.fds += fds
        if out:
            self.send(self.client, out, self.fds)
            self.fds = []

    def due(self, now):
        ready = [m for t, m in self.held if t <= now]
        self.held = [(t, m) for t, m in self.held if t > now]
        for msg in ready:
            self.send(self.client, msg, [])

    @staticmethod
    def send(sock, data, fds):
        if fds:
            sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))])
            for fd in fds:
                os.close(fd)
        elif data:
            sock.sendall(data)


def receive(sock):
    data, anc, _, _ = sock.recvmsg(65536, FD_SPACE)
    fds = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(payload) // 4), payload[:len(payload) - len(payload) % 4])
    return data, fds


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(LISTEN)
    os.chmod(LISTEN, 0o666)
    server.listen(64)
    print("ready", flush=True)
    pairs = {}
    while True:
        socks = [server] + [p.client for p in set(pairs.values())] + [p.bus for p in set(pairs.values())]
        held = [t for p in set(pairs.values()) for t, _ in p.held]
        timeout = max(0.0, min(held) - time.monotonic()) if held else None
        readable, _, _ = select.select(socks, [], [], timeout)
        for p in set(pairs.values()):
            p.due(time.monotonic())
        for s in readable:
            if s is server:
                client, _ = server.accept()
                p = Pair(client)
                pairs[client] = pairs[p.bus] = p
                continue
            p = pairs.get(s)
            if p is None:
                continue
            data, fds = receive(s)
            if not data and not fds:
                for side in (p.client, p.bus):
                    pairs.pop(side, None)
                    side.close()
                continue
            if s is p.client:
                p.from_client(data, fds)
            else:
                p.from_bus(data, fds)


if __name__ == "__main__":
    main()
