# SPDX-License-Identifier: Apache-2.0
"""A scripted localauthd for the PAM module's tests.

Usage: fake_daemon.py SOCKET SCRIPT.json LOG.jsonl

Serves connections one after another. Each connection is logged ("connect", then every frame
received); unless the script says "handshake": false, the daemon reads HELLO, answers WELCOME
and reads the request before running the script's steps:
  {"send": hex}      write these bytes        {"recv": true}     read one frame, log it
  {"sleep": seconds}                          {"close": true}    close this connection
  {"expect_passcode": "1234", "right": [hex...], "wrong": [hex...]}
                     read one frame; send "right" if it is PASSCODE with that passcode
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402

path, script_path, log_path = sys.argv[1:4]
with open(script_path) as f:
    script = json.load(f)
log = open(log_path, "a", buffering=1)


def note(**entry):
    entry["t"] = time.monotonic()
    log.write(json.dumps(entry) + "\n")


def received(conn):
    msg_type, fields = lawire.read_frame(conn)
    note(frame=msg_type, fields=fields)
    return msg_type, fields


def serve(conn):
    if script.get("handshake", True):
        received(conn)
        conn.sendall(bytes.fromhex(script.get("welcome", lawire.encode(
            lawire.WELCOME, version=1, peerName="fake localauthd").hex())))
        received(conn)
    for step in script["steps"]:
        if "send" in step:
            conn.sendall(bytes.fromhex(step["send"]))
        elif "recv" in step:
            received(conn)
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "close" in step:
            return
        elif "expect_passcode" in step:
            msg_type, fields = received(conn)
            ok = msg_type == lawire.PASSCODE and fields.get("passcode") == step["expect_passcode"]
            for frame in step["right" if ok else "wrong"]:
                conn.sendall(bytes.fromhex(frame))


try:
    os.unlink(path)
except FileNotFoundError:
    pass
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
os.chmod(path, 0o666)
server.listen(16)
note(ready=True, uid=os.getuid())
while True:
    conn, _ = server.accept()
    note(connect=True)
    try:
        serve(conn)
    except (EOFError, ConnectionError, ValueError) as e:
        note(error=str(e))
    finally:
        conn.close()
        note(closed=True)
