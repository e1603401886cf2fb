# SPDX-License-Identifier: Apache-2.0
"""A booted Debian 12 for the booted-system tier (make test-boot): the cached root
(Tests/boot/root.sh) under an overlay (a copy where overlayfs cannot be mounted), booted with
systemd-nspawn, systemd as PID 1, its console a pseudo-terminal in a tmux server on this machine,
commands run inside it with nsenter, and libfprint's virtual reader touched with root's
`localauthctl simulate`. Nothing here is a mock: systemd, logind, journald, the bus,
polkitd, sudo, su and login are the root's own."""
import os
import re
import shutil
import subprocess
import time

WAIT_S = 30.0
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class BootFailure(Exception):
    """The machine could not be booted or reached: the tier fails with this reason."""


class Machine:
    def __init__(self, cached_root, work, name="latier"):
        self.work = work
        self.name = name
        self.root = os.path.join(work, "root")
        t0 = time.monotonic()
        # The cached root stays as it is: an overlay over it takes every write of this run (a
        # copy where overlayfs cannot be mounted).
        upper, scratch = os.path.join(work, "upper"), os.path.join(work, "overlay-work")
        for d in (self.root, upper, scratch):
            os.mkdir(d)
        self.overlay = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s" % (
                os.path.abspath(cached_root), upper, scratch), self.root], capture_output=True).returncode == 0
        if not self.overlay:
            os.rmdir(self.root)
            subprocess.run(["cp", "-a", "--reflink=auto", cached_root, self.root], check=True)
        self.copy_s = time.monotonic() - t0
        with open(os.path.join(self.root, "etc/hostname"), "w") as f:
            f.write(name + "\n")
        # As the Debian installer writes it: sudo resolves the host's own name.
        with open(os.path.join(self.root, "etc/hosts"), "a") as f:
            f.write("127.0.1.1\t%s\n" % name)
        self.sock = os.path.join(work, "tmux.socket")
        self.leader = None
        self.nspawn = None
        self.console_log = os.path.join(work, "console.log")

    # -- the console -------------------------------------------------------------------------

    def tmux(self, *args, check=True):
        r = subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True,
                           timeout=WAIT_S)
        if check and r.returncode != 0:
            raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def boot(self, timeout=120):
        """Boots the copy; returns the seconds from systemd-nspawn's start to
        `systemctl is-system-running --wait` answering."""
        t0 = time.monotonic()
        # The options before the pane starts: a systemd-nspawn that fails at once leaves its words.
        conf = os.path.join(self.work, "tmux.conf")
        with open(conf, "w") as f:
            f.write("set-option -g history-limit 50000\nset-option -g remain-on-exit on\n")
        self.tmux("-f", conf, "new-session", "-d", "-s", "console", "-x", "200", "-y", "50",
                  "systemd-nspawn", "-D", self.root, "--boot", "--register=no", "--keep-unit",
                  "--machine=" + self.name)
        self.tmux("pipe-pane", "-t", "console", "cat >> '%s'" % self.console_log, check=False)
        self.nspawn = int(self.tmux("display-message", "-p", "#{pane_pid}").strip())
        deadline = time.monotonic() + timeout
        while self.leader is None:
            self.leader = self._find_leader()
            if self.leader is None:
                if not os.path.exists("/proc/%d" % self.nspawn) or time.monotonic() > deadline:
                    raise BootFailure("systemd-nspawn did not start systemd as PID 1:\n%s" % self.screen()[-3000:])
                time.sleep(0.1)
        while True:
            # Until systemd's own socket is up, systemctl prints nothing and fails.
            r = self.sh("systemctl is-system-running --wait", check=False,
                        timeout=max(1, deadline - time.monotonic()))
            state = r.stdout.strip()
            if state not in ("", "offline") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if state != "running":
            failed = self.sh("systemctl --failed --no-legend", check=False).stdout
            raise BootFailure("the booted system is %r, not running; failed units:\n%s\n%s" % (
                state, failed, self.screen()[-3000:]))
        return time.monotonic() - t0

    def _find_leader(self):
        """The container's systemd: a descendant of systemd-nspawn whose pid in its own pid
        namespace is 1."""
        children = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
        todo = list(children.get(self.nspawn, []))
        while todo:
            pid = todo.pop()
            try:
                with open("/proc/%d/status" % pid) as f:
                    nspid = [l for l in f if l.startswith("NSpid:")][0].split()
                if len(nspid) >= 3 and nspid[-1] == "1":
                    return pid
            except (OSError, IndexError):
                pass
            todo.extend(children.get(pid, []))
        return None

    def screen(self, target="console"):
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", target).rstrip("\n")

    def keys(self, *keys):
        for k in keys:
            if k in ("Enter", "C-c", "C-d", "C-u"):
                self.tmux("send-keys", "-t", "console", k)
            else:
                self.tmux("send-keys", "-t", "console", "-l", k)

    def type_line(self, text):
        self.keys(text, "Enter")

    def mark(self):
        return len(self.screen())

    def wait_for(self, cond, what, since=0, timeout=WAIT_S, screen=None):
        """Polls the console until cond(screen[since:]) holds (a string: appears); returns the
        text since the mark and the seconds waited."""
        screen = screen or self.screen
        test = (lambda s: cond in s) if isinstance(cond, str) else cond
        t0 = time.monotonic()
        while True:
            s = screen()[since:]
            if test(s):
                return s, time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise AssertionError("%s: not on the screen within %.0f s:\n%s" % (what, timeout, s[-2500:]))
            time.sleep(0.02)

    # -- commands inside ---------------------------------------------------------------------

    def sh(self, command, check=True, input=None, timeout=120, user=None):
        """Runs `sh -c command` inside (as root, or as user through setpriv), outside any login
        session, as a service or an administrator's script would."""
        r = subprocess.run(self.argv(command, user), capture_output=True, text=True, input=input, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("inside: %s: exit %d\n%s%s" % (command, r.returncode, r.stdout, r.stderr))
        return r

    def argv(self, command, user=None):
        """What sh runs on this machine: `sh -c command` inside, as root or as user (for a
        caller that starts it itself, e.g. to read its output while it runs)."""
        prefix = []
        if user:
            prefix = ["setpriv", "--reuid", user, "--regid", user, "--init-groups", "--"]
        return ["nsenter", "-t", str(self.leader), "-a", "-r", "-w", "--", "env", "-i", "PATH=" + PATH,
                "LANG=C.UTF-8", "HOME=/root" if not user else "HOME=/home/" + user] + prefix + ["sh", "-c", command]

    def out(self, command, **kw):
        return self.sh(command, **kw).stdout

    def write(self, path, text, mode=0o644):
        full = self.root + path
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        os.chmod(full, mode)

    def exists(self, path):
        return os.path.lexists(self.root + path)

    def journal(self, *args):
        """journalctl's JSON records for these matches, this boot."""
        import json
        out = self.out("journalctl -b -o json --no-pager " + " ".join(args), check=False)
        return [json.loads(l) for l in out.splitlines() if l.startswith("{")]

    def can(self, capability):
        """Whether the container's PID 1 has this capability in its bounding set."""
        bits = {"CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21, "CAP_SYS_RESOURCE": 24}
        with open("/proc/%d/status" % self.leader) as f:
            bnd = int([l for l in f if l.startswith("CapBnd:")][0].split()[1], 16)
        return bool(bnd >> bits[capability] & 1)

    # -- the reader --------------------------------------------------------------------------

    def touch(self, finger):
        """A finger on libfprint's virtual reader (`virtual-reader = yes`): root's
        `localauthctl simulate touch`, as the README's "Trying it without hardware" does."""
        r = self.sh("localauthctl simulate touch %s" % finger, check=False, timeout=30)
        if r.returncode != 0:
            raise AssertionError("localauthctl simulate touch %s: %s%s" % (finger, r.stdout, r.stderr))

    # -- the end -----------------------------------------------------------------------------

    def poweroff(self, timeout=30):
        """systemctl poweroff inside; then SIGTERM to systemd-nspawn (which halts the
        container); then SIGKILL."""
        if self.leader:
            self.sh("systemctl poweroff", check=False, timeout=10)
        for sig, wait in ((None, timeout), (15, 10), (9, 5)):
            if sig and self.alive():
                os.kill(self.nspawn, sig)
            deadline = time.monotonic() + wait
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
        self.tmux("kill-server", check=False)

    def reboot(self):
        """Off, and booted again from the same root (systemd-nspawn ends on a reboot)."""
        self.poweroff()
        self.leader = None
        return self.boot()

    def alive(self):
        try:
            with open("/proc/%d/stat" % self.nspawn) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, TypeError):
            return False

    def remove(self):
        if self.overlay:
            subprocess.run(["umount", self.root], check=False)
        shutil.rmtree(self.work, ignore_errors=True)


def lines(s):
    return [l for l in s.splitlines() if l.strip()]


def has_line(s, pattern):
    return re.search(pattern, s, re.M) is not None
