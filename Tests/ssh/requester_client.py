#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A client of localauthd that passes a requester's pidfd (docs/protocol.md, "The requester"), as the
ssh agent does, and as a hostile process of the account might: run as the account by
ssh_agent_test.py. One scenario a run; it prints one JSON object: what the daemon answered.

  own          its own pidfd (caller and requester the same process)
  other        the pidfd of another process of the account (a `sleep` it starts)
  twice        REQUESTER with its own pidfd, then again with the `sleep`'s
  pid N        the pidfd of process N (the harness gives a root process)
  exited       the pidfd of a child that has exited and been reaped
  not-pidfd    an open file instead of a pidfd
  two          two pidfds in one message
  none         the byte with no descriptor
  silent       REQUESTER, then nothing
  hangup       REQUESTER, then the connection closed
  no-request   its own pidfd passed, then the connection closed without a request

First it saves IDENTIFIER as a right of its own program (python3; RIGHT_SAVE asks nobody, and a
right belongs to the program that saved it, ADR 0012: the agent's key of that name is localauthctl's).
After the descriptor: RIGHT_USE sign of IDENTIFIER, then CANCEL at its first event.
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pam", "tests"))
import lawire  # noqa: E402

REQUESTER = lawire.MESSAGES["REQUESTER"]
DESCRIPTOR_WANTED = lawire.MESSAGES["DESCRIPTOR_WANTED"]
RIGHT_USE = lawire.MESSAGES["RIGHT_USE"]
NAMES = {v: k for k, v in lawire.MESSAGES.items()}


def save_own_right(socket_path, identifier):
    """RIGHT_SAVE of `identifier` for this program (biometry); one saved before is kept."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(socket_path)
    s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="requester test"))
    assert lawire.read_frame(s)[0] == lawire.WELCOME
    s.sendall(lawire.encode(lawire.MESSAGES["RIGHT_SAVE"], identifier=identifier, requirement=1))
    kind, fields = lawire.read_frame(s)
    s.close()
    assert kind == lawire.RESULT, (kind, fields)


def main():
    socket_path, identifier, scenario = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {"scenario": scenario}
    save_own_right(socket_path, identifier)
    child = None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(socket_path)
    s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="requester test"))
    assert lawire.read_frame(s)[0] == lawire.WELCOME
    fds = []
    if scenario == "own":
        fds = [os.pidfd_open(os.getpid())]
    elif scenario in ("other", "twice"):
        child = subprocess.Popen(["sleep", "60"])
        fds = [os.pidfd_open(child.pid)]
        if scenario == "twice":  # first its own pidfd, then REQUESTER again with the other's: the last counts
            s.sendall(lawire.encode(REQUESTER))
            assert lawire.read_frame(s)[0] == DESCRIPTOR_WANTED
            own = os.pidfd_open(os.getpid())
            socket.send_fds(s, [b"\0"], [own])
            os.close(own)
    elif scenario == "pid":
        fds = [os.pidfd_open(int(sys.argv[4]))]
    elif scenario == "exited":
        gone = subprocess.Popen(["true"])
        fds = [os.pidfd_open(gone.pid)]
        gone.wait()
    elif scenario == "not-pidfd":
        fds = [os.open("/dev/null", os.O_RDONLY)]
    elif scenario == "no-request":
        fds = [os.pidfd_open(os.getpid())]
    elif scenario == "two":
        fds = [os.pidfd_open(os.getpid()), os.pidfd_open(os.getpid())]
    s.sendall(lawire.encode(REQUESTER))
    try:
        kind, fields = lawire.read_frame(s)
    except (EOFError, OSError) as e:
        out["answer"] = "closed: %s" % e
        print(json.dumps(out))
        return
    out["answer"] = NAMES.get(kind, kind)
    if kind != DESCRIPTOR_WANTED:
        out["fields"] = fields
        print(json.dumps(out))
        return
    if scenario == "hangup":
        s.close()
        print(json.dumps(out))
        return
    if scenario == "silent":
        s.settimeout(20)
    else:
        socket.send_fds(s, [b"\0"], fds)
    for fd in fds:
        os.close(fd)
    if scenario == "no-request":  # the pidfd passed, then the connection closed without a request
        s.close()
        print(json.dumps(out))
        return
    if scenario != "silent":
        s.sendall(lawire.encode(RIGHT_USE, identifier=identifier, operation=3, algorithm="ecdsaSignatureMessageX962SHA256",
                                data=b"data", service="requester test", reason="a test", timeoutMs=5000))
    replies = []
    try:
        while True:
            kind, fields = lawire.read_frame(s)
            replies.append({"type": NAMES.get(kind, kind), "fields": fields})
            if kind == lawire.EVENT:
                s.sendall(lawire.encode(lawire.CANCEL))
            if kind in (lawire.RESULT, lawire.ERROR):
                break
    except (EOFError, OSError) as e:
        replies.append({"type": "closed", "why": str(e)})
    out["replies"] = replies
    if child is not None:
        child.kill()
        child.wait()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
