# SPDX-License-Identifier: Apache-2.0
"""Just enough of docs/protocol.md in Python for the fake daemon and the test runner."""
import socket
import struct

HELLO, EVALUATE, CANCEL, PASSCODE, FALLBACK = 0x0001, 0x0004, 0x0010, 0x0011, 0x0012
PASSWORD_USED = 0x0020
WELCOME, EVENT, RESULT, ERROR = 0x8001, 0x8002, 0x8003, 0x80FF

TAGS = {
    "version": (1, "i"), "peer": (2, "s"), "user": (3, "s"), "service": (4, "s"),
    "tty": (5, "s"), "policy": (6, "i"), "reason": (7, "s"), "flags": (10, "i"),
    "tries": (12, "i"), "timeoutMs": (13, "i"), "finger": (14, "s"), "code": (15, "i"),
    "message": (16, "s"), "event": (17, "i"), "triesLeft": (20, "i"), "delayMs": (21, "i"),
    "hint": (22, "i"), "passcode": (23, "s"), "phrase": (49, "b"),
}
NAMES = {tag: (name, kind) for name, (tag, kind) in TAGS.items()}

EV_PLACE, EV_RETRY, EV_NOMATCH, EV_PASSCODE_NEEDED = 1, 2, 3, 5
EV_FALLBACK, EV_LOCKED, EV_PASSCODE_WRONG, EV_INFO = 6, 7, 8, 9


def encode(msg_type, **fields):
    """A whole frame; fields by name, e.g. encode(RESULT, code=0, message="ok")."""
    body = struct.pack(">H", msg_type)
    for name, value in fields.items():
        tag, kind = TAGS[name]
        if kind == "i":
            raw = struct.pack(">q", value)
        elif kind == "b":
            raw = bytes(value)
        else:
            raw = value.encode()
        body += struct.pack(">HH", tag, len(raw)) + raw
    return struct.pack(">I", len(body)) + body


def phrase(*tokens):
    """A `phrase` field's value (docs/protocol.md, "Phrases"): tokens in prefix order, each
    ("id", name), ("text", s) or ("number", n)."""
    out = b""
    for kind, value in tokens:
        tag = {"id": 50, "text": 51, "number": 52}[kind]
        raw = struct.pack(">q", value) if kind == "number" else value.encode()
        out += struct.pack(">HH", tag, len(raw)) + raw
    return out


def decode(body):
    """(type, {name: value}) for a body; raises ValueError when malformed."""
    if len(body) < 2:
        raise ValueError("short body")
    (msg_type,) = struct.unpack(">H", body[:2])
    fields, i = {}, 2
    while i < len(body):
        if len(body) - i < 4:
            raise ValueError("truncated field header")
        tag, size = struct.unpack(">HH", body[i:i + 4])
        value = body[i + 4:i + 4 + size]
        if len(value) != size:
            raise ValueError("field past end")
        i += 4 + size
        name, kind = NAMES.get(tag, ("tag%d" % tag, "b"))
        if kind == "i":
            fields[name] = struct.unpack(">q", value)[0]
        elif kind == "s":
            fields[name] = value.decode()
        else:
            fields[name] = value.hex()
    return msg_type, fields


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("peer closed")
        data += chunk
    return data


def read_frame(sock):
    (length,) = struct.unpack(">I", recv_exact(sock, 4))
    if not 2 <= length <= 4096:
        raise ValueError("bad length %d" % length)
    return decode(recv_exact(sock, length))


def handshake(path, timeout=2.0):
    """Connects and says HELLO; returns WELCOME's fields. For readiness probes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(encode(HELLO, version=1, peer="pam tests"))
        msg_type, fields = read_frame(s)
        if msg_type != WELCOME:
            raise ValueError("no WELCOME: %r" % (fields,))
        return fields


def password_used(path, user, service, timeout=5.0):
    """Says PASSWORD_USED for user, as a PAM stack's pam_setcred does; returns RESULT's fields."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(encode(HELLO, version=1, peer="pam tests"))
        if read_frame(s)[0] != WELCOME:
            raise ValueError("no WELCOME")
        s.sendall(encode(PASSWORD_USED, user=user, service=service))
        msg_type, fields = read_frame(s)
        if msg_type != RESULT:
            raise ValueError("no RESULT: %r" % (fields,))
        return fields
