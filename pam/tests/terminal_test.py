# SPDX-License-Identifier: Apache-2.0
"""The real sudo, su and login in a real terminal in front of pam_localauth (issue 14).

A tmux server run as an ordinary user (lapamalice, finger enrolled) gives the real Debian sudo
1.9.13 a pseudo-terminal; what the person sees is read with capture-pane, keys go in with
send-keys. Everything runs in a private mount namespace (sandbox.py): scratch /etc/pam.d,
/etc/sudoers, accounts with known passwords, pam_localauth.so in the module directory, and
the real localauthd on its default socket with libfprint's virtual reader. /etc/pam.d/sudo is
Debian's with `@include common-auth` replaced by the lines README.md gives (read from
README.md itself), and common-auth is Debian's stock file; su and login get pam/examples/su
and login; the profile cases use /etc/pam.d/sudo as Debian ships it and the common-auth that
the real pam-auth-update writes with pam/pam-configs/localauth enabled. The shell is dash,
which never touches the terminal settings, and after every case `stty -g` must print what it
printed before: a case that leaves echo off fails.

Cases (issue 14): (a) prompt shown, finger -> root; (b) wrong fingers, then the password ->
root; after the last finger a request takes, and after the fifth miss in a row, one line and
then sudo's own prompt, the module's not put up again (issue 26); (c) Ctrl-C and Ctrl-\\ in the finger wait -> sudo's own password prompt at once, nothing
counted, the reader free; su ends; (d) daemon stopped -> the password prompt at once;
(e) the password typed at the prompt -> root without the reader, asked once; (f) a finger while
a password is half typed -> root, the typed text dropped; (g) `echo PW | sudo -S` -> root
without the reader, `sudo -n` fails at once; a closed lid (issue 16; the ACPI button, no logind)
gives the password prompt at once and says why; while alice's sudo holds the reader, another
user's su and alice's second sudo are each told so at once (whose, only to alice); with
Debian's pam_fprintd profile and localauthd's fprintd door on the system bus, sudo's
pam_fprintd takes alice's finger and another user's su gets none. Then the
ways out that must leave the terminal as it was: the daemon killed, sudo killed with SIGTERM,
the terminal closed, Ctrl-Z and fg. And the
red team's scenario (issue 13, C2): another user's `su lapamalice` gets no finger while alice's
own request gets her touch; `login` run by root in a pseudo-terminal gets the password. After a
reboot (issue 17: a fresh boot id) the finger is refused at once with "Password required after
restart", the password gives root, and sudo's report lets the finger in again. Each
step's time is printed (time.monotonic() before send-keys to the capture that shows the
result, so tmux's own few milliseconds are included); assertions use generous bounds.

Usage: terminal_test.py --module SO --bin DIR [--runs N] [-k NAME] [--json FILE]   (as root)
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandbox  # noqa: E402
import tmuxterm  # noqa: E402
from stacks_test import code_blocks  # noqa: E402
from sandbox import Failure, check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "README.md")
EXAMPLES = os.path.join(HERE, "..", "examples")
ALICE, ALICE_PW = "lapamalice", "Alice-pass 4711"
# The red team's attacker (issue 13, C2): another user of the machine, at a terminal of their own.
MALLORY, MALLORY_PW = "lacoremallory", "Mallory-pass 0815"
PROMPT = "Password or finger for %s: " % ALICE
SUDO_PROMPT = "[sudo] password for %s:" % ALICE
# Generous bounds for a loaded 2-core machine; the figures printed are what counts.
AT_ONCE_S = 2.0
REQUIRED_AFTER_RESTART = "Password required after restart"
FIGURES = {}


def figure(name, seconds):
    FIGURES.setdefault(name, []).append(seconds)
    return seconds


def readme_stack():
    """The lines README.md's PAM section tells a person to put in /etc/pam.d/sudo in place of
    its `@include common-auth` (the block shows that line with the module's before it)."""
    text = open(README).read()
    section = text[text.index("\n## PAM\n"):]
    section = section[:section.index("\n## ", 1)]
    for block in code_blocks(section)[0]:
        lines = [l for l in block if l.startswith(("auth", "@include"))]
        if any("pam_localauth.so" in l for l in lines):
            return lines
    raise Failure("README.md's PAM section has no auth lines with pam_localauth.so")


class World:
    def __init__(self, args):
        self.args = args
        self.m = sandbox.Machine(args.module, args.bin, {ALICE: ALICE_PW, MALLORY: MALLORY_PW})
        # German and Korean for the language cases: the locales and the module's catalogues.
        self.m.add_locales(args.locales)
        self.m.add_catalogues(args.catalogues, args.localedir)
        self.m.write_sudoers([ALICE])
        self.stock_sudo = open("/etc/pam.d/sudo").read()
        self.stock_su = open("/etc/pam.d/su").read()
        self.enable_profile()
        self.profile_common_auth = open("/etc/pam.d/common-auth").read()
        self.use_readme_stack()
        # su and login with the stacks shipped for them.
        for service in ("su", "login"):
            self.m.write_pam(service, open(os.path.join(EXAMPLES, service)).read())
        self.m.start_daemon()
        self.m.enroll(ALICE)
        self.term = tmuxterm.Terminal(self.m.root, ALICE)
        self.baseline = self.stty()

    def enable_profile(self):
        """The real pam-auth-update enables pam/pam-configs/localauth in the scratch root."""
        self.m.pam_auth_update_root()
        r = subprocess.run(["pam-auth-update", "--enable", "localauth"], capture_output=True,
                           text=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                           timeout=60)
        check(r.returncode == 0, "pam-auth-update: %s%s" % (r.stdout, r.stderr))
        auth = [l.split() for l in open("/etc/pam.d/common-auth") if l.startswith("auth")]
        check(auth[0][-1] == "pam_localauth.so" and auth[0][1].startswith("[success="),
              "common-auth starts with the module: %s" % auth)
        check(any("pam_unix.so" in l and "try_first_pass" in l for l in auth),
              "pam_unix gets try_first_pass: %s" % auth)

    def use_readme_stack(self):
        """Debian's /etc/pam.d/sudo with the README's lines in place of its
        `@include common-auth`, and common-auth as Debian ships it (pam_unix without
        try_first_pass)."""
        lines = readme_stack()
        check("@include common-auth" in self.stock_sudo, "Debian's /etc/pam.d/sudo")
        self.m.write_pam("sudo", self.stock_sudo.replace("@include common-auth",
                                                         "\n".join(lines)))
        self.m.write_pam("common-auth", sandbox.STOCK_COMMON_AUTH)

    def use_profile_stack(self):
        """Debian's /etc/pam.d/sudo, common-auth as pam-auth-update wrote it."""
        self.m.write_pam("sudo", self.stock_sudo)
        self.m.write_pam("common-auth", self.profile_common_auth)

    def stty(self):
        mark = self.term.mark()
        self.term.type_line("stty -g")
        s, _ = self.term.wait_for(lambda s: re.search(r"\n[0-9a-f:]{20,}\n", s), "stty -g",
                                  since=mark)
        self.prompt_back(mark)
        return re.search(r"\n([0-9a-f:]{20,})\n", s[mark:]).group(1)

    def prompt_back(self, mark):
        return self.term.wait_for(lambda s: s.rstrip().endswith("\n$"), "the shell prompt",
                                  since=mark)

    def terminal_as_it_was(self, what):
        now = self.stty()
        check(now == self.baseline, "%s: the terminal settings changed:\n  before %s\n  after  %s"
              % (what, self.baseline, now))

    def sudo_pid(self, target=None):
        """The sudo that the shell in the terminal (or in tmux window target) started."""
        shell = int(self.term.run("display-message", "-p", *(["-t", target] if target else []),
                                  "#{pane_pid}").strip())
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open("/proc/%s/comm" % pid) as f:
                    comm = f.read().strip()
            except (OSError, IndexError):
                continue
            if comm == "sudo" and int(fields[1]) == shell:
                found.append(int(pid))
        check(len(found) == 1, "one sudo started by the shell %d: %s" % (shell, found))
        return found[0]

    def audit_count(self):
        return len([l for l in self.m.audit() if "op=evaluate" in l])

    def last_evaluations(self, since, expect=0):
        """The evaluation records after the first `since`, once there are at least `expect`: the
        daemon writes a request's record as it ends, which may be after the program has ended."""
        found = lambda: [l for l in self.m.audit() if "op=evaluate" in l][since:]  # noqa: E731
        sandbox.wait_until(lambda: len(found()) >= expect, "%d evaluation records" % expect)
        return found()

    def close(self):
        try:
            self.term.close()
        finally:
            self.m.close()


# ---------------------------------------------------------------------------------------------
# Helpers that run one sudo


def start(w, command, expect=PROMPT, what="the prompt", timeout=sandbox.WAIT_S):
    """Types command at the shell of w.term and waits for expect; returns (mark, seconds)."""
    mark = w.term.mark()
    t0 = time.monotonic()
    w.term.type_line(command)
    _, seen = w.term.wait_for(expect, what, since=mark, timeout=timeout)
    return mark, seen - t0


def act(w, mark, do, expect, what, timeout=sandbox.WAIT_S):
    """Does do() and waits for expect after mark; returns (the screen since, seconds)."""
    t0 = time.monotonic()
    do()
    s, seen = w.term.wait_for(expect, what, since=mark, timeout=timeout)
    return s[mark:], seen - t0


def root_line(s):
    """whoami's answer, on a line of its own or after sudo -S's prompt."""
    return re.search(r"(^|: )root$", s, re.M) is not None


def done(w, mark):
    w.prompt_back(mark)


# ---------------------------------------------------------------------------------------------
# Cases


def case_a(w):
    """(a) sudo shows the prompt under PAM_SILENT; a finger gives root."""
    mark, t_prompt = start(w, "sudo whoami")
    s, t_root = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root after the finger")
    check(SUDO_PROMPT not in s, "sudo's own password prompt never came: %s" % s)
    done(w, mark)
    figure("a: Enter -> prompt shown", t_prompt)
    figure("a: touch -> root", t_root)
    w.terminal_as_it_was("after a finger")


def case_b(w):
    """(b) a wrong finger, then the password typed at the same prompt; and the tries used up,
    then the password at sudo's own prompt."""
    mark, _ = start(w, "sudo whoami")
    s, t_miss = act(w, mark, lambda: w.m.touch("finger-2"),
                    lambda s: "ot recognised" in s and s.rstrip().endswith(PROMPT.strip()),
                    "the miss said and the prompt again")
    SCREENS["one wrong finger"] = s
    # The miss on one line, then the prompt again, as pam_fprintd's "Failed to match fingerprint"
    # then its prompt: nothing else (before: "Enter password", the daemon's fallback button, which
    # a PAM conversation cannot offer, between them).
    lines = [l.strip() for l in s.splitlines() if l.strip()]
    first = lines.index(PROMPT.strip())
    check(len(lines) == first + 3 and "ot recognised" in lines[first + 1] and
          lines[first + 2] == PROMPT.strip(), "the miss, then the prompt again, nothing else:\n%s" % s)
    s, t_root = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
    check(SUDO_PROMPT not in s, "asked once: %s" % s)
    done(w, mark)
    figure("b: wrong touch -> said, prompt again", t_miss)
    figure("b: password Enter at the prompt -> root", t_root)
    # Three misses: the daemon says so, and sudo asks for the password itself.
    mark, _ = start(w, "sudo whoami")
    for n in range(3):
        s, took = act(w, mark, lambda: w.m.touch("finger-2"),
                      lambda s, n=n: s.count("ot recognised") >= n + 1, "miss %d" % (n + 1))
    _, t_sudo = w.term.wait_for(SUDO_PROMPT, "sudo's password prompt", since=mark)
    figure("b: third miss -> sudo's password prompt", took)
    s, t_root = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
    done(w, mark)
    figure("b: password Enter at sudo's prompt -> root", t_root)
    w.m.ctl("lockout", "reset", "--user", ALICE)
    w.terminal_as_it_was("after misses and the password")


def case_last_finger(w):
    """(issue 26) after the last wrong finger a request allows, one line says so and sudo's own
    password prompt follows: the module's prompt is not put up again under it, and the lockout
    (the fifth miss in a row) is said once. The tries used up (three misses), Ctrl-C at sudo's
    prompt; then two more misses, the fifth locks; then the password."""
    w.m.ctl("lockout", "reset", "--user", ALICE)
    last = PROMPT.strip()
    try:
        for touches, locks in ((3, False), (2, True)):
            mark, _ = start(w, "sudo whoami")
            for n in range(touches):
                w.term.wait_for(lambda s, n=n: s.count("ot recognised") >= n and last in s,
                                "the prompt before touch %d" % (n + 1), since=mark)
                w.m.touch("finger-2")
            s, _ = w.term.wait_for(SUDO_PROMPT, "sudo's password prompt", since=mark)
            s = s[mark:]
            SCREENS["%d misses in a row" % (3 + 2 * locks)] = s
            lines = [l.strip() for l in s.splitlines()]
            at = [n for n, l in enumerate(lines) if l.startswith(SUDO_PROMPT)][0]
            # One line between the module's last prompt and sudo's: the last miss, or the lockout.
            check(at >= 2 and lines[at - 2] == last and lines[at - 1] != last,
                  "one line after the last finger, then sudo's prompt:\n%s" % s)
            if locks:
                check(lines[at - 1] == "Too many attempts: use your password" and
                      s.count("Too many attempts") == 1, "the lockout said once:\n%s" % s)
                act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
            else:
                check(lines[at - 1] == "Fingerprint not recognised", "the last miss said:\n%s" % s)
                w.term.keys("C-c")
            done(w, mark)
    finally:
        w.m.ctl("lockout", "reset", "--user", ALICE)
    w.terminal_as_it_was("after the last finger")


def case_c(w):
    """(c) Ctrl-C and Ctrl-\\ in the finger wait: sudo's password prompt at once; a second
    Ctrl-C ends sudo. Nothing counts as a miss (five in a row would lock biometrics), and the
    reader is free for the next request at once."""
    before = w.audit_count()
    for i, key in enumerate(("C-c", "C-\\", "C-c", "C-c", "C-\\")):
        mark, _ = start(w, "sudo whoami")
        s, t_int = act(w, mark, lambda: w.term.keys(key), SUDO_PROMPT,
                       "sudo's password prompt after %s" % key, timeout=AT_ONCE_S * 5)
        check(t_int < AT_ONCE_S, "%s: %.3f s" % (key, t_int))
        s, t_end = act(w, mark, lambda: w.term.keys("C-c"),
                       lambda s: s.rstrip().endswith("\n$"), "sudo ends on a second Ctrl-C")
        check("root" not in s.split(SUDO_PROMPT)[-1], "nothing ran: %s" % s)
        figure("c: %s in the finger wait -> sudo's password prompt" % key, t_int)
        figure("c: Ctrl-C at sudo's prompt -> sudo ended", t_end)
    evaluations = w.last_evaluations(before, expect=5)
    check(len(evaluations) == 5 and all("result=systemCancel" in l for l in evaluations),
          "five cancelled evaluations, none a miss: %s" % evaluations)
    check("biometry locked: no" in w.m.ctl("status", "--user", ALICE), "not locked out")
    # The reader is free: the next sudo takes a finger at once.
    mark, _ = start(w, "sudo whoami")
    _, t_root = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root right after")
    done(w, mark)
    figure("c: next sudo, touch -> root", t_root)
    w.terminal_as_it_was("after Ctrl-C")


def case_c_su(w):
    """(c) for su (to the caller's own account): Ctrl-C ends su at once, the terminal sane."""
    for key in ("C-c", "C-\\"):
        mark, _ = start(w, "su %s -c whoami" % ALICE)
        s, took = act(w, mark, lambda: w.term.keys(key), lambda s: s.rstrip().endswith("\n$"),
                      "su ended by %s" % key)
        check("Password:" not in s and ALICE + "\n" not in s.split("whoami", 1)[1], s)
        check(took < AT_ONCE_S, "%s: %.3f s" % (key, took))
        figure("c: su, %s in the finger wait -> su ended" % key, took)
    w.terminal_as_it_was("after Ctrl-C in su")


def case_d(w):
    """(d) daemon stopped: the reason in one line and sudo's password prompt at once."""
    w.m.stop_daemon()
    try:
        mark, took = start(w, "sudo whoami", SUDO_PROMPT, "sudo's password prompt")
        s, t_root = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
        check("Fingerprint not used: localauthd is not running" in s, s)
        check(PROMPT not in s, "no finger prompt without a daemon: %s" % s)
        done(w, mark)
    finally:
        w.m.start_daemon()
    check(took < AT_ONCE_S, "%.3f s" % took)
    figure("d: daemon stopped, Enter -> sudo's password prompt", took)
    figure("d: password Enter -> root", t_root)
    w.terminal_as_it_was("with the daemon stopped")



# The kernel's ACPI lid button, as the daemon reads it when logind is not there to ask (this
# sandbox has none): a tmpfs over /proc/acpi in this private namespace holds one closed lid.
ACPI = "/proc/acpi"


def close_lid():
    check(os.path.isdir(ACPI), "%s is missing: the kernel has no ACPI to cover" % ACPI)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", ACPI], check=True)
    os.makedirs(ACPI + "/button/lid/LID0")
    with open(ACPI + "/button/lid/LID0/state", "w") as f:
        f.write("state:      closed\n")


def open_lid():
    subprocess.run(["umount", ACPI], check=True)


def case_lid_closed(w):
    """A closed lid (issue 16) covers the built-in reader: sudo says why in one line and asks for
    the password at once, without the finger prompt (biometryNotAvailable: no miss). Opened again, the
    finger prompt is back and the touch gives root."""
    before = w.audit_count()
    close_lid()
    try:
        mark, took = start(w, "sudo whoami", SUDO_PROMPT, "sudo's password prompt")
        s, t_root = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
        check("the laptop lid is closed and the reader is built in" in s, s)
        check(PROMPT not in s, "no finger prompt with the lid closed: %s" % s)
        print("       lid closed: %s" % " | ".join(l for l in s.splitlines() if l.strip()))
        done(w, mark)
    finally:
        open_lid()
    evaluations = w.last_evaluations(before, expect=1)
    check(len(evaluations) == 1 and "result=biometryNotAvailable" in evaluations[0],
          "one evaluation, the reader not available (nothing counted): %s" % evaluations)
    check(took < AT_ONCE_S, "%.3f s" % took)
    figure("lid closed: Enter -> sudo's password prompt", took)
    mark, _ = start(w, "sudo whoami")
    act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root by finger, the lid open again")
    done(w, mark)
    w.terminal_as_it_was("with the lid closed")

def typed_password_gives_root(w, label):
    before = w.audit_count()
    mark, _ = start(w, "sudo whoami")
    s, took = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
    check(SUDO_PROMPT not in s, "%s: the password was asked once: %s" % (label, s))
    done(w, mark)
    evaluations = w.last_evaluations(before, expect=1)
    check(len(evaluations) == 1 and "result=systemCancel" in evaluations[0],
          "%s: the request was dropped, the reader never decided: %s" % (label, evaluations))
    return took


def case_e(w):
    """(e) the password typed while the finger prompt is live gives root at once, asked once,
    with the README's stack and with the pam-auth-update profile."""
    figure("e: password Enter at the prompt -> root (README stack)",
           typed_password_gives_root(w, "README stack"))
    w.use_profile_stack()
    try:
        figure("e: password Enter at the prompt -> root (profile)",
               typed_password_gives_root(w, "profile"))
        mark, _ = start(w, "sudo whoami")
        act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root by finger (profile)")
        done(w, mark)
    finally:
        w.use_readme_stack()
    w.terminal_as_it_was("after a typed password")


def case_f(w):
    """(f) a finger while a password is half typed: root at once; the typed text goes nowhere."""
    mark, _ = start(w, "sudo whoami")
    w.term.keys("half-typed-secret")
    time.sleep(0.1)  # the keys are in the terminal's line before the finger
    s, took = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root")
    done(w, mark)
    mark = w.term.mark()
    w.term.type_line("echo after")
    s, _ = w.term.wait_for(lambda s: "\nafter\n" in s, "echo after", since=mark)
    check("half-typed" not in w.term.screen(), "the typed text reached nobody: %s" % s)
    w.prompt_back(mark)
    figure("f: touch with a half-typed password -> root", took)
    w.terminal_as_it_was("after a finger over typed text")


def case_g(w):
    """(g) `echo PW | sudo -S` gives root without the reader; `sudo -n` fails at once."""
    before = w.audit_count()
    mark, took = start(w, "echo '%s' | sudo -S whoami" % ALICE_PW, root_line, "root from -S")
    done(w, mark)
    check(w.last_evaluations(before) == [], "the daemon was not asked: %s" %
          w.last_evaluations(before))
    check(took < AT_ONCE_S, "%.3f s" % took)
    figure("g: echo PW | sudo -S whoami -> root", took)
    mark, took = start(w, "sudo -n true; echo rc=$?", lambda s: re.search(r"rc=\d+\n", s),
                       "sudo -n")
    s = w.term.screen()[mark:]
    check("rc=1" in s and "a password is required" in s, s)
    done(w, mark)
    check(took < AT_ONCE_S, "%.3f s" % took)
    figure("g: sudo -n true -> refused", took)
    w.terminal_as_it_was("after sudo -S and -n")


def case_typeahead(w):
    """A person without a finger who types the password ahead, before any prompt: the module
    hears "not enrolled" from the daemon, puts up no prompt and drops none of those keys, and
    sudo's own prompt reads them."""
    w.m.ctl("delete", "--user", ALICE, "--all")
    try:
        mark = w.term.mark()
        t0 = time.monotonic()
        w.term.keys("sudo whoami\n" + ALICE_PW + "\n")
        s, seen = w.term.wait_for(root_line, "root from the typed-ahead password", since=mark)
        check(PROMPT not in s[mark:], "no finger prompt without a finger: %s" % s[mark:])
        done(w, mark)
        figure("typed ahead, no finger enrolled -> root", seen - t0)
    finally:
        w.m.enroll(ALICE)
    w.terminal_as_it_was("after typing ahead")


def case_daemon_killed(w):
    """The daemon killed during the prompt: sudo's password prompt at once."""
    mark, _ = start(w, "sudo whoami")
    w.m.daemon.kill()
    t0 = time.monotonic()
    try:
        _, seen = w.term.wait_for(SUDO_PROMPT, "sudo's password prompt", since=mark)
        s, _ = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
        done(w, mark)
    finally:
        w.m.daemon.wait()
        w.m.start_daemon()
    check(seen - t0 < AT_ONCE_S, "%.3f s" % (seen - t0))
    figure("daemon killed during the prompt -> sudo's password prompt", seen - t0)
    w.terminal_as_it_was("after the daemon died")


def case_sigterm(w):
    """sudo killed with SIGTERM during the prompt: the request ends, sudo ends without asking
    for its password (the module stops the stack), and the terminal is as it was."""
    mark, _ = start(w, "sudo whoami; echo rc=$?")
    before = w.audit_count()
    s, took = act(w, mark, lambda: os.kill(w.sudo_pid(), signal.SIGTERM),
                  lambda s: re.search(r"rc=\d+\n", s), "sudo's end")
    check(not root_line(s) and SUDO_PROMPT not in s, "sudo ended, nothing asked or run: %s" % s)
    print("       sudo after SIGTERM: %s" % " | ".join(s.strip().splitlines()[1:]))
    done(w, mark)
    figure("SIGTERM to sudo during the prompt -> sudo ended", took)
    evaluations = w.last_evaluations(before, expect=1)
    check(len(evaluations) == 1 and "result=systemCancel" in evaluations[0], str(evaluations))
    w.terminal_as_it_was("after SIGTERM")


def case_terminal_closed(w):
    """The terminal closes during the prompt: sudo goes, the reader is freed at once."""
    w.term.run("new-window", "-d", "-n", "doomed", "env", "PS1=$ ", "ENV=", "dash", "-i")
    time.sleep(0.3)
    before = w.audit_count()
    w.term.run("send-keys", "-t", ":doomed", "sudo whoami", "Enter")
    sandbox.wait_until(lambda: "Password or finger" in w.term.run(
        "capture-pane", "-p", "-t", ":doomed"), "the prompt in the second window")
    pid = w.sudo_pid(":doomed")
    t0 = time.monotonic()
    w.term.run("kill-window", "-t", ":doomed")
    sandbox.wait_until(lambda: len(w.last_evaluations(before)) == 1, "the request ended")
    freed = time.monotonic() - t0
    sandbox.wait_until(lambda: not os.path.exists("/proc/%d" % pid), "sudo gone")
    check("result=systemCancel" in w.last_evaluations(before)[0], w.last_evaluations(before))
    check(freed < AT_ONCE_S, "%.3f s" % freed)
    figure("terminal closed during the prompt -> request ended", freed)
    w.terminal_as_it_was("in the other window")


def case_suspend(w):
    """Ctrl-Z at the prompt stops sudo with the terminal as it was; fg brings the prompt
    back, and a finger then gives root."""
    mark, _ = start(w, "sudo whoami")
    s, _ = act(w, mark, lambda: w.term.keys("C-z"), lambda s: s.rstrip().endswith("\n$"),
               "the shell after Ctrl-Z")
    w.terminal_as_it_was("with sudo stopped")
    mark = w.term.mark()
    w.term.type_line("fg")
    w.term.wait_for(PROMPT, "the prompt again after fg", since=mark)
    s, _ = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root after fg")
    done(w, mark)
    w.terminal_as_it_was("after Ctrl-Z and fg")


def case_su(w):
    """su (to the caller's own account, the one su case a finger may answer): the prompt, a
    finger; the password typed at the prompt."""
    mark, t_prompt = start(w, "su %s -c whoami" % ALICE)
    s, t_user = act(w, mark, lambda: w.m.touch("finger-1"),
                    lambda s: re.search(r"^%s$" % ALICE, s, re.M), "whoami after su")
    done(w, mark)
    check("Password:" not in s, s)
    mark, _ = start(w, "su %s -c whoami" % ALICE)
    s, t_pw = act(w, mark, lambda: w.term.type_line(ALICE_PW),
                  lambda s: re.search(r"^%s$" % ALICE, s, re.M), "whoami after su")
    done(w, mark)
    check("Password:" not in s, "asked once: %s" % s)
    figure("su: Enter -> prompt shown", t_prompt)
    figure("su: touch -> switched", t_user)
    figure("su: password Enter at the prompt -> switched", t_pw)
    w.terminal_as_it_was("after su")


def case_login(w):
    """login, run by root in a pseudo-terminal with no login session: the finger is not offered —
    a process whose real uid is 0 and that is in no session is asked for a finger only from the
    virtual terminal in front, where getty's login runs (docs/security.md; the pseudo-terminal
    case is root's own tools, cron, services) — the reason is shown, and the password logs in."""
    root = tmuxterm.Terminal(w.m.root, "root")
    try:
        mark = root.mark()
        t0 = time.monotonic()
        root.type_line("login %s" % ALICE)
        s, seen = root.wait_for(lambda s: "Password" in s, "login's password prompt", since=mark)
        figure("login (pseudo-terminal, no session): Enter -> password prompt", seen - t0)
        check("not from the terminal in front" in s[mark:],
              "the reason is shown: %s" % s[mark:])
        check(PROMPT not in s[mark:], "the finger was offered: %s" % s[mark:])
        root.type_line(ALICE_PW)
        root.wait_for(lambda s: s.rstrip().endswith("$") and "Last login" not in
                      s.splitlines()[-1] and ALICE in s, "logged in", since=mark)
        mark2 = root.mark()
        root.type_line("whoami; exit")
        root.wait_for(lambda s: re.search(r"^%s$" % ALICE, s, re.M), "whoami", since=mark2)
    finally:
        root.close()


def case_su_hijack(w):
    """The red team's scenario (issue 13, C2) with the real su: another user runs `su lapamalice`
    and waits; alice touches the reader for her own request. The attacker's su gets no finger —
    the reason is shown, then su's own password prompt — and alice's request gets her touch."""
    mallory = tmuxterm.Terminal(w.m.root, MALLORY)
    try:
        mark_m = mallory.mark()
        t0 = time.monotonic()
        mallory.type_line("su %s -c whoami" % ALICE)
        s, seen = mallory.wait_for(lambda s: "Password:" in s, "the attacker's su asks a password",
                                   since=mark_m)
        figure("su by another user: Enter -> the password prompt, no finger", seen - t0)
        check("not from %s's own session" % ALICE in s[mark_m:], "the reason: %s" % s[mark_m:])
        check(PROMPT not in s[mark_m:], "the attacker's su was offered the finger: %s" % s[mark_m:])
        # Alice, at her own terminal, asks for her own account and touches the reader.
        mark, _ = start(w, "su %s -c whoami" % ALICE)
        s, t_user = act(w, mark, lambda: w.m.touch("finger-1"),
                        lambda s: re.search(r"^%s$" % ALICE, s, re.M), "whoami after alice's own su")
        done(w, mark)
        figure("su to the own account while another user's su waits: touch -> switched", t_user)
        # The attacker's su still waits for a password: it got no shell as alice.
        screen = mallory.screen()[mark_m:]
        check(re.search(r"^%s$" % ALICE, screen, re.M) is None, "the attacker got a shell: %s" % screen)
        mallory.keys("C-c")
        mallory.wait_for(lambda s: s.rstrip().endswith("\n$"), "the attacker's su ended", since=mark_m)
        evaluations = [l for l in w.m.audit() if "op=evaluate" in l and "caller_real_uid=%d " % w.m.uids[MALLORY] in l]
        check(evaluations and "result=biometryNotAvailable" in evaluations[-1], "audit: %s" % evaluations)
    finally:
        mallory.close()



def case_reader_busy(w):
    """One request on the reader at a time (issue 13; docs/policy.md S28). While alice's sudo
    waits for her finger, another user's su for their own account is told at once, at their own
    terminal, that another account's request holds the reader (not whose: that is alice's
    business), and gets su's password prompt; alice's second sudo, in another terminal, is told
    that her own "sudo for lapamalice" holds it. Her touch then gives the first one root."""
    w.m.enroll(MALLORY, print_id="finger-2")
    w.m.report_password(MALLORY)  # issue 17: her password once since the daemon started
    mallory = tmuxterm.Terminal(w.m.root, MALLORY)
    second = tmuxterm.Terminal(w.m.root, ALICE, name=ALICE + "-second")
    try:
        mark, _ = start(w, "sudo whoami")
        for term, command, expect, what in (
                (mallory, "su %s -c whoami" % MALLORY, "another account's request", "another user"),
                (second, "sudo whoami", "the reader is in use by sudo for %s" % ALICE, "alice again")):
            mark_o = term.mark()
            t0 = time.monotonic()
            term.type_line(command)
            s, seen = term.wait_for(lambda s: re.search(r"(Password|password for \S+): *$", s),
                                    "%s: a password prompt" % what, since=mark_o)
            figure("reader busy (%s): Enter -> the password prompt" % what, seen - t0)
            s = s[mark_o:]
            print("       %s sees: %s" % (what, " | ".join(l for l in s.splitlines() if l.strip())))
            check("Fingerprint not available: " in s and expect in s, "%s: %s" % (what, s))
            check("finger for" not in s, "%s was offered the busy reader: %s" % (what, s))
            if term is mallory:
                check(ALICE not in s, "another user learns whose request it is: %s" % s)
            term.keys("C-c")
            term.wait_for(lambda s: s.rstrip().endswith("\n$"), "%s: the shell prompt" % what,
                          since=mark_o)
        act(w, mark, lambda: w.m.touch("finger-1"), root_line, "alice's root by her finger")
        done(w, mark)
        mine = [l for l in w.m.audit() if "op=evaluate" in l and 'user="%s"' % MALLORY in l]
        check(len(mine) == 1 and "result=biometryNotAvailable" in mine[0], "audit: %s" % mine)
    finally:
        mallory.close()
        second.close()
    w.terminal_as_it_was("after the busy reader")

def case_after_boot(w):
    """(issue 17) after a reboot the finger is refused at once with one line, the reader
    untouched, and the password unlocks; sudo's pam_setcred reports it, and the finger is
    accepted again. Last: from here on the rules apply in this sandbox."""
    w.m.report_password(ALICE, "sudo")  # the password was used in the boot before
    w.m.new_boot()
    before = w.audit_count()
    mark, took = start(w, "sudo whoami", SUDO_PROMPT, "sudo's password prompt")
    s, t_root = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
    done(w, mark)
    check(s.count(REQUIRED_AFTER_RESTART) == 1, "the reason, in one line: %s" % s)
    check(PROMPT not in s, "no finger prompt: %s" % s)
    evaluations = w.last_evaluations(before, expect=1)
    check(len(evaluations) == 1 and "result=biometryLockout" in evaluations[0]
          and REQUIRED_AFTER_RESTART in evaluations[0], "refused by the rule: %s" % evaluations)
    check(took < AT_ONCE_S, "sudo's password prompt after %.3f s" % took)
    check(t_root < AT_ONCE_S, "root %.3f s after the password" % t_root)
    # sudo sets PAM_USER to the target (root) before pam_setcred: the report names the user
    # whose password the stack checked.
    reports = [l for l in w.m.audit() if "op=passwordUsed" in l][-1:]
    check(reports and 'user="%s"' % ALICE in reports[0] and "result=success" in reports[0],
          "sudo's pam_setcred reported %s's password: %s" % (ALICE, reports))
    figure("after boot: Enter -> the reason and sudo's password prompt", took)
    figure("after boot: password Enter -> root", t_root)
    # sudo's pam_setcred told the daemon: the finger is accepted again.
    mark, _ = start(w, "sudo whoami")
    act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root by finger after the password")
    done(w, mark)
    w.terminal_as_it_was("after the password after a reboot")


# What a person reads in each language, word for word from po/ (the module's own lines) and from
# Debian's sudo (its password prompt).
LANGUAGES = {
    "de_DE.UTF-8": {
        "prompt": "Passwort oder Finger für %s: " % ALICE,
        "miss": "Nicht erkannt, bitte erneut versuchen (noch 2 Versuche)",
        "not running": "Fingerabdruck nicht verwendet: localauthd läuft nicht",
        "sudo prompt": "[sudo] Passwort für %s:" % ALICE,
    },
    "ko_KR.UTF-8": {
        "prompt": "%s의 암호 또는 지문: " % ALICE,
        "miss": "인식되지 않았습니다. 다시 시도하십시오 (2회 남음)",
        "not running": "지문을 사용하지 않음: localauthd가 실행 중이 아님",
        "sudo prompt": "[sudo] %s 암호:" % ALICE,
    },
}
SCREENS = {}


def in_language(lang):
    """sudo started with LANG=lang: the module's prompt in that language (sudo's setlocale, the
    module's catalogue); a wrong finger, and the daemon's line about it (its phrase) in that
    language under the prompt; the right finger gives root. With the daemon stopped, the reason in that
    language, then sudo's own prompt in it, and the password gives root. The screens are kept
    for README.md."""
    words = LANGUAGES[lang]

    def case(w):
        command = "env LANG=%s sudo whoami" % lang
        mark, t_prompt = start(w, command, words["prompt"], "the prompt in %s" % lang)
        check(PROMPT not in w.term.screen()[mark:], "no English prompt")
        act(w, mark, lambda: w.m.touch("finger-2"), lambda s: words["miss"] in s,
            "the miss in %s" % lang)
        s, _ = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root after the finger")
        check("recognised" not in s, "no English line: %s" % s)
        done(w, mark)
        SCREENS[lang + " finger"] = s.rstrip("\n$ ")
        figure("language %s: Enter -> prompt shown" % lang, t_prompt)
        w.m.stop_daemon()
        try:
            mark, _ = start(w, command, words["sudo prompt"], "sudo's prompt in %s" % lang)
            s, _ = act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root")
            check(words["not running"] in s, "the reason in %s: %s" % (lang, s))
            done(w, mark)
            SCREENS[lang + " daemon stopped"] = s.rstrip("\n$ ")
        finally:
            w.m.start_daemon()
        w.terminal_as_it_was("in %s" % lang)

    return case


def case_english_without_a_language(w):
    """LANG=C.UTF-8, and French (a locale with no catalogue of ours): the English lines."""
    for lang in ("C.UTF-8", "fr_FR.UTF-8"):
        mark, _ = start(w, "env LANG=%s sudo whoami" % lang, PROMPT, "the English prompt")
        act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root after the finger")
        done(w, mark)


def case_host_facts(w):
    """What pam_localauth(8) says sudo and su do, measured with a probe module: sudo passes
    PAM_SILENT and blocks SIGINT and SIGQUIT while it authenticates, su does neither; both set
    PAM_TTY to the terminal on standard input."""
    out = w.m.path("probe.jsonl")
    open(out, "w").close()
    os.chmod(out, 0o666)
    probe = "auth optional %s out=%s\n" % (w.args.probe, out)
    sudo = open("/etc/pam.d/sudo").read()
    su = open("/etc/pam.d/su").read()
    w.m.write_pam("sudo", probe + sudo)
    w.m.write_pam("su", probe + su)
    try:
        for cmd in ("sudo whoami", "su %s -c whoami" % ALICE):
            mark, _ = start(w, cmd)
            w.term.keys("C-c")
            if cmd.startswith("sudo"):
                w.term.wait_for(SUDO_PROMPT, "sudo's prompt", since=mark)
                w.term.keys("C-c")
            done(w, mark)
    finally:
        w.m.write_pam("sudo", sudo)
        w.m.write_pam("su", su)
    seen = [json.loads(l) for l in open(out)]
    check(len(seen) == 2, str(seen))
    sudo_f, su_f = seen
    for name, f in (("sudo", sudo_f), ("su", su_f)):
        check(f["tty"].startswith("/dev/pts/") and f["fd0"] == "tty" and f["ctty"] and
              f["foreground"] and f["echo"] and f["icanon"] and f["isig"], "%s: %s" % (name, f))
        print("       %s: %s" % (name, json.dumps(f)))
    check(sudo_f["silent"] and set(sudo_f["blocked"]) >= {"INT", "QUIT"}, "sudo: %s" % sudo_f)
    check(not su_f["silent"] and su_f["blocked"] == [] and su_f["disposition"]["INT"] ==
          "default", "su: %s" % su_f)
    w.terminal_as_it_was("after the probe")



# localauthd's fprintd door (the localauth-fprintd-compat package) for a machine that keeps
# Debian's pam_fprintd profile (README, "The desktop: fprintd's D-Bus API").
PACKAGING = os.path.join(HERE, "..", "..", "packaging", "fprintd-compat")
POLKITD = "/usr/lib/polkit-1/polkitd"
SYSTEM_BUS = "/run/dbus/system_bus_socket"
# pam_fprintd's own words: "Swipe your right index finger across the fingerprint reader" (the
# door says libfprint's scan type, swipe for the virtual reader, and the one enrolled finger).
FPRINTD_PROMPT = "finger across the fingerprint reader"


def bus_name_owned(name):
    r = subprocess.run(["busctl", "--system", "status", name], capture_output=True, text=True,
                       env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=" + SYSTEM_BUS))
    return r.returncode == 0


def start_door(w):
    """The real system bus at its default path (setuid sudo's pam_fprintd looks there, whatever
    the environment says) with polkit's bus policy and the package's, the real polkitd with the
    package's actions, and the daemon restarted with --fprintd-compat. Returns what to stop."""
    policies = {name: open(path).read() for name, path in (
        ("org.freedesktop.PolicyKit1.conf", "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"),
        ("net.reactivated.Fprint.conf", os.path.join(PACKAGING, "net.reactivated.Fprint.conf")))}
    actions = open(os.path.join(PACKAGING, "net.reactivated.fprint.device.policy")).read()
    for target, name, files in (
            ("/usr/share/dbus-1/system.d", "door-system.d", policies),
            ("/etc/dbus-1/system.d", "door-etc-system.d", {}),
            ("/usr/share/polkit-1/actions", "door-actions",
             {"net.reactivated.fprint.device.policy": actions})):
        copy = w.m.bind_copy(target, name, empty=True)
        for file, text in files.items():
            with open(os.path.join(copy, file), "w") as f:
                f.write(text)
    os.makedirs(os.path.dirname(SYSTEM_BUS), exist_ok=True)
    log = open(w.m.path("door.log"), "a")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DBUS_")}
    bus = w.m.spawn(["dbus-daemon", "--system", "--nofork", "--nopidfile", "--nosyslog"],
                    env=env, stdout=subprocess.DEVNULL, stderr=log)
    sandbox.wait_until(lambda: os.path.exists(SYSTEM_BUS), "the system bus")
    polkitd = w.m.spawn([POLKITD, "--no-debug"], env=env, stdout=subprocess.DEVNULL, stderr=log)
    sandbox.wait_until(lambda: bus_name_owned("org.freedesktop.PolicyKit1"), "polkitd")
    w.m.stop_daemon()
    w.m.start_daemon(extra=("--fprintd-compat",))
    sandbox.wait_until(lambda: bus_name_owned("net.reactivated.Fprint"), "the door on the bus")
    return [polkitd, bus]


def stop_door(w, processes):
    """The daemon as the other cases have it, without a system bus."""
    w.m.stop_daemon()
    for p in processes:
        p.terminate()
        p.wait(timeout=sandbox.WAIT_S)
    if os.path.exists(SYSTEM_BUS):
        os.unlink(SYSTEM_BUS)
    w.m.start_daemon()


def case_pam_fprintd_through_the_door(w):
    """Debian's pam_fprintd profile kept, fprintd replaced by localauthd's door: the real sudo's
    pam_fprintd.so shows its own prompt, alice's finger gives root, a wrong finger gives sudo's
    password prompt and counts one miss in localauthd. Another user's `su lapamalice`, through
    the same pam_fprintd, gets no finger: the door keeps the daemon's presence rule (issue 13)."""
    processes = start_door(w)
    try:
        # pam-auth-update leaves a common-auth it did not write alone: the one it wrote first.
        w.use_profile_stack()
        for step in (["--disable", "localauth"], ["--enable", "fprintd"]):
            r = subprocess.run(["pam-auth-update", *step], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            check(r.returncode == 0, "pam-auth-update %s: %s%s" % (step, r.stdout, r.stderr))
        auth = [" ".join(l.split()) for l in open("/etc/pam.d/common-auth") if l.startswith("auth")]
        check("pam_fprintd.so" in auth[0] and not any("pam_localauth" in l for l in auth), str(auth))
        print("       common-auth: %s" % " | ".join(auth[:2]))
        w.m.write_pam("sudo", w.stock_sudo)
        w.m.write_pam("su", w.stock_su)
        before = w.audit_count()
        mark, took = start(w, "sudo whoami", FPRINTD_PROMPT, "pam_fprintd's prompt")
        figure("pam_fprintd via the door: Enter -> its prompt", took)
        s, t_root = act(w, mark, lambda: w.m.touch("finger-1"), root_line, "root by finger")
        figure("pam_fprintd via the door: touch -> root", t_root)
        print("       sudo: %s" % " | ".join(l for l in s.splitlines() if l.strip()))
        done(w, mark)
        mark, _ = start(w, "sudo whoami", FPRINTD_PROMPT, "pam_fprintd's prompt")
        s, _ = act(w, mark, lambda: w.m.touch("finger-2"), SUDO_PROMPT, "sudo's password prompt")
        check("Failed to match fingerprint" in s, s)
        act(w, mark, lambda: w.term.type_line(ALICE_PW), root_line, "root by password")
        done(w, mark)
        evaluations = w.last_evaluations(before, expect=2)
        check(len(evaluations) == 2 and "result=success" in evaluations[0] and
              "result=authenticationFailed" in evaluations[1], "audit: %s" % evaluations)
        # Another user's su for alice, through the same pam_fprintd and the door.
        mallory = tmuxterm.Terminal(w.m.root, MALLORY, name=MALLORY + "-door")
        try:
            mark_m = mallory.mark()
            mallory.type_line("su %s -c whoami" % ALICE)
            s, _ = mallory.wait_for(lambda s: "Password:" in s, "su's password prompt", since=mark_m)
            s = s[mark_m:]
            print("       another user's su: %s" % " | ".join(l for l in s.splitlines() if l.strip()))
            check(FPRINTD_PROMPT not in s, "the other user was offered alice's finger: %s" % s)
            mallory.keys("C-c")
            mallory.wait_for(lambda s: s.rstrip().endswith("\n$"), "su ended", since=mark_m)
            check(re.search(r"^%s$" % ALICE, mallory.screen()[mark_m:], re.M) is None,
                  "the other user got a shell as alice")
            # The door refuses pam_fprintd's VerifyStart (fprintd's PermissionDenied), and audits
            # it as the socket audits a refusal (issue 26): one op=evaluate record via the door,
            # saying why; nothing else reached the reader.
            why = "not from %s's own session" % ALICE
            evaluations = w.last_evaluations(before, expect=3)
            refusals = [l for l in evaluations[2:] if 'via="dbus"' in l]
            check(len(evaluations) == 3 and len(refusals) == 1 and why in refusals[0]
                  and "result=success" not in refusals[0], "the door's refusal: %s" % evaluations)
        finally:
            mallory.close()
    finally:
        stop_door(w, processes)
        w.use_readme_stack()
        w.m.write_pam("su", open(os.path.join(EXAMPLES, "su")).read())
        w.m.ctl("lockout", "reset", "--user", ALICE)
    w.terminal_as_it_was("after pam_fprintd")

CASES = [
    ("host_facts_sudo_silent_and_blocking_su_neither", case_host_facts),
    ("a_prompt_shown_and_a_finger_gives_root", case_a),
    ("b_wrong_fingers_then_the_password_give_root", case_b),
    ("last_wrong_finger_says_so_once_then_sudos_own_prompt", case_last_finger),
    ("c_ctrl_c_falls_to_sudos_password_prompt_at_once_and_counts_nothing", case_c),
    ("c_ctrl_c_ends_su_at_once", case_c_su),
    ("d_daemon_stopped_gives_the_password_prompt_at_once", case_d),
    ("lid_closed_gives_the_password_prompt_at_once_and_says_why", case_lid_closed),
    ("e_password_typed_at_the_prompt_gives_root_without_the_reader", case_e),
    ("f_finger_over_a_half_typed_password_gives_root_and_drops_the_text", case_f),
    ("g_sudo_S_never_waits_for_the_reader_and_sudo_n_fails_at_once", case_g),
    ("typeahead_reaches_sudos_prompt_for_a_person_without_a_finger", case_typeahead),
    ("daemon_killed_during_the_prompt_gives_the_password_prompt_at_once", case_daemon_killed),
    ("sigterm_to_sudo_leaves_the_terminal_as_it_was", case_sigterm),
    ("terminal_closed_during_the_prompt_frees_the_reader", case_terminal_closed),
    ("ctrl_z_and_fg_keep_the_terminal_and_the_prompt", case_suspend),
    ("su_prompt_finger_and_typed_password", case_su),
    ("login_in_a_pseudo_terminal_gets_the_password_not_the_finger", case_login),
    ("su_by_another_user_gets_no_finger_and_the_owner_keeps_their_touch", case_su_hijack),
    ("reader_busy_tells_another_user_not_whose_and_the_owner_which_of_their_requests",
     case_reader_busy),
    ("after_boot_the_finger_is_refused_at_once_and_the_password_gives_root", case_after_boot),


    ("sudo_in_german_prompts_in_german", in_language("de_DE.UTF-8")),
    ("sudo_in_korean_prompts_in_korean", in_language("ko_KR.UTF-8")),
    ("sudo_without_a_catalogue_prompts_in_english", case_english_without_a_language),
    ("pam_fprintd_profile_kept_through_the_door_finger_root_and_no_finger_for_another_user",
     case_pam_fprintd_through_the_door),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--probe", required=True, help="pam/build/tests/probe_module.so")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--locales", required=True, help=".build/test-locales (make test-locales)")
    ap.add_argument("--catalogues", required=True, help=".build/share/locale (make locale)")
    ap.add_argument("--localedir", required=True, help="where the module looks: its LOCALEDIR")
    ap.add_argument("-k", default="", help="only the cases whose name contains this")
    args = ap.parse_args()
    for name in ("module", "bin", "probe", "locales", "catalogues"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    if os.getuid() != 0:
        print("run as root: the private /etc, sudo's setuid and the daemon need it")
        return 1
    sandbox.enter("LA_TERMINAL_NAMESPACE")
    for tool in ("sudo", "su", "login", "tmux", "dash", "setpriv", "stdbuf", "pam-auth-update"):
        if shutil.which(tool) is None:
            print("FAIL %s is not installed (scripts/ensure-deps.sh installs it)" % tool)
            print("0 passed, 1 failed")
            return 1
    def on_failure(w):
        print(w.term.screen()[-1200:])
        print(w.m.daemon_tail(600))
        # The next case starts from a shell prompt.
        w.term.keys("C-c")
        time.sleep(0.3)
        w.term.keys("C-c", "Enter")
        time.sleep(0.3)

    def make_world():
        w = World(args)
        print("       README stack for /etc/pam.d/sudo: %s" % " | ".join(readme_stack()))
        return w

    passed, failed = sandbox.run_cases(make_world, CASES, args.k, args.runs, on_failure)
    if FIGURES:
        print("figures (seconds; time.monotonic() before send-keys to the capture showing it):")
        sandbox.print_figures(FIGURES)
    for name, screen in SCREENS.items():
        print("screen, %s:\n%s" % (name, "\n".join("       " + l for l in screen.splitlines())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(FIGURES, f, indent=1)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
