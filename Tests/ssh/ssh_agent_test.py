#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Touch ID for ssh (issue 30) with the real programs: OpenSSH's sshd on 127.0.0.1 (its own config
and host key, started here), the real ssh, ssh-add and ssh-keygen, through `localauthctl ssh-agent`
running as a test account; the real localauthd with libfprint's virtual reader.

Everything runs in pam/tests/sandbox.py's private mount namespace: /etc an overlay holding two
test accounts, /run a tmpfs (the daemon's socket, sshd's privilege separation directory).
logind is python-dbusmock's (Tests/system/logind_mock.py): the account's processes sit in an
active local session on seat0, as the presence rule asks of a finger.

Cases:
  enrolled finger -> logged in (the prompt named the program, the account and the host, and was
    shown as a desktop notification: python-dbusmock's notification daemon on the account's session bus);
  wrong finger -> refused after the tries; no touch -> refused at the agent's timeout;
  another account, and root, cannot use the socket; ssh-add -L lists the public keys only;
  ssh-add of a file key refused; ssh-keygen -Y sign / -Y verify round trip;
  malformed and unknown messages get SSH_AGENT_FAILURE and the agent serves on;
  a forwarded connection (session-bind with is_forwarding) is refused without asking, unless the
    key allows forwarding (then it signs after the finger); ssh-key create / list / delete;
    an interrupted ssh cancels the request; git commit -S / verify-commit; the user unit's way in
    (systemd-socket-activate).

Usage: ssh_agent_test.py --module SO --bin DIR [-k NAME]   (as root)
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import json
import os
import pwd
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "pam", "tests"))
import sandbox  # noqa: E402
import seat  # noqa: E402
from sandbox import check, wait_until  # noqa: E402

USER, OTHER = "la-ssh", "la-ssh-other"
KEY = "work"
AGENT_TIMEOUT_S = 8


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tail(path, n=800):
    try:
        with open(path) as f:
            return f.read()[-n:]
    except OSError:
        return ""


class World:
    def __init__(self, args):
        self.m = None
        self.logind = None
        try:
            self.set_up(args)
        except BaseException:
            self.close()
            raise

    def set_up(self, args):
        self.args = args
        self.m = sandbox.Machine(args.module, args.bin, {USER: "Ssh-pass 4711", OTHER: "Other-pass 4711"})
        self.root = self.m.root
        os.mkdir(self.path("logind"))
        self.logind = seat.LogindMock(self.path("logind"))
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.logind.address  # the daemon inherits it
        self.uid = self.m.uids[USER]
        self.logind_says("add-session c2 seat0 %d %s user active local" % (self.uid, USER))
        self.logind_says("place %d c2" % self.uid)
        self.m.start_daemon()
        self.m.enroll(USER, "finger-1")
        self.home = pwd.getpwnam(USER).pw_dir
        self.ctl = os.path.join(args.bin, "localauthctl")
        # The key, made as the account, and its line in authorized_keys.
        out = self.as_user([self.ctl, "ssh-key", "create", KEY], check_rc=True).stdout
        self.key_line = out.strip().splitlines()[-1]
        check(self.key_line.startswith("ecdsa-sha2-nistp256 ") and self.key_line.endswith(" localauth:" + KEY),
              "ssh-key create printed %r" % out)
        self.write_user_file(".ssh/authorized_keys", self.key_line + "\n", 0o600)
        self.start_sshd()
        self.write_user_file(".ssh/known_hosts", "[127.0.0.1]:%d %s\n" % (self.port, self.host_key), 0o644)
        self.start_session_bus()
        self.sock = os.path.join(self.home, "agent", "socket")
        self.agent_log = self.path("agent.log")
        self.agent = self.m.spawn(self.user_cmd([self.ctl, "ssh-agent", "--socket", self.sock,
                                                 "--timeout", str(AGENT_TIMEOUT_S)]),
                                  env=self.user_env(DBUS_SESSION_BUS_ADDRESS=self.session_bus),
                                  stdout=subprocess.DEVNULL,
                                  stderr=open(self.agent_log, "w"))
        wait_until(lambda: os.path.exists(self.sock) or self.agent.poll() is not None, "the agent listens")
        check(self.agent.poll() is None, "the agent runs: %s" % self.agent_text())

    def path(self, *names):
        return self.m.path(*names)

    def logind_says(self, command):
        answer = self.logind.say(command)
        check(answer == "ok", "logind mock: %s -> %s" % (command, answer))

    def user_env(self, user=USER, **extra):
        pw = pwd.getpwnam(user)
        env = {"HOME": pw.pw_dir, "USER": user, "LOGNAME": user, "PATH": "/usr/bin:/bin",
               "LOCALAUTHD_SOCKET": sandbox.SOCKET, "LANG": "C.UTF-8"}
        env.update(extra)
        return env

    def user_cmd(self, cmd, user=USER):
        return ["setpriv", "--reuid", user, "--regid", user, "--init-groups", "--"] + cmd

    def as_user(self, cmd, user=USER, check_rc=False, timeout=sandbox.WAIT_S, stdin=None, **extra):
        r = subprocess.run(self.user_cmd(cmd, user), env=self.user_env(user, **extra), input=stdin,
                           capture_output=True, text=True, timeout=timeout, cwd=pwd.getpwnam(user).pw_dir)
        check(not check_rc or r.returncode == 0, "%s: %s%s" % (" ".join(cmd), r.stdout, r.stderr))
        return r

    def write_user_file(self, name, text, mode):
        full = os.path.join(self.home, name)
        os.makedirs(os.path.dirname(full), mode=0o700, exist_ok=True)
        os.chown(os.path.dirname(full), self.uid, self.uid)
        with open(full, "w") as f:
            f.write(text)
        os.chown(full, self.uid, self.uid)
        os.chmod(full, mode)

    def start_sshd(self):
        d = self.path("sshd")
        os.mkdir(d)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, "host_key")],
                       check=True)
        self.host_key = " ".join(open(os.path.join(d, "host_key.pub")).read().split()[:2])
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.port = free_port()
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host_key\nPidFile %s/sshd.pid\n"
                    "AuthenticationMethods publickey\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel VERBOSE\n"
                    "AllowUsers %s\nAuthorizedKeysFile .ssh/authorized_keys\n" % (self.port, d, d, USER))
        self.sshd_log = os.path.join(d, "sshd.log")
        self.sshd = self.m.spawn(["/usr/sbin/sshd", "-D", "-f", os.path.join(d, "sshd_config"), "-E", self.sshd_log])

        def listening():
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                if self.sshd.poll() is not None:
                    raise sandbox.Failure("sshd exited: %s" % tail(self.sshd_log))
                return False
        wait_until(listening, "sshd listens")

    def start_session_bus(self):
        """The account's session bus (a dbus-daemon of its own) with python-dbusmock's
        notification daemon on it, which logs every call it gets."""
        bus = self.m.spawn(self.user_cmd(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                                          "--address=unix:path=%s/session-bus" % self.home]),
                           env=self.user_env(), stdout=subprocess.PIPE, text=True)
        self.session_bus = bus.stdout.readline().strip()
        check(self.session_bus.startswith("unix:"), "session bus: %r" % self.session_bus)
        self.notify_log = self.path("notifications.log")
        open(self.notify_log, "w").close()
        os.chown(self.notify_log, self.uid, self.uid)
        self.m.spawn(self.user_cmd(["/usr/bin/python3", "-m", "dbusmock", "--template", "notification_daemon",
                                    "-l", self.notify_log]),
                     env=self.user_env(DBUS_SESSION_BUS_ADDRESS=self.session_bus), stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)

        def owned():
            r = subprocess.run(self.user_cmd(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus",
                                              "--object-path", "/org/freedesktop/DBus", "--method",
                                              "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.Notifications"]),
                               env=self.user_env(DBUS_SESSION_BUS_ADDRESS=self.session_bus), capture_output=True,
                               text=True)
            return "true" in r.stdout
        wait_until(owned, "the notification daemon is on the session bus")

    def agent_text(self):
        return tail(self.agent_log, 1 << 20)

    def ssh(self):
        """The real ssh client through the agent, started in the background."""
        return self.m.spawn(self.user_cmd([
            "ssh", "-F", "/dev/null", "-p", str(self.port), "-o", "IdentityAgent=" + self.sock,
            "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "PasswordAuthentication=no",
            "-o", "ConnectTimeout=20", USER + "@127.0.0.1", "echo", "logged-in-as-$(id -un)"]),
            env=self.user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_for_prompt(self, count_before):
        """The agent's log line for the daemon's next finger prompt."""
        wait_until(lambda: self.agent_text().count("Place your") > count_before, "the daemon asks for a finger")

    def prompts(self):
        return self.agent_text().count("Place your")

    def touch(self, print_id):
        self.m.touch(print_id)

    def close(self):
        if self.logind is not None:
            self.logind.stop()
        if self.m is not None:
            self.m.close()


def agent_exchange(w, frames):
    """Each frame sent over one connection as the account, each answer's body read (Python as the
    account: the agent admits its own uid only)."""
    script = (
        "import socket,struct,sys\n"
        "s=socket.socket(socket.AF_UNIX);s.settimeout(20);s.connect(sys.argv[1])\n"
        "def rd(n):\n"
        " b=b''\n"
        " while len(b)<n:\n"
        "  c=s.recv(n-len(b))\n"
        "  if not c: raise SystemExit('closed')\n"
        "  b+=c\n"
        " return b\n"
        "for h in sys.argv[2:]:\n"
        " s.sendall(bytes.fromhex(h));n=struct.unpack('>I',rd(4))[0];print(rd(n).hex())\n")
    r = w.as_user(["python3", "-c", script, w.sock] + [f.hex() for f in frames])
    check(r.returncode == 0, "agent exchange: %s" % r.stderr)
    return [bytes.fromhex(l) for l in r.stdout.split()]


def sshstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


def frame(body):
    return struct.pack(">I", len(body)) + body


def key_blob(line):
    import base64
    return base64.b64decode(line.split()[1])


# -- cases -------------------------------------------------------------------------------------

def enrolled_finger_logs_in(w):
    before = w.prompts()
    p = w.ssh()
    w.wait_for_prompt(before)
    w.touch("finger-1")
    out, err = p.communicate(timeout=sandbox.WAIT_S)
    check(p.returncode == 0 and "logged-in-as-" + USER in out, "ssh: %d %s %s\nagent: %s" % (
        p.returncode, out, err, w.agent_text()[-800:]))
    log = w.agent_text()
    check("asking for a finger (log in as %s on [127.0.0.1]:%d with ssh key %s)" % (USER, w.port, KEY) in log,
          "the prompt names the account and the host: %s" % log[-800:])
    # The program, as the daemon read it from the pidfd the agent passed: ssh, via the agent.
    check("(/usr/bin/ssh via %s for %s, asking to release ssh-key:%s)" % (os.path.realpath(w.ctl), USER, KEY) in log,
          "the daemon's prompt names ssh by its executable, via the agent: %s" % log[-800:])
    check("key %s: signed" % KEY in log, "the agent says it signed")
    # The prompt on the desktop: a notification naming the host, taken away once signed.
    calls = tail(w.notify_log, 1 << 20)
    check('Notify "localauth" 0 "" "ssh: touch the fingerprint reader"' in calls
          and "log in as %s on [127.0.0.1]:%d with ssh key %s" % (USER, w.port, KEY) in calls,
          "the notification: %r" % calls)
    check(calls.rstrip().splitlines()[-1].split(" ", 1)[1].startswith("CloseNotification"),
          "closed after the signature: %r" % calls)


def client_gone_mid_wait_cancels_the_request(w):
    """ssh interrupted while the daemon waits for the finger: the agent cancels at once (the daemon
    counts nothing), it does not hold the reader until its timeout."""
    before = w.prompts()
    p = w.ssh()
    w.wait_for_prompt(before)
    started = time.monotonic()
    p.kill()
    p.wait(timeout=sandbox.WAIT_S)
    def cancelled():
        uses = [l for l in w.m.audit() if "op=rightUse" in l]
        return uses and "result=systemCancel phrase=cancelled" in uses[-1]
    wait_until(cancelled, "the daemon ends the request as cancelled (nothing counted)")
    took = time.monotonic() - started
    check(took < AGENT_TIMEOUT_S - 2, "ended in %.1f s, not at the timeout" % took)
    check("the client hung up: the request is cancelled" in w.agent_text(), "the agent says why")


def wrong_finger_is_refused(w):
    def asked():  # the first prompt, then each "try again"
        text = w.agent_text()
        return text.count("Place your") + text.count("try again")
    p = w.ssh()
    before = asked()
    for _ in range(3):  # the daemon's default tries
        wait_until(lambda: asked() > before or p.poll() is not None, "a prompt")
        if p.poll() is not None:
            break
        before = asked()
        w.touch("finger-2")
    out, err = p.communicate(timeout=sandbox.WAIT_S)
    check(p.returncode == 255 and "logged-in" not in out, "ssh: %d %s %s" % (p.returncode, out, err))
    check("Permission denied" in err, "ssh says why: %s" % err)
    last = w.agent_text().split("asking for a finger")[-1]
    check(last.count("Not recognised, try again") == 2 and "refused: " in last, "the agent logs the misses and the refusal: %s" % last)
    if os.environ.get("LA_SSH_VERBOSE"):
        print(last)


def no_touch_is_refused_at_the_timeout(w):
    started = time.monotonic()
    p = w.ssh()
    out, err = p.communicate(timeout=AGENT_TIMEOUT_S + sandbox.WAIT_S)
    took = time.monotonic() - started
    check(p.returncode == 255 and "logged-in" not in out, "ssh: %d %s %s" % (p.returncode, out, err))
    check(took >= AGENT_TIMEOUT_S - 1, "refused at the timeout, not before (%.1f s)" % took)
    check("refused: " in w.agent_text().split("asking for a finger")[-1], "the agent logs the refusal")
    print("       no touch: refused after %.1f s (agent timeout %d s)" % (took, AGENT_TIMEOUT_S))


def another_account_cannot_use_the_socket(w):
    r = w.as_user(["ssh-add", "-L"], user=OTHER, SSH_AUTH_SOCK=w.sock)
    check(r.returncode != 0 and "ecdsa" not in r.stdout, "%s may not: %d %s %s" % (OTHER, r.returncode,
                                                                                     r.stdout, r.stderr))
    mode = os.stat(os.path.dirname(w.sock)).st_mode & 0o777
    check(mode == 0o700 and os.stat(w.sock).st_mode & 0o777 == 0o600, "0600 in 0700: %o" % mode)
    # Root passes the file modes; the agent's SO_PEERCRED check still turns it away.
    r = subprocess.run(["ssh-add", "-L"], env=dict(os.environ, SSH_AUTH_SOCK=w.sock), capture_output=True,
                       text=True, timeout=sandbox.WAIT_S)
    check(r.returncode != 0 and "ecdsa" not in r.stdout, "root may not: %d %s" % (r.returncode, r.stdout))
    check("refused a connection from uid 0" in w.agent_text(), "the agent logs the refusal")


def ssh_add_lists_public_keys(w):
    r = w.as_user(["ssh-add", "-L"], SSH_AUTH_SOCK=w.sock)
    check(r.returncode == 0 and r.stdout.strip() == w.key_line, "ssh-add -L: %r, want %r" % (r.stdout, w.key_line))
    listed = w.as_user([w.ctl, "ssh-key", "list"], check_rc=True).stdout.strip()
    check(listed == w.key_line, "ssh-key list: %r" % listed)


def ssh_add_of_a_file_key_is_refused(w):
    key = os.path.join(w.home, "filekey")
    w.as_user(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check_rc=True)
    r = w.as_user(["ssh-add", key], SSH_AUTH_SOCK=w.sock)
    check(r.returncode != 0, "ssh-add of a file key: %d %s" % (r.returncode, r.stderr))
    check("ssh-add of a key refused: this agent holds only keys a finger releases" in w.agent_text(),
          "the agent says why")
    # ssh-add itself can only say "agent refused operation": a desktop notification tells the person why.
    calls = tail(w.notify_log, 1 << 20)
    check('"ssh-add: key refused" "This ssh agent holds only keys your finger releases' in calls
          and "Keep a second agent for file keys." in calls, "the notification says why: %r" % calls[-600:])
    check(not calls.rstrip().splitlines()[-1].split(" ", 1)[1].startswith("CloseNotification"),
          "and stays: %r" % calls[-300:])


def keygen_sign_and_verify_round_trip(w):
    w.write_user_file("message", "a commit\n", 0o644)
    w.write_user_file("key.pub", w.key_line + "\n", 0o644)
    w.write_user_file("allowed_signers", "%s %s\n" % (USER, w.key_line), 0o644)
    before = w.prompts()
    p = w.m.spawn(w.user_cmd(["ssh-keygen", "-Y", "sign", "-f", "key.pub", "-n", "git", "message"]),
                  env=w.user_env(SSH_AUTH_SOCK=w.sock), cwd=w.home, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
    w.wait_for_prompt(before)
    check("(sign (git) with ssh key %s)" % KEY in w.agent_text(), "the prompt names the namespace")
    w.touch("finger-1")
    out, err = p.communicate(timeout=sandbox.WAIT_S)
    check(p.returncode == 0, "ssh-keygen -Y sign: %s %s" % (out, err))
    r = w.as_user(["ssh-keygen", "-Y", "verify", "-f", "allowed_signers", "-I", USER, "-n", "git", "-s",
                   "message.sig"], stdin="a commit\n")
    check(r.returncode == 0 and "Good" in r.stdout + r.stderr, "verify: %s %s" % (r.stdout, r.stderr))


def git_signs_a_commit_with_the_key_as_the_readme_says(w):
    """README.md: gpg.format ssh, user.signingkey "key::<ssh-key list's line>"; the real git."""
    repo = os.path.join(w.home, "repo")
    git = ["git", "-C", repo]
    w.as_user(["git", "init", "-q", repo], check_rc=True)
    for key, value in (("user.name", USER), ("user.email", USER + "@example.org"), ("gpg.format", "ssh"),
                       ("user.signingkey", "key::" + w.key_line),
                       ("gpg.ssh.allowedSignersFile", os.path.join(w.home, "allowed_signers"))):
        w.as_user(git + ["config", key, value], check_rc=True)
    w.write_user_file("allowed_signers", "%s@example.org %s\n" % (USER, w.key_line), 0o644)
    before = w.prompts()
    p = w.m.spawn(w.user_cmd(git + ["commit", "-q", "-S", "--allow-empty", "-m", "signed"]),
                  env=w.user_env(SSH_AUTH_SOCK=w.sock), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w.wait_for_prompt(before)
    w.touch("finger-1")
    out, err = p.communicate(timeout=sandbox.WAIT_S)
    check(p.returncode == 0, "git commit -S: %s %s" % (out, err))
    r = w.as_user(git + ["verify-commit", "HEAD"])
    check(r.returncode == 0 and "Good" in r.stderr, "git verify-commit: %s %s" % (r.stdout, r.stderr))


def malformed_messages_get_failure_and_the_agent_serves_on(w):
    answers = agent_exchange(w, [
        frame(bytes([200])),  # an unknown number
        frame(bytes([13, 0, 0, 0, 9])),  # a sign request cut short
        frame(bytes([11, 1])),  # bytes after REQUEST_IDENTITIES
        frame(bytes([27]) + sshstr("query")),  # an extension it does not serve
        frame(bytes([22]) + sshstr("pw")),  # lock: not served
        frame(bytes([11])),  # and then a good request
    ])
    check(answers[:5] == [bytes([5])] * 5, "SSH_AGENT_FAILURE for each: %r" % answers)
    check(answers[5][0] == 12 and key_blob(w.key_line) in answers[5], "then the identities: %r" % answers[5][:8])
    check(w.agent.poll() is None, "the agent runs")


def client_text_with_a_newline_cannot_forge_an_agent_log_line(w):
    answers = agent_exchange(w, [frame(bytes([27]) + sshstr("x\nlocalauthctl ssh-agent: forged"))])
    check(answers == [bytes([5])], "SSH_AGENT_FAILURE: %r" % answers)
    check(not any(l.startswith("localauthctl ssh-agent: forged") for l in w.agent_text().splitlines()),
          "no client forges a line of the agent's log")
    check("extension x\\x0alocalauthctl ssh-agent: forged is not supported" in w.agent_text(), "written escaped")


def forwarded_connection_is_refused_without_asking(w):
    before = w.prompts()
    bind = bytes([27]) + sshstr("session-bind@openssh.com") + sshstr(b"hostkey") + sshstr(b"sid") + \
        sshstr(b"sig") + bytes([1])
    userauth = sshstr(b"sid") + bytes([50]) + sshstr(USER) + sshstr("ssh-connection") + sshstr("publickey")
    sign = bytes([13]) + sshstr(key_blob(w.key_line)) + sshstr(userauth) + struct.pack(">I", 0)
    answers = agent_exchange(w, [frame(bind), frame(sign)])
    check(answers == [bytes([6]), bytes([5])], "bound, then refused: %r" % answers)
    check("key %s refused to a forwarded connection" % KEY in w.agent_text(), "the agent says why")
    check(w.prompts() == before, "nobody was asked for a finger")


def socket_activation_serves_the_socket_systemd_passes(w):
    """What the user unit does: systemd holds the socket and starts `localauthctl ssh-agent` with
    it (LISTEN_FDS); here systemd's own systemd-socket-activate."""
    sock = os.path.join(w.home, "activated", "socket")
    os.makedirs(os.path.dirname(sock), mode=0o700)
    os.chown(os.path.dirname(sock), w.uid, w.uid)
    p = w.m.spawn(w.user_cmd(["systemd-socket-activate", "-l", sock, w.ctl, "ssh-agent"]), env=w.user_env(),
                  stdout=subprocess.DEVNULL, stderr=open(w.path("activated.log"), "w"))
    try:
        wait_until(lambda: os.path.exists(sock) or p.poll() is not None, "the socket is held")
        r = w.as_user(["ssh-add", "-L"], SSH_AUTH_SOCK=sock)
        check(r.returncode == 0 and r.stdout.strip() == w.key_line, "ssh-add -L through the passed socket: %s %s %s"
              % (r.stdout, r.stderr, tail(w.path("activated.log"))))
        check("listening on" not in tail(w.path("activated.log")), "the agent used the passed socket")
    finally:
        p.terminate()
        p.wait(timeout=sandbox.WAIT_S)


def forwarding_key_signs_for_a_forwarded_connection_after_a_finger_and_delete_removes_it(w):
    r = w.as_user([w.ctl, "ssh-key", "create", "fwd", "--allow-forwarding"], check_rc=True)
    line = r.stdout.strip().splitlines()[-1]
    check(line.endswith(" localauth:fwd"), "created: %r" % r.stdout)
    for refused in (["--reuse", "301"], ["--requirement", "passcode"]):
        r = w.as_user([w.ctl, "ssh-key", "create", "other"] + refused)
        check(r.returncode == 64, "create %s refused: %d %s" % (refused, r.returncode, r.stderr))
    r = w.as_user([w.ctl, "ssh-key", "create", "fwd"])
    check(r.returncode != 0 and "already" in r.stderr.lower(), "a name is never replaced: %s" % r.stderr)
    listed = w.as_user([w.ctl, "ssh-key", "list"], check_rc=True).stdout.split("\n")
    check(line in listed and w.key_line in listed, "both listed: %r" % listed)
    bind = bytes([27]) + sshstr("session-bind@openssh.com") + sshstr(b"hostkey") + sshstr(b"sid") + \
        sshstr(b"sig") + bytes([1])
    sign = bytes([13]) + sshstr(key_blob(line)) + sshstr(b"data") + struct.pack(">I", 0)
    before = w.prompts()
    script = ("import socket,struct,sys\n"
              "s=socket.socket(socket.AF_UNIX);s.settimeout(30);s.connect(sys.argv[1])\n"
              "def rd(n):\n b=b''\n while len(b)<n: b+=s.recv(n-len(b))\n return b\n"
              "for h in sys.argv[2:]:\n"
              " s.sendall(bytes.fromhex(h));n=struct.unpack('>I',rd(4))[0];print(rd(n)[:1].hex(),flush=True)\n")
    p = w.m.spawn(w.user_cmd(["python3", "-c", script, w.sock, frame(bind).hex(), frame(sign).hex()]),
                  env=w.user_env(), stdout=subprocess.PIPE, text=True)
    w.wait_for_prompt(before)
    w.touch("finger-1")
    out, _ = p.communicate(timeout=sandbox.WAIT_S)
    check(out.split() == ["06", "0e"], "bound, then signed after the finger: %r" % out)
    w.as_user([w.ctl, "ssh-key", "delete", "fwd"], check_rc=True)
    listed = w.as_user([w.ctl, "ssh-key", "list"], check_rc=True).stdout.strip()
    check(listed == w.key_line, "only the first key is left: %r" % listed)
    r = w.as_user([w.ctl, "right", "show", "ssh-key:fwd"])
    check(r.returncode != 0, "the daemon destroyed the right: %s" % r.stdout)


def requester_client(w, scenario, *extra):
    """Tests/ssh/requester_client.py as the account, straight to the daemon: what it answered."""
    r = w.as_user(["/usr/bin/python3", os.path.join(HERE, "requester_client.py"), sandbox.SOCKET,
                   "ssh-key:" + KEY, scenario] + [str(e) for e in extra], timeout=60)
    check(r.returncode == 0 and r.stdout.strip(), "requester client %s: %s %s" % (scenario, r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def daemon_fds(w):
    """The daemon's open descriptors, each with what it is."""
    out = []
    for name in sorted(os.listdir("/proc/%d/fd" % w.m.daemon.pid), key=int):
        try:
            out.append("%s -> %s" % (name, os.readlink("/proc/%d/fd/%s" % (w.m.daemon.pid, name))))
        except OSError:
            pass
    return out


def first_event(answer):
    replies = answer.get("replies", [])
    check(replies and replies[0]["type"] == "EVENT", "an event first: %r" % answer)
    return replies[0]["fields"].get("message", "")


def requester_of_the_account_is_named_by_its_executable_via_the_caller(w):
    """A process of the account that calls the daemon with the pidfd of another of its processes
    can name that process, never itself away: the prompt says "<requester> via <caller>"."""
    other = requester_client(w, "other")
    message = first_event(other)
    check("(/usr/bin/sleep via /usr/bin/python3" in message and "asking to release ssh-key:" + KEY in message,
          "the prompt names sleep via python: %r" % message)
    message = first_event(requester_client(w, "twice"))
    check("(/usr/bin/sleep via /usr/bin/python3" in message, "REQUESTER twice: the last one counts: %r" % message)
    own = requester_client(w, "own")
    message = first_event(own)
    check("(/usr/bin/python3" in message and " via " not in message, "its own pidfd: no via: %r" % message)


def requester_of_another_account_is_refused(w):
    """The pidfd of a root process (the daemon's own) passed by the account: refused, nobody asked."""
    before = len(w.m.audit())
    answer = requester_client(w, "pid", w.m.daemon.pid)
    replies = answer.get("replies", [])
    check(replies and replies[0]["type"] == "ERROR" and "another account" in replies[0]["fields"].get("message", ""),
          "refused: %r" % answer)
    check(not [l for l in w.m.audit()[before:] if "op=rightUse" in l], "no request ran")


def bad_requester_descriptors_are_refused_and_the_daemon_serves_on_without_leaking_one(w):
    fds_before = daemon_fds(w)
    expected = {
        "not-pidfd": "not a pidfd",
        "two": "one descriptor",
        "none": "no descriptor",
        "exited": "has exited",
        "silent": "no descriptor came",
    }
    for scenario, words in expected.items():
        answer = requester_client(w, scenario)
        replies = answer.get("replies", [])
        check(answer["answer"] == "DESCRIPTOR_WANTED", "%s: asked for the descriptor: %r" % (scenario, answer))
        check(replies and replies[0]["type"] == "ERROR" and words in replies[0]["fields"].get("message", ""),
              "%s: an ERROR saying %r: %r" % (scenario, words, answer))
    for scenario in ("hangup", "no-request"):
        answer = requester_client(w, scenario)
        check(answer["answer"] == "DESCRIPTOR_WANTED", "%s: %r" % (scenario, answer))
    check(w.m.daemon.poll() is None, "the daemon runs")
    # The daemon serves on: the account's own process, named, then cancelled.
    check("/usr/bin/python3" in first_event(requester_client(w, "own")), "served after the bad descriptors")
    try:
        # Another client's connection may have closed meanwhile: nothing more, and no pidfd.
        wait_until(lambda: set(daemon_fds(w)) <= set(fds_before) and not any("pidfd" in f for f in daemon_fds(w)),
                   "no descriptor is left open in the daemon", timeout=10)
    except sandbox.Failure:
        raise sandbox.Failure("descriptors before: %s\nafter: %s" % (fds_before, daemon_fds(w)))


def sign_in_background(w, line):
    """One SSH_AGENTC_SIGN_REQUEST for the key `line` over a connection of its own, as the account;
    the process prints the answer's message number."""
    sign = bytes([13]) + sshstr(key_blob(line)) + sshstr(b"data") + struct.pack(">I", 0)
    script = ("import socket,struct,sys\n"
              "s=socket.socket(socket.AF_UNIX);s.settimeout(30);s.connect(sys.argv[1])\n"
              "def rd(n):\n b=b''\n while len(b)<n: b+=s.recv(n-len(b))\n return b\n"
              "s.sendall(bytes.fromhex(sys.argv[2]));n=struct.unpack('>I',rd(4))[0];print(rd(n)[:1].hex())\n")
    return w.m.spawn(w.user_cmd(["python3", "-c", script, w.sock, frame(sign).hex()]), env=w.user_env(),
                     stdout=subprocess.PIPE, text=True)


def reuse_window_signs_again_without_a_finger_until_it_closes(w):
    r = w.as_user([w.ctl, "ssh-key", "create", "quick", "--reuse", "3"], check_rc=True)
    line = r.stdout.strip().splitlines()[-1]
    try:
        before = w.prompts()
        p = sign_in_background(w, line)
        w.wait_for_prompt(before)
        check("(and for 3 seconds after, with this key)" in w.agent_text(), "the prompt says the window")
        w.touch("finger-1")
        check(p.communicate(timeout=sandbox.WAIT_S)[0].strip() == "0e", "signed after the finger")
        # Within the window: signed at once, nobody asked.
        p = sign_in_background(w, line)
        check(p.communicate(timeout=sandbox.WAIT_S)[0].strip() == "0e", "signed in the window")
        check(w.prompts() == before + 1, "no second prompt")
        check("key quick: signed in the reuse window" in w.agent_text(), "the log says so")
        # The window closes by itself; the daemon is told (deauthorize), and the next one asks again.
        wait_until(lambda: "key quick: the reuse window closed" in w.agent_text(), "the window closes", timeout=15)
        uses = [l for l in w.m.audit() if "op=rightUse" in l and 'right="ssh-key:quick"' in l]
        check('operation="6"' in uses[-1] and "result=success" in uses[-1], "deauthorized: %s" % uses[-1:])
        p = sign_in_background(w, line)
        w.wait_for_prompt(before + 1)
        w.touch("finger-1")
        check(p.communicate(timeout=sandbox.WAIT_S)[0].strip() == "0e", "signed after a finger again")
    finally:
        w.as_user([w.ctl, "ssh-key", "delete", "quick"], check_rc=True)


def passcode_from_askpass_logs_in_once_the_daemon_asks_for_it(w):
    """A biometry-or-passcode key: once the request's tries are used by wrong fingers, the daemon
    asks for the passcode, and the agent asks the person through $SSH_ASKPASS (a scripted one here)
    — only then, never while a finger can answer. The real ssh logs in; the daemon checked it."""
    passcode = "Pc-4711-ssh"
    env = dict(os.environ, LOCALAUTHD_SOCKET=sandbox.SOCKET)
    # The misses of earlier cases count towards the lockout: start from none.
    r = subprocess.run([w.ctl, "lockout", "reset", "--user", USER], capture_output=True, text=True, env=env,
                       timeout=sandbox.WAIT_S)
    check(r.returncode == 0, "lockout reset: %s %s" % (r.stdout, r.stderr))
    r = subprocess.run([w.ctl, "passcode", "set", "--user", USER], input=passcode + "\n", text=True,
                       capture_output=True, env=env, timeout=sandbox.WAIT_S)
    check(r.returncode == 0, "passcode set: %s %s" % (r.stdout, r.stderr))
    line = w.as_user([w.ctl, "ssh-key", "create", "pc", "--requirement", "biometry-or-passcode"],
                     check_rc=True).stdout.strip().splitlines()[-1]
    w.write_user_file(".ssh/authorized_keys", w.key_line + "\n" + line + "\n", 0o600)
    w.write_user_file("pc.pub", line + "\n", 0o644)
    asked = os.path.join(w.home, "askpass.log")
    w.write_user_file("askpass", "#!/bin/sh\nprintf '%%s\\n' \"$1\" >> %s\necho '%s'\n" % (asked, passcode), 0o755)
    sock = os.path.join(w.home, "agent-pc", "socket")
    log = w.path("agent-pc.log")
    agent = w.m.spawn(w.user_cmd([w.ctl, "ssh-agent", "--socket", sock, "--timeout", str(AGENT_TIMEOUT_S)]),
                      env=w.user_env(SSH_ASKPASS=os.path.join(w.home, "askpass")), stdout=subprocess.DEVNULL,
                      stderr=open(log, "w"))
    try:
        wait_until(lambda: os.path.exists(sock), "the second agent listens")

        def ssh():
            return w.m.spawn(w.user_cmd([
                "ssh", "-F", "/dev/null", "-p", str(w.port), "-o", "IdentityAgent=" + sock, "-o", "IdentitiesOnly=yes",
                "-i", os.path.join(w.home, "pc.pub"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
                USER + "@127.0.0.1", "echo", "logged-in-as-$(id -un)"]),
                env=w.user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def prompts():
            text = tail(log, 1 << 20)
            return text.count("Place your") + text.count("try again")
        p = ssh()
        for n in range(3):  # the request's three tries: the first prompt, then each "try again"
            wait_until(lambda: prompts() > n or p.poll() is not None, "a prompt")
            check(not os.path.exists(asked), "no passcode asked while a finger may answer: %s" % tail(log))
            time.sleep(0.3)  # the reader's next scan has begun: a touch sent sooner can be lost
            w.touch("finger-2")
        out, err = p.communicate(timeout=AGENT_TIMEOUT_S + sandbox.WAIT_S)
        check(p.returncode == 0 and "logged-in-as-" + USER in out, "ssh after the passcode: %d %s %s\nagent: %s\ndaemon: %s" % (
            p.returncode, out, err, tail(log, 3000), "\n".join(w.m.audit()[-6:])))
        prompt = open(asked).read()
        check(prompt.count("\n") == 1 and "log in as %s on [127.0.0.1]:%d with ssh key pc" % (USER, w.port) in prompt,
              "askpass asked once, saying what for: %r" % prompt)
        check("the passcode, from SSH_ASKPASS, goes to the daemon" in tail(log, 1 << 20), "the agent's log says so")
        uses = [l for l in w.m.audit() if "op=rightUse" in l and 'right="ssh-key:pc"' in l]
        check(uses and "result=success" in uses[-1], "the daemon decided: %s" % uses[-1:])
    finally:
        agent.terminate()
        agent.wait(timeout=sandbox.WAIT_S)
        w.as_user([w.ctl, "ssh-key", "delete", "pc"])


CASES = [
    ("socket_activation_serves_the_socket_systemd_passes", socket_activation_serves_the_socket_systemd_passes),
    ("enrolled_finger_logs_in", enrolled_finger_logs_in),
    ("ssh_add_lists_public_keys", ssh_add_lists_public_keys),
    ("keygen_sign_and_verify_round_trip", keygen_sign_and_verify_round_trip),
    ("git_signs_a_commit_with_the_key_as_the_readme_says", git_signs_a_commit_with_the_key_as_the_readme_says),
    ("another_account_cannot_use_the_socket", another_account_cannot_use_the_socket),
    ("ssh_add_of_a_file_key_is_refused", ssh_add_of_a_file_key_is_refused),
    ("malformed_messages_get_failure_and_the_agent_serves_on", malformed_messages_get_failure_and_the_agent_serves_on),
    ("client_text_with_a_newline_cannot_forge_an_agent_log_line",
     client_text_with_a_newline_cannot_forge_an_agent_log_line),
    ("forwarded_connection_is_refused_without_asking", forwarded_connection_is_refused_without_asking),
    ("client_gone_mid_wait_cancels_the_request", client_gone_mid_wait_cancels_the_request),
    ("no_touch_is_refused_at_the_timeout", no_touch_is_refused_at_the_timeout),
    ("forwarding_key_signs_for_a_forwarded_connection_after_a_finger_and_delete_removes_it",
     forwarding_key_signs_for_a_forwarded_connection_after_a_finger_and_delete_removes_it),
    ("reuse_window_signs_again_without_a_finger_until_it_closes",
     reuse_window_signs_again_without_a_finger_until_it_closes),
    ("wrong_finger_is_refused", wrong_finger_is_refused),
    ("requester_of_the_account_is_named_by_its_executable_via_the_caller",
     requester_of_the_account_is_named_by_its_executable_via_the_caller),
    ("requester_of_another_account_is_refused", requester_of_another_account_is_refused),
    ("bad_requester_descriptors_are_refused_and_the_daemon_serves_on_without_leaking_one",
     bad_requester_descriptors_are_refused_and_the_daemon_serves_on_without_leaking_one),
    ("passcode_from_askpass_logs_in_once_the_daemon_asks_for_it",
     passcode_from_askpass_logs_in_once_the_daemon_asks_for_it),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    args.module, args.bin = os.path.abspath(args.module), os.path.abspath(args.bin)
    sandbox.enter("LA_SSH_SANDBOX")

    def on_failure(w):
        print("       agent log: %s" % w.agent_text()[-1200:].replace("\n", "\n       "))
        print("       daemon: %s" % w.m.daemon_tail(600).replace("\n", "\n       "))

    passed, failed = sandbox.run_cases(lambda: World(args), CASES, only=args.k, on_failure=on_failure)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
