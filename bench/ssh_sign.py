#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench`: the cost of one ssh signature through `localauthctl ssh-agent` after the touch,
beside OpenSSH's own ssh-agent with a file key (which asks nobody).

The world is Tests/ssh/ssh_agent_test.py's: a private mount namespace, a test account in an active
seat0 session (python-dbusmock's logind), the real localauthd with libfprint's virtual reader, a
finger enrolled, an ssh key made with `localauthctl ssh-key create`, the agent running as the account.
A client running as the account sends SSH_AGENTC_SIGN_REQUEST (an `ssh-keygen -Y sign`-shaped
message) on one connection:
  ours   the daemon asks for the finger; the clock starts when `localauthctl simulate touch` is started
         and stops at SSH_AGENT_SIGN_RESPONSE (CLOCK_MONOTONIC in both processes): the touch command
         (a process, the daemon's round trip, timed alone as well), the match, the signature in the
         daemon, the agent's round trips (the notification is closed after the answer is sent);
  theirs OpenSSH's ssh-agent (-D, on a socket of its own) with an ECDSA P-256 file key added by ssh-add:
         request to response.

Usage: /usr/bin/python3 bench/ssh_sign.py --module SO --bin DIR [--runs N]   (as root)
"""
import argparse
import os
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "ssh"))
sys.path.insert(0, os.path.join(HERE, "..", "pam", "tests"))
import sandbox  # noqa: E402
import ssh_agent_test as t  # noqa: E402

# Runs as the account: one sign request per line on stdin ("go" sends it; "touched" starts the
# clock for ours; "now" sends and times at once, for theirs). Prints milliseconds per signature.
CLIENT = r"""
import socket, struct, sys, time
blob = bytes.fromhex(sys.argv[2])
data = b"SSHSIG" + struct.pack(">I", 3) + b"git" + b"\0" * 40
body = bytes([13]) + struct.pack(">I", len(blob)) + blob + struct.pack(">I", len(data)) + data + b"\0\0\0\0"
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
def answer():
    head = b""
    while len(head) < 4:
        head += s.recv(4 - len(head))
    n = struct.unpack(">I", head)[0]
    got = b""
    while len(got) < n:
        got += s.recv(n - len(got))
    return got
for line in sys.stdin:
    word = line.strip()
    if word == "go":
        s.sendall(struct.pack(">I", len(body)) + body)
        print("sent", flush=True)
        reply = answer()
        print("%.6f %d" % (time.monotonic(), reply[0]), flush=True)  # the parent's clock is CLOCK_MONOTONIC too
    else:
        start = time.monotonic()
        s.sendall(struct.pack(">I", len(body)) + body)
        reply = answer()
        print("%.3f %d" % ((time.monotonic() - start) * 1000, reply[0]), flush=True)
"""


def ours(w, runs):
    """From the moment `localauthctl simulate touch` is started to the agent's answer; and that
    touch command alone (its process and the daemon's round trip), which the first includes."""
    blob = t.key_blob(w.key_line).hex()
    p = subprocess.Popen(w.user_cmd(["/usr/bin/python3", "-c", CLIENT, w.sock, blob]), env=w.user_env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out, touch = [], []
    for _ in range(runs):
        before = w.prompts()
        p.stdin.write("go\n")
        p.stdin.flush()
        sandbox.check(p.stdout.readline().strip() == "sent", "the client sent")
        w.wait_for_prompt(before)
        started = time.monotonic()
        w.touch("finger-1")
        touch.append((time.monotonic() - started) * 1000)
        answered, kind = p.stdout.readline().split()
        sandbox.check(kind == "14", "SSH_AGENT_SIGN_RESPONSE, not %s" % kind)
        out.append((float(answered) - started) * 1000)
    p.stdin.close()
    p.wait(timeout=30)
    return out, touch


def theirs(w, runs):
    sock = os.path.join(w.home, "openssh-agent")
    agent = w.m.spawn(w.user_cmd(["ssh-agent", "-D", "-a", sock]), env=w.user_env(), stdout=subprocess.DEVNULL)
    sandbox.wait_until(lambda: os.path.exists(sock), "ssh-agent listens")
    key = os.path.join(w.home, "file-ecdsa")
    w.as_user(["ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-f", key], check_rc=True)
    w.as_user(["ssh-add", "-q", key], check_rc=True, SSH_AUTH_SOCK=sock)
    line = open(key + ".pub").read()
    p = subprocess.Popen(w.user_cmd(["/usr/bin/python3", "-c", CLIENT, sock, t.key_blob(line).hex()]),
                         env=w.user_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = []
    for _ in range(runs):
        p.stdin.write("now\n")
        p.stdin.flush()
        took, kind = p.stdout.readline().split()
        sandbox.check(kind == "14", "SSH_AGENT_SIGN_RESPONSE, not %s" % kind)
        out.append(float(took))
    p.stdin.close()
    p.wait(timeout=30)
    agent.terminate()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    args.module, args.bin, args.k = os.path.abspath(args.module), os.path.abspath(args.bin), ""
    sandbox.enter("LA_SSH_BENCH_SANDBOX")
    w = t.World(args)
    try:
        signed, touch = ours(w, args.runs)
        figures = {"localauthctl ssh-agent: touch started -> signature": signed,
                   "  of which `localauthctl simulate touch` returning": touch,
                   "OpenSSH ssh-agent, file key: request -> signature": theirs(w, args.runs)}
    finally:
        w.close()
    print("ssh: one ECDSA P-256 signature through the agent (ms)")
    sandbox.print_figures(figures, unit="ms")


if __name__ == "__main__":
    main()
