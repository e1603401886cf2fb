# SPDX-License-Identifier: Apache-2.0
"""Hostile local clients for pam/tests/hostile.py; one role per process.

Usage: hostile_load.py ROLE SOCKET [ARGS]
  idle UID_FIRST UIDS PER_UID   (as root) forks one child per uid UID_FIRST…, each of which
                                drops to that uid, opens PER_UID connections, says HELLO on
                                each and holds them
  flood CONNECTIONS             opens CONNECTIONS connections (HELLO on each), then sends
                                requests on every welcomed one, one outstanding per connection,
                                as fast as the daemon answers
  oversized                     connects, sends a frame header claiming 2 GiB, reads the ERROR,
                                again and again
  slow CONNECTIONS INTERVAL_MS  each connection sends one byte of a never-ending frame per
                                interval and records when the daemon closes it and with what
Each role prints "ready {json}" once set up and "done {json}" when its standard input closes
(or, for slow, when every connection has been closed), then exits.
"""
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402

TOO_MANY, TIMEOUT = 6, 7
HELLO = lawire.encode(lawire.HELLO, version=1, peerName="hostile")


def say(kind, **fields):
    sys.stdout.write("%s %s\n" % (kind, json.dumps(fields)))
    sys.stdout.flush()


def stdin_closed(timeout=0.0):
    r, _, _ = select.select([sys.stdin], [], [], timeout)
    return bool(r) and not os.read(sys.stdin.fileno(), 4096)


def connect(path):
    """A blocking connection (20 s timeout); retried while the listen backlog is full."""
    deadline = time.monotonic() + 20
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def hello(path):
    """A connection that said HELLO; (socket, True) when welcomed, (None, error code) if not."""
    s = connect(path)
    try:
        s.sendall(HELLO)
    except (BrokenPipeError, ConnectionResetError):
        pass  # a refused connection may be closed before HELLO is out; its ERROR is still there
    try:
        msg_type, fields = lawire.read_frame(s)
    except (EOFError, ConnectionError):
        s.close()
        return None, "closed"
    if msg_type == lawire.WELCOME:
        return s, True
    s.close()
    return None, fields.get("code")


def open_many(path, n):
    held, refused = [], {}
    for _ in range(n):
        s, ok = hello(path)
        if s is not None:
            held.append(s)
        else:
            refused[str(ok)] = refused.get(str(ok), 0) + 1
    return held, refused


def idle(path, uid_first, uids, per_uid):
    children, pipes = [], []
    for uid in range(uid_first, uid_first + uids):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            held, refused = open_many(path, per_uid)
            os.write(w, (json.dumps({"held": len(held), "refused": refused}) + "\n").encode())
            os.close(w)
            while not stdin_closed(None):
                pass
            os._exit(0)
        os.close(w)
        children.append(pid)
        pipes.append(r)
    held, refused = 0, {}
    for r in pipes:
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        if data:
            got = json.loads(data)
            held += got["held"]
            for k, v in got["refused"].items():
                refused[k] = refused.get(k, 0) + v
    say("ready", held=held, refused=refused, uids=uids)
    while not stdin_closed(None):
        pass
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    say("done", held=held)


REQUESTS = [
    lawire.encode(0x0008),                                   # DEVICES
    lawire.encode(0x0002),                                   # STATUS, its own
    lawire.encode(0x0003, policy=1),                         # CAN_EVALUATE for itself
    lawire.encode(0x0006),                                   # LIST, its own
    lawire.encode(lawire.EVALUATE, policy=1, tries=1, timeoutMs=1000),  # nothing enrolled
    lawire.encode(0x0006, user="root"),                      # LIST of root: refused
]


def flood(path, n):
    held, refused = open_many(path, n)
    say("ready", held=len(held), refused=refused)
    for s in held:
        s.setblocking(False)
    sent = answered = results = errors = 0
    began = time.monotonic()
    pending = {s.fileno(): (s, b"") for s in held}
    poller = select.poll()
    for s in held:
        poller.register(s, select.POLLIN)
        s.send(REQUESTS[sent % len(REQUESTS)])
        sent += 1
    poller.register(sys.stdin, select.POLLIN)
    while pending:
        for fd, _ in poller.poll(1000):
            if fd == sys.stdin.fileno():
                if not os.read(fd, 4096):
                    pending = {}
                    break
                continue
            s, buf = pending[fd]
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionError:
                chunk = b""
            if not chunk:
                errors += 1
                poller.unregister(s)
                del pending[fd]
                continue
            buf += chunk
            while len(buf) >= 4:
                (length,) = struct.unpack(">I", buf[:4])
                if len(buf) < 4 + length:
                    break
                (msg_type,) = struct.unpack(">H", buf[4:6])
                buf = buf[4 + length:]
                if msg_type == lawire.RESULT:
                    results += 1
                    answered += 1
                    try:
                        s.send(REQUESTS[sent % len(REQUESTS)])
                        sent += 1
                    except ConnectionError:
                        errors += 1  # seen as closed by the next recv
                elif msg_type == lawire.ERROR:
                    errors += 1
            pending[fd] = (s, buf)
    say("done", sent=sent, results=results, errors=errors, held=len(held),
        seconds=time.monotonic() - began)


def oversized(path):
    rounds, errors_seen, codes = 0, 0, {}
    say("ready")
    while not stdin_closed():
        s = connect(path)
        try:
            s.sendall(struct.pack(">I", 0x7FFFFFFF) + b"\x00\x01" + b"A" * 1024)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon may close before all of it is written; its ERROR is still there
        try:
            msg_type, fields = lawire.read_frame(s)
            if msg_type == lawire.ERROR:
                errors_seen += 1
                codes[str(fields.get("code"))] = codes.get(str(fields.get("code")), 0) + 1
        except (EOFError, ConnectionError, ValueError):
            pass
        s.close()
        rounds += 1
    say("done", rounds=rounds, errors=errors_seen, codes=codes)


def slow(path, n, interval_ms):
    frame = struct.pack(">I", 4000) + b"\x00\x01" + b"B" * 3998
    conns = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        conns.append({"s": s, "opened": time.monotonic(), "sent": 0, "closed": None,
                      "data": b""})
    say("ready", connections=n)
    next_byte = time.monotonic()
    while any(c["closed"] is None for c in conns) and not stdin_closed():
        now = time.monotonic()
        if now >= next_byte:
            for c in conns:
                if c["closed"] is None:
                    try:
                        c["s"].send(frame[c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                    except (BrokenPipeError, ConnectionResetError):
                        pass
            next_byte += interval_ms / 1000
        r, _, _ = select.select([c["s"] for c in conns if c["closed"] is None], [], [],
                                max(0, min(0.05, next_byte - time.monotonic())))
        for c in conns:
            if c["s"] in r:
                try:
                    chunk = c["s"].recv(4096)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    c["data"] += chunk
                else:
                    c["closed"] = time.monotonic()
    out = []
    for c in conns:
        code = None
        if len(c["data"]) >= 6:
            try:
                msg_type, fields = lawire.decode(c["data"][4:])
                code = fields.get("code") if msg_type == lawire.ERROR else None
            except ValueError:
                pass
        out.append({"open_s": None if c["closed"] is None else c["closed"] - c["opened"],
                    "bytes_sent": c["sent"], "error_code": code})
    say("done", connections=out)


def main():
    role, path = sys.argv[1], sys.argv[2]
    args = [int(a) for a in sys.argv[3:]]
    {"idle": idle, "flood": flood, "oversized": oversized, "slow": slow}[role](path, *args)


if __name__ == "__main__":
    main()
