# SPDX-License-Identifier: Apache-2.0
"""A private machine for the fprintd door's tests: test users, the system bus, polkitd, localauthd.

Runs as root inside its own mount and pid namespaces (`unshare --mount --pid --fork --mount-proc`,
which `run.sh` sets up), so nothing of the host changes and every process it starts dies with it:

- /etc is a private copy, bind-mounted over the real one, whose passwd, group and shadow have the
  test users added (ladbus1…ladbus4, each with a known password). A copy of the directory, not of
  the three files: a file bind-mounted over /etc/passwd is detached by the kernel as soon as anything
  on the host replaces /etc/passwd (any `useradd`), and the test users would vanish mid-run
  (issue 26; Tests/fprintd/host-passwd-churn.sh proves it no longer happens);
- /run/dbus is a tmpfs where the real `dbus-daemon --system` listens with the machine's own
  system.conf, its system.d replaced by a folder holding polkit's bus policy and ours
  (packaging/fprintd-compat/net.reactivated.Fprint.conf): the bus enforces the policy we ship;
- the real polkitd reads our polkit actions (packaging/fprintd-compat/net.reactivated.fprint.device.policy)
  and the test rules below, which stand for what logind would tell polkit on a real machine;
- localauthd runs with --fprintd-compat --virtual-reader on a temporary socket and state directory.
"""
import crypt
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "pam", "tests"))
import procs  # noqa: E402
import seat  # noqa: E402  (python-dbusmock's logind: seat.LogindMock)
PACKAGING = os.path.join(REPO, "packaging", "fprintd-compat")
POLKITD = "/usr/lib/polkit-1/polkitd"
DEVICE = "/net/reactivated/Fprint/Device/0"

# The test users and what polkit allows each, as the rules file below says. On a real machine
# the defaults of our policy file give an active local session verify=yes and
# enroll=auth_self_keep, and everyone else no: ladbus1 is such a person at the machine, ladbus2
# is a user with no active session (ssh, another seat), ladbus3 is a user for whom an
# administrator's rule allows enrolment without authentication, ladbus4 may, by polkit, act for
# other users (setusername), which localauthd must not honour; for ladbus1 that takes an
# administrator's password, as the defaults say for an active session. polkit answers ladbus5's
# verify with yes after 1.5 s (a busy polkitd, an agent's dialog): time for its client to leave.
USERS = {
    "ladbus1": 64201,
    "ladbus2": 64202,
    "ladbus3": 64203,
    "ladbus4": 64204,
    "ladbus5": 64205,
}
RULES = """
polkit.addRule(function(action, subject) {
  var verify = "net.reactivated.fprint.device.verify";
  var enroll = "net.reactivated.fprint.device.enroll";
  var setusername = "net.reactivated.fprint.device.setusername";
  if (subject.user == "ladbus1" || subject.user == "ladbus4") {
    if (action.id == verify) return polkit.Result.YES;
    if (action.id == enroll) return polkit.Result.AUTH_SELF_KEEP;
    if (action.id == setusername && subject.user == "ladbus4") return polkit.Result.YES;
    if (action.id == setusername) return polkit.Result.AUTH_ADMIN_KEEP;
  }
  if (subject.user == "ladbus3") {
    if (action.id == verify || action.id == enroll) return polkit.Result.YES;
  }
  if (subject.user == "ladbus5" && action.id == verify) {
    var until = Date.now() + 1500;
    while (Date.now() < until) {}
    return polkit.Result.YES;
  }
});
"""


def read(path):
    with open(path) as f:
        return f.read()


def password(user):
    return "pw-" + user


def wait_for(what, predicate, timeout=15.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting for " + what)


class Client:
    """Tests/fprintd/client.py as one user: one bus connection, JSON commands."""

    def __init__(self, world, user=None, path=DEVICE):
        cmd = ["/usr/bin/python3", os.path.join(REPO, "Tests", "fprintd", "client.py"), path]
        if user:
            uid = USERS[user]
            cmd = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] + cmd
        self.user = user
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=world.env())
        ready = json.loads(self.proc.stdout.readline())
        self.name = ready["ready"]
        self.pid = self.proc.pid

    def send(self, **command):
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("client.py exited")
        return json.loads(line)

    def call(self, method, *args, signature=None):
        command = {"call": method, "args": list(args)}
        if signature is not None:
            command["signature"] = signature
        return self.send(**command)

    def call_with_agent(self, agent, method, *args, timeout=60):
        """A call that makes polkit ask the agent for a password: the agent is served meanwhile."""
        self.proc.stdin.write(json.dumps({"call": method, "args": list(args)}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            if ready:
                return json.loads(self.proc.stdout.readline())
            agent.pump(0.05)
        raise AssertionError("no answer to %s within %d s; the agent printed %r" % (method, timeout, agent.output))

    def ok(self, method, *args):
        answer = self.call(method, *args)
        if "ok" not in answer:
            raise AssertionError("%s%r: %r" % (method, args, answer))
        return answer["ok"]

    def wait(self, signal_name, timeout=10):
        return self.send(wait=signal_name, timeout=timeout)

    def signals(self):
        return self.send(signals=True)["ok"]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send(quit=True)
            except (BrokenPipeError, AssertionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except BrokenPipeError:
                pass


class Agent:
    """polkit's own text agent (`pkttyagent --process PID`) for one client process, run as its user
    in a pseudo-terminal; it types the next of `typed` each time the agent asks for the password."""

    def __init__(self, world, user, pid, typed):
        self.typed = list(typed)
        self.output = b""
        self.prompts = 0
        uid = USERS[user]
        registered, notify = os.pipe()
        os.set_inheritable(notify, True)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.close(registered)
            os.execvpe("setpriv", ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                                   "pkttyagent", "--notify-fd", str(notify), "--process", str(pid)], world.env())
        os.close(notify)
        # pkttyagent closes the fd once polkitd has its registration.
        ready, _, _ = select.select([registered], [], [], 10)
        os.close(registered)
        if not ready:
            raise AssertionError("pkttyagent did not register")

    def pump(self, seconds):
        """Reads what the agent prints for `seconds`, answering each password prompt."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return
            if not data:
                return
            self.output += data
            while self.output.count(b"Password:") > self.prompts:
                self.prompts += 1
                if self.typed:
                    self.type_once_it_reads(self.typed.pop(0))

    def type_once_it_reads(self, text):
        """Types `text` once the agent reads the password. pkttyagent prints the prompt, then turns
        echo off with tcsetattr(TCSAFLUSH), which throws away whatever was typed in between: a
        password typed as soon as the prompt showed was lost now and then under load, and the
        agent waited for it until the call's 60 s ran out. Echo off (the pty's settings, which
        the master reads) comes after that flush."""
        deadline = time.monotonic() + 30
        while termios.tcgetattr(self.fd)[3] & termios.ECHO:
            if time.monotonic() > deadline:
                raise AssertionError("the agent never turned echo off for the password; it printed %r"
                                     % self.output)
            time.sleep(0.002)
        os.write(self.fd, text.encode() + b"\n")

    def close(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


class World:
    def __init__(self, bin_dir):
        if os.getuid() != 0 or os.getpid() != 1:
            raise SystemExit("run through Tests/fprintd/run.sh (root, own mount and pid namespace)")
        self.bin = bin_dir
        self.tmp = tempfile.mkdtemp(prefix="la-dbus-")
        os.chmod(self.tmp, 0o755)  # the test users reach the daemon's socket in it
        self.procs = []
        self.daemon = None
        self.mounts = []

    # --- the machine ---------------------------------------------------------------------------

    def setup(self):
        etc = os.path.join(self.tmp, "etc")
        # The host may be replacing its account files meanwhile (host-passwd-churn.sh: useradd's
        # lock and backup files come and go): a file that vanished while cp walked /etc is not copied,
        # which is all that can be wanted of it; any other error fails the set-up.
        copy = subprocess.run(["cp", "-a", "/etc", etc], stderr=subprocess.PIPE, text=True)
        errors = copy.stderr.splitlines()
        if copy.returncode != 0 and (not errors or not all(e.endswith("No such file or directory") for e in errors)):
            raise RuntimeError("cannot copy /etc: %s" % copy.stderr)
        with open(os.path.join(etc, "passwd"), "a") as p, open(os.path.join(etc, "group"), "a") as g, \
                open(os.path.join(etc, "shadow"), "a") as s:
            for user, uid in USERS.items():
                p.write("%s:x:%d:%d:fprintd door test:/nonexistent:/bin/sh\n" % (user, uid, uid))
                g.write("%s:x:%d:\n" % (user, uid))
                s.write("%s:%s:19000:0:99999:7:::\n" % (user, crypt.crypt(password(user), crypt.mksalt(crypt.METHOD_SHA512))))
        self.bind(etc, "/etc")

        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run/dbus"], check=True)
        system_d = self.folder("system.d", {
            "org.freedesktop.PolicyKit1.conf": read("/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"),
            "org.freedesktop.login1.conf": read("/usr/share/dbus-1/system.d/org.freedesktop.login1.conf"),
            "net.reactivated.Fprint.conf": read(os.path.join(PACKAGING, "net.reactivated.Fprint.conf")),
        })
        self.bind(system_d, "/usr/share/dbus-1/system.d")
        self.bind(self.folder("etc-system.d", {}), "/etc/dbus-1/system.d")
        self.bind(self.folder("actions", {
            "net.reactivated.fprint.device.policy":
                read(os.path.join(PACKAGING, "net.reactivated.fprint.device.policy")),
        }), "/usr/share/polkit-1/actions")
        self.bind(self.folder("rules", {"50-localauth-test.rules": RULES}), "/etc/polkit-1/rules.d")

        self.start(["dbus-daemon", "--system", "--nofork", "--nopidfile", "--nosyslog"], "dbus.log")
        wait_for("the system bus", lambda: os.path.exists("/run/dbus/system_bus_socket"))
        self.start([POLKITD, "--no-debug"], "polkitd.log")
        wait_for("polkitd", lambda: self.owner("org.freedesktop.PolicyKit1"))
        # logind (python-dbusmock's, on this bus): every process in an active local greeter session
        # on seat0, where the daemon's presence rule lets a caller ask for any account (docs/security.md,
        # "Who may be asked for a finger"), as the other harnesses stand. `self.logind` takes
        # logind_mock.py's commands (e.g. "place 64202 none").
        mock_dir = tempfile.mkdtemp(prefix="logind-", dir=self.tmp)
        self.logind = seat.LogindMock(mock_dir, on_bus="unix:path=/run/dbus/system_bus_socket", env=self.env())
        self.procs.append(self.logind.process)

    def logind_command(self, command):
        """One logind_mock.py command; returns its answer line."""
        return self.logind.say(command)

    def folder(self, name, files):
        path = os.path.join(self.tmp, name)
        os.mkdir(path, 0o755)
        for file, text in files.items():
            with open(os.path.join(path, file), "w") as f:
                f.write(text)
            os.chmod(os.path.join(path, file), 0o644)
        return path

    def bind(self, source, target):
        subprocess.run(["mount", "--bind", source, target], check=True)
        self.mounts.append(target)

    def env(self):
        env = dict(os.environ)
        env.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        env["LOCALAUTHD_SOCKET"] = os.path.join(self.tmp, "socket")
        return env

    def start(self, cmd, log, env=None):
        with open(os.path.join(self.tmp, log), "a") as stderr:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env or self.env())
        self.procs.append(proc)
        return proc

    def owner(self, name):
        r = subprocess.run(["busctl", "--system", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                            "org.freedesktop.DBus", "GetNameOwner", "s", name], capture_output=True, text=True)
        return r.stdout.split()[1].strip('"') if r.returncode == 0 else None

    # --- localauthd ------------------------------------------------------------------------------

    def start_daemon(self, extra=(), keep_state=False, config=None, env=None):
        self.stop_daemon()
        self.state = os.path.join(self.tmp, "state")
        if not keep_state:
            shutil.rmtree(self.state, ignore_errors=True)
        # Never the machine's own /var/lib/fprint: only what a test puts there is imported.
        config = config if config is not None else "fprintd-state-dir = %s/no-fprintd\n" % self.tmp
        path = os.path.join(self.tmp, "localauthd.conf")
        with open(path, "w") as f:
            f.write(config)
        extra = ("--config", path, *extra)
        self.daemon_log = os.path.join(self.tmp, "localauthd.log")
        open(self.daemon_log, "w").close()
        self.daemon = self.start([os.path.join(self.bin, "localauthd"), "--socket", os.path.join(self.tmp, "socket"),
                                  "--state-dir", self.state, "--virtual-reader", "--fprintd-compat", *extra],
                                 "localauthd.log", env=dict(self.env(), **(env or {})))
        try:
            wait_for("localauthd on the bus", lambda: self.owner("net.reactivated.Fprint"), timeout=30)
        except AssertionError:
            raise AssertionError("localauthd did not take the bus name; its log:\n" + self.log())

    def stop_daemon(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait(timeout=15)
        self.daemon = None

    def log(self):
        return read(self.daemon_log)

    def virtual(self, command, patience=10.0, path=None):
        """One command to libfprint's virtual device (bound while the reader is open)."""
        path = path or os.path.join(self.state, "virtual-reader.socket")
        deadline = time.monotonic() + patience
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise AssertionError("the virtual reader never listened for " + command)
                time.sleep(0.02)
        with s:
            s.sendall(command.encode())
            s.shutdown(socket.SHUT_WR)
            while s.recv(4096):
                pass

    def ctl(self, *args, user=None, stdin=None):
        cmd = [os.path.join(self.bin, "localauthctl"), *args]
        if user:
            cmd = ["setpriv", "--reuid=%d" % USERS[user], "--regid=%d" % USERS[user], "--clear-groups"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True, input=stdin, env=self.env(), timeout=60)

    def enrol_as_root(self, user, finger="right-index-finger", print_id=None):
        """A first finger the way the README says: root enrols it over the socket (again if it was)."""
        self.ctl("delete", "--user", user, "--finger", finger)
        proc = subprocess.Popen([os.path.join(self.bin, "localauthctl"), "enroll", "--user", user, "--finger", finger],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env())
        for _ in range(5):
            self.virtual("SCAN " + (print_id or user + "-" + finger))
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=30)
        if proc.returncode != 0:
            raise AssertionError("enrolment of %s failed: %s" % (user, out))

    def teardown(self):
        self.stop_daemon()
        if getattr(self, "logind", None):
            self.logind.stop()
        procs.stop_all(self.procs)
        # The binds under the private /etc are mount points inside self.tmp: gone first, so that
        # nothing of the run is left behind.
        for target in reversed(self.mounts):
            subprocess.run(["umount", "--lazy", target], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)
