# SPDX-License-Identifier: Apache-2.0
"""sudo in a real terminal, ours beside pam_fprintd's, in the same terminal (issue 14).

One private mount namespace (pam/tests/sandbox.py), one tmux terminal run as an ordinary user
(pam/tests/tmuxterm.py), the real sudo 1.9.13 with /etc/pam.d/sudo as Debian ships it, and each
side enabled the Debian way, by the real pam-auth-update with its own profile:
pam/pam-configs/localauth (ours, `localauthd --virtual-reader` on /run/localauthd/socket) and
libpam-fprintd's /usr/share/pam-configs/fprintd (theirs: `pam_fprintd.so max-tries=1
timeout=10`, fprintd 1.94.2 with FP_VIRTUAL_DEVICE on a private system bus at the default
/run/dbus/system_bus_socket, which setuid sudo uses whatever the environment says, with the
real polkitd). Both virtual readers are touched the same way, a SCAN on the virtual device's
socket. Each step is timed from just before the key or the touch to the first capture-pane
that shows its result, so tmux's few milliseconds are in every figure, on both sides.

Steps: Enter -> the finger prompt; touch -> root; a wrong touch -> sudo's password prompt (ours:
after tries=3 misses, fprintd: after its one); Ctrl-C in the finger wait -> sudo's password
prompt; the password typed while the finger prompt is up, Enter -> root; `echo PW | sudo -S
whoami` -> root.

Usage: terminal.py --module SO --bin DIR [--runs N] [--json FILE]   (as root)
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "pam", "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import common  # noqa: E402
import sandbox  # noqa: E402
import terminal_test  # noqa: E402
import tmuxterm  # noqa: E402
from sandbox import check  # noqa: E402

ALICE, ALICE_PW = "lapamalice", "Alice-pass 4711"
SUDO_PROMPT = "[sudo] password for %s:" % ALICE
FPRINTD = "/usr/libexec/fprintd"
POLKITD = terminal_test.POLKITD
BUS = terminal_test.SYSTEM_BUS
SLOW_S = 40.0  # fprintd's timeout is 10 s; a step that waits for it gets this long


class Side:
    """One of the two stacks in the shared terminal."""

    def __init__(self, name, term, prompt, touch, miss, misses):
        self.name, self.term, self.prompt = name, term, prompt
        self.touch, self.miss, self.misses = touch, miss, misses

    def start(self, command, expect, timeout=sandbox.WAIT_S):
        return terminal_test.start(self, command, expect, command, timeout)

    def act(self, mark, do, expect, what, timeout=sandbox.WAIT_S):
        return terminal_test.act(self, mark, do, expect, what, timeout)

    def shell(self, mark):
        self.term.wait_for(lambda s: s.rstrip().endswith("\n$"), "the shell", since=mark,
                           timeout=SLOW_S)

    def round(self, figures, slow):
        def record(key, value):
            figures.setdefault(key, []).append(value)

        mark, t = self.start("sudo whoami", self.prompt)
        record("Enter -> finger prompt", t)
        _, t = self.act(mark, self.touch, terminal_test.root_line, "root by finger")
        record("touch -> root", t)
        self.shell(mark)

        mark, _ = self.start("sudo whoami", self.prompt)
        for n in range(self.misses - 1):  # ours: tries=3; the daemon says each miss
            self.act(mark, self.miss, lambda s, n=n: s.lower().count("not recognised") > n, "a miss")
        _, t = self.act(mark, self.miss, SUDO_PROMPT, "sudo's password prompt after the misses")
        record("last wrong touch -> sudo's password prompt", t)
        self.term.type_line(ALICE_PW)
        self.term.wait_for(terminal_test.root_line, "root", since=mark)
        self.shell(mark)

        mark, _ = self.start("sudo whoami", self.prompt)
        _, t = self.act(mark, lambda: self.term.keys("C-c"), SUDO_PROMPT,
                        "sudo's password prompt after Ctrl-C")
        record("Ctrl-C in the finger wait -> sudo's password prompt", t)
        self.term.keys("C-c")
        self.shell(mark)

        if slow:
            mark, _ = self.start("sudo whoami", self.prompt)
            _, t = self.act(mark, lambda: self.term.type_line(ALICE_PW), terminal_test.root_line,
                            "root by the password typed at the finger prompt", timeout=SLOW_S)
            record("password typed at the finger prompt, Enter -> root", t)
            self.shell(mark)
            mark, t = self.start("echo '%s' | sudo -S whoami" % ALICE_PW, terminal_test.root_line,
                                 timeout=SLOW_S)
            record("echo PW | sudo -S whoami -> root", t)
            self.shell(mark)


def enable_profile(name, *disable):
    for other in disable:
        subprocess.run(["pam-auth-update", "--disable", other], check=True, capture_output=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=60)
    r = subprocess.run(["pam-auth-update", "--enable", name], capture_output=True, text=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=60)
    check(r.returncode == 0, "pam-auth-update --enable %s: %s%s" % (name, r.stdout, r.stderr))
    auth = [" ".join(l.split()) for l in open("/etc/pam.d/common-auth") if l.startswith("auth")]
    check(name in auth[0].replace("pam_fprintd", "fprintd").replace("pam_localauth",
                                                                     "localauth"), str(auth))
    return auth


def scan(path, print_id):
    """One SCAN to a virtual device; returns once the device took it."""
    common.read_to_eof(common.send_scan(path, print_id))


class Fprintd:
    """dbus-daemon (system type) at the default bus path, the real polkitd, fprintd -t."""

    def __init__(self, m):
        self.m = m
        self.virtual = m.path("fprintd-virtual.socket")
        state = m.path("fprintd-state")
        os.mkdir(state, 0o700)
        os.makedirs(os.path.dirname(BUS), exist_ok=True)
        conf = m.path("bus.conf")
        with open(conf, "w") as f:
            f.write("""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>unix:path=%s</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/>
<allow send_destination="*"/><allow receive_sender="*"/></policy></busconfig>
""" % BUS)
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=" + BUS,
                        FP_VIRTUAL_DEVICE=self.virtual, STATE_DIRECTORY=state)
        self.env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        log = open(m.path("fprintd.log"), "w")
        m.spawn(["dbus-daemon", "--config-file=" + conf, "--nofork", "--nopidfile", "--nosyslog"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        sandbox.wait_until(lambda: os.path.exists(BUS), "the private system bus")
        m.spawn([POLKITD, "--no-debug"], env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        sandbox.wait_until(lambda: terminal_test.bus_name_owned("org.freedesktop.PolicyKit1"), "polkitd")
        m.spawn([FPRINTD, "-t"], env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        sandbox.wait_until(lambda: terminal_test.bus_name_owned("net.reactivated.Fprint"), "fprintd")
        self.enroll()

    def enroll(self):
        p = subprocess.Popen(["stdbuf", "-oL", "fprintd-enroll", "-f", "right-index-finger",
                              ALICE], env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in p.stdout:
            lines.append(line.rstrip())
            if line.startswith("Enrolling") or "enroll-stage-passed" in line:
                scan(self.virtual, "alice-finger")
            if "enroll-completed" in line or "enroll-failed" in line:
                break
        p.wait(timeout=30)
        check(any("enroll-completed" in l for l in lines), "fprintd-enroll: %s" % lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--slow-runs", type=int, default=2,
                    help="runs of the two steps that wait for fprintd's 10 s timeout")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.module, args.bin = os.path.abspath(args.module), os.path.abspath(args.bin)
    if os.getuid() != 0:
        sys.exit("run as root")
    sandbox.enter("LA_BENCH_TERMINAL_NAMESPACE")
    for tool in ("sudo", "tmux", "fprintd-enroll", "dbus-daemon", "busctl", POLKITD, FPRINTD):
        if shutil.which(tool) is None and not os.access(tool, os.X_OK):
            sys.exit("%s is missing (make bench installs fprintd and polkitd)" % tool)
    m = sandbox.Machine(args.module, args.bin, {ALICE: ALICE_PW})
    figures = {"localauth": {}, "fprintd": {}}
    term = None
    try:
        m.write_sudoers([ALICE])
        m.pam_auth_update_root()
        m.start_daemon()
        m.enroll(ALICE)
        term = tmuxterm.Terminal(m.root, ALICE)
        ours_profile = enable_profile("localauth")
        # Both readers are touched the same way: SCAN on libfprint's virtual device socket.
        reader = os.path.join(m.path("state"), "virtual-reader.socket")
        ours = Side("localauth", term, "Password or finger for %s: " % ALICE,
                    lambda: scan(reader, "finger-1"), lambda: scan(reader, "finger-2"), 3)
        for i in range(args.runs):
            ours.round(figures["localauth"], i < args.slow_runs)
            m.ctl("lockout", "reset", "--user", ALICE)
        m.stop_daemon()
        theirs_profile = enable_profile("fprintd", "localauth")
        fp = Fprintd(m)
        theirs = Side("fprintd", term, "finger", lambda: scan(fp.virtual, "alice-finger"),
                      lambda: scan(fp.virtual, "stranger"), 1)
        for i in range(args.runs):
            theirs.round(figures["fprintd"], i < args.slow_runs)
    finally:
        if term is not None:
            term.close()
        m.close()
    print("sudo 1.9.13 in a tmux terminal, %d runs (%d of the slow steps); seconds, median "
          "[min / max]" % (args.runs, args.slow_runs))
    print("  ours:   %s" % " | ".join(ours_profile[:2]))
    print("  theirs: %s" % " | ".join(theirs_profile[:2]))
    print("%-52s %-24s %-24s" % ("step", "localauth", "fprintd"))
    for key in figures["localauth"]:
        cells = []
        for side in ("localauth", "fprintd"):
            v = figures[side].get(key, [])
            cells.append("%.3f [%.3f / %.3f] (%d)" % (statistics.median(v), min(v), max(v),
                                                     len(v)) if v else "-")
        print("%-52s %-24s %-24s" % (key, *cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
