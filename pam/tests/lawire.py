# SPDX-License-Identifier: Apache-2.0
"""Just enough of docs/protocol.md in Python for the fake daemon and the test runner.

The message types, tags and event kinds are not written here but read from the vocabulary the
Swift and C codecs are checked against (Tests/Fixtures/protocol/vocabulary.txt, ADR 0009), so
this codec cannot drift from them; a malformed fixture fails every test that imports it.
"""
import os
import socket
import struct

VOCABULARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests",
                          "Fixtures", "protocol", "vocabulary.txt")


def load_vocabulary(path=VOCABULARY):
    """{kind: {name: (value, extra words)}} from the fixture; ValueError on a malformed line."""
    table = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 3:
                raise ValueError("%s:%d: expected 'kind value name'" % (path, number))
            kind, value, name = words[0], int(words[1], 0), words[2]
            if name in table.setdefault(kind, {}):
                raise ValueError("%s:%d: %s %s twice" % (path, number, kind, name))
            table[kind][name] = (value, words[3:])
    return table


_VOCABULARY = load_vocabulary()
MESSAGES = {name: value for name, (value, _) in _VOCABULARY["message"].items()}
EVENTS = {name: value for name, (value, _) in _VOCABULARY["event"].items()}
RESULTS = {name: value for name, (value, _) in _VOCABULARY["result"].items()}
_KINDS = {"int": "i", "str": "s", "bytes": "b"}
TAGS = {name: (value, _KINDS[extra[0]]) for name, (value, extra) in _VOCABULARY["tag"].items()}
NAMES = {tag: (name, kind) for name, (tag, kind) in TAGS.items()}

HELLO, EVALUATE, CANCEL = MESSAGES["HELLO"], MESSAGES["EVALUATE"], MESSAGES["CANCEL"]
PASSCODE, FALLBACK = MESSAGES["PASSCODE"], MESSAGES["FALLBACK"]
PASSWORD_USED = MESSAGES["PASSWORD_USED"]
WELCOME, EVENT, RESULT, ERROR = (MESSAGES[n] for n in ("WELCOME", "EVENT", "RESULT", "ERROR"))

EV_PLACE, EV_RETRY, EV_NOMATCH = EVENTS["placeFinger"], EVENTS["retry"], EVENTS["noMatch"]
EV_PASSCODE_NEEDED, EV_FALLBACK = EVENTS["passcodeNeeded"], EVENTS["fallbackAvailable"]
EV_LOCKED, EV_PASSCODE_WRONG = EVENTS["biometryLocked"], EVENTS["passcodeWrong"]
EV_INFO = EVENTS["info"]


def encode(msg_type, **fields):
    """A whole frame; fields by name, e.g. encode(RESULT, code=0, message="ok")."""
    body = struct.pack(">H", msg_type)
    for name, value in fields.items():
        tag, kind = TAGS[name]
        if kind == "i":
            raw = struct.pack(">q", value)
        elif kind == "s":
            raw = value.encode()
        else:
            raw = bytes(value)
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
        s.sendall(encode(HELLO, version=1, peerName="pam tests"))
        msg_type, fields = read_frame(s)
        if msg_type != WELCOME:
            raise ValueError("no WELCOME: %r" % (fields,))
        return fields


def password_used(path, user, service, timeout=5.0):
    """Says PASSWORD_USED for user, as a PAM stack's pam_setcred does; returns RESULT's fields."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(encode(HELLO, version=1, peerName="pam tests"))
        if read_frame(s)[0] != WELCOME:
            raise ValueError("no WELCOME")
        s.sendall(encode(PASSWORD_USED, user=user, service=service))
        msg_type, fields = read_frame(s)
        if msg_type != RESULT:
            raise ValueError("no RESULT: %r" % (fields,))
        return fields
