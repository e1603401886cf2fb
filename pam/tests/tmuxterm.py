# SPDX-License-Identifier: Apache-2.0
"""A real terminal for the tests: a tmux server run as the test user, one window, a shell in
it. What a person sees is read with capture-pane; keys go in with send-keys. The server runs
in the caller's mount namespace, so the programs it starts see the sandbox's files."""
import os
import pwd
import shutil
import subprocess
import time

WAIT_S = 30.0


class Terminal:
    def __init__(self, root, user, width=160, height=50, env=None, shell=("dash", "-i"), name=None):
        """name: the terminal's own, when one user has two (default: the user's)."""
        pw = pwd.getpwnam(user)
        self.user = user
        self.dir = os.path.join(root, "tmux-" + (name or user))
        os.mkdir(self.dir, 0o700)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.sock = os.path.join(self.dir, "socket")
        self.prefix = ["setpriv", "--reuid", str(pw.pw_uid), "--regid", str(pw.pw_gid),
                       "--init-groups", "--"] if pw.pw_uid != 0 else []
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user,
                    "LOGNAME": user, "SHELL": "/bin/bash", "TERM": "screen", "LANG": "C.UTF-8"}
        self.env.update(env or {})
        # A plain shell with job control and no line editor of its own (dash): it never
        # touches the terminal settings, so whatever a program leaves behind stays visible.
        # A prompt the tests can find ("$ ").
        self.run("-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y", str(height),
                 "env", "PS1=$ ", "ENV=", *shell)
        self.run("set-option", "-g", "history-limit", "5000")
        self.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt")

    def run(self, *args, check=True):
        r = subprocess.run(self.prefix + ["tmux", "-S", self.sock, *args], env=self.env,
                           capture_output=True, text=True, timeout=WAIT_S, cwd="/")
        if check and r.returncode != 0:
            raise RuntimeError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def screen(self):
        """The whole pane, scrollback included, trailing blank lines dropped."""
        return self.run("capture-pane", "-p", "-J", "-S", "-").rstrip("\n")

    def keys(self, *keys):
        """tmux key names: "Enter", "C-c", "C-\\\\"; anything else is typed literally."""
        for k in keys:
            if k in ("Enter", "C-c", "C-\\", "C-d", "C-z", "C-u", "BSpace"):
                self.run("send-keys", k)
            else:
                self.run("send-keys", "-l", k)

    def type_line(self, text):
        self.keys(text, "Enter")

    def wait_for(self, cond, what, timeout=WAIT_S, since=0):
        """Polls the screen until cond(screen[since:]) holds; returns (screen, time.monotonic()
        of the capture that first showed it). A string cond means "this text appears"."""
        test = (lambda s: cond in s) if isinstance(cond, str) else cond
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            seen = time.monotonic()
            if test(s[since:]):
                return s, seen
            if seen > deadline:
                raise AssertionError("%s: not on the screen within %.0f s:\n%s" % (
                    what, timeout, s[-1500:]))
            time.sleep(0.003)

    def mark(self):
        """A position in the screen text; later waits look only after it."""
        return len(self.screen())

    def pane_pid(self):
        return int(self.run("display-message", "-p", "#{pane_pid}").strip())

    def close(self):
        self.run("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
