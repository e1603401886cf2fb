# SPDX-License-Identifier: Apache-2.0
"""A real screen locker in front of pam_localauth (issue 9).

i3lock (the Debian package) runs under Xvfb as an unprivileged user and is driven with
xdotool. Its PAM stack is the shipped pam/examples/i3lock, loaded through pam_wrapper from a
private service directory (module paths made absolute, socket= added). pam_unix checks the
password for real, through its setgid helper unix_chkpwd, against a private /etc/shadow: the
test runs in sandbox.py's private mount namespace (/etc an overlay holding one extra
account), so nothing on the machine changes. The daemon is the real localauthd with
libfprint's virtual reader, on the sandbox's /run/localauthd/socket.

Cases, each run --runs times with a fresh i3lock:
  (a) Enter alone, matching finger -> unlocked (i3lock exits 0);
  (b) Enter alone, wrong finger -> still locked; then the password + Enter -> unlocked < 1 s;
  (c) daemon stopped: the password + Enter -> unlocked < 1 s;
  (d) after a reboot (issue 17: a fresh boot id, the daemon restarted; a root stack had
      reported the password in the boot before): Enter alone -> refused at once, the daemon
      answering "Password required after restart" without the reader (i3lock shows no PAM
      messages; the daemon's audit line is timed), still locked; then the password +
      Enter -> unlocked < 1 s. Last: from there on the rules apply in this sandbox.
"Unlocked" is the i3lock process exiting with status 0. i3lock's --debug output (it prints
the typed text; this is a test account) says when it is drawn, verifying, or wrong.

Usage: locker_test.py --module SO --bin DIR [--runs N] [--example STACK] [-k NAME]   (as root)
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402
import sandbox  # noqa: E402
import testargs  # noqa: E402
from sandbox import Failure, check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "i3lock")
USER = "la-locker"
PASSWORD = "Locker-pass 4711"
BUDGET_PASSWORD_S = 1.0  # issue 9: the typed password unlocks in under 1 s
REQUIRED_AFTER_RESTART = "Password required after restart"
BUDGET_WAIT_S = 30.0  # for everything else: generous, a loaded 2-core machine


def wait_until(cond, what, timeout=BUDGET_WAIT_S, proc=None):
    deadline = time.monotonic() + timeout
    while not cond():
        check(proc is None or proc.poll() is None or cond(), "%s: the process exited" % what)
        check(time.monotonic() < deadline, "%s: not within %.0f s" % (what, timeout))
        time.sleep(0.005)


class World:
    """The sandbox (accounts, daemon), the X server and the PAM service directory."""

    def __init__(self, args):
        self.args = args
        self.m = sandbox.Machine(args.module, args.bin, {USER: PASSWORD})
        # The catalogues where the module would find them: i3lock still must not open one.
        self.m.add_catalogues(args.catalogues, args.localedir)
        self.root = self.m.root
        self.uid = self.m.uids[USER]
        self.home = pwd.getpwnam(USER).pw_dir
        self.start_x()
        self.m.start_daemon()
        self.sock = sandbox.SOCKET
        self.m.enroll(USER)
        self.write_service()

    def path(self, *names):
        return self.m.path(*names)

    def spawn(self, cmd, **kw):
        return self.m.spawn(cmd, **kw)

    def start_x(self):
        r, w = os.pipe()
        # No key autorepeat: on a loaded machine xdotool's release of Return can come late enough
        # for a repeated Return, and a second Enter right after a success can hang i3lock
        # (i3/i3lock#254), which would read as "still locked".
        self.xvfb = self.spawn(["Xvfb", "-displayfd", str(w), "-nolisten", "tcp", "-ardelay",
                                "3600000", "-screen", "0", "800x600x24"],
                               pass_fds=(w,), stdout=subprocess.DEVNULL,
                               stderr=open(self.path("xvfb.log"), "w"))
        os.close(w)
        with os.fdopen(r) as f:
            number = f.readline().strip()  # written once the server listens
        check(number.isdigit(), "Xvfb gave no display number: %s" % open(
            self.path("xvfb.log")).read()[-300:])
        self.display = ":" + number

    def ctl(self, *args):
        return self.m.ctl(*args)

    def touch(self, print_id):
        self.m.touch(print_id)

    def stop_daemon(self):
        self.m.stop_daemon()
        check(not lawire_answers(self.sock), "the daemon is stopped")

    def write_service(self):
        """pam/examples/i3lock as shipped, with absolute module paths and this socket."""
        unix = os.path.join(sandbox.security_dir(), "pam_unix.so")
        self.services = self.path("pam.d")
        os.mkdir(self.services)
        open(os.path.join(self.services, "other"), "w").close()
        stack = []
        for line in open(self.args.example):
            line = line.replace(" pam_localauth.so ", " %s socket=%s " % (self.args.module,
                                                                          self.sock))
            stack.append(line.replace(" pam_unix.so", " " + unix))
        check(any(self.args.module in l for l in stack), "pam_localauth in %s" % self.args.example)
        with open(os.path.join(self.services, "i3lock"), "w") as f:
            f.writelines(stack)
        os.chmod(self.services, 0o755)
        os.chmod(os.path.join(self.services, "i3lock"), 0o644)

    def close(self):
        # SIGTERM first (Machine.close): Xvfb removes its socket and lock file only when it
        # may clean up.
        self.m.close()


def lawire_answers(sock):
    try:
        lawire.handshake(sock, timeout=1)
        return True
    except (OSError, EOFError, ValueError):
        return False


class Locker:
    """One i3lock -n (it stays in the foreground and exits when unlocked)."""

    count = 0

    def __init__(self, world, lang=None):
        self.world = world
        # The X server releases the previous i3lock's grab when it handles that client's
        # disconnect, which a loaded machine can delay; i3lock gives up on a held grab after a
        # few tries ("Cannot grab pointer/keyboard"). Its window goes at the same moment.
        wait_until(lambda: self.xdotool("search", "--name", "^i3lock$", must_succeed=False) == 1,
                   "the previous i3lock's window is gone")
        Locker.count += 1
        self.log_path = world.path("i3lock-%d.log" % Locker.count)
        env = {"PATH": "/usr/bin:/bin", "HOME": world.home, "DISPLAY": world.display,
               "LD_PRELOAD": "libpam_wrapper.so", "PAM_WRAPPER": "1",
               "PAM_WRAPPER_SERVICE_DIR": world.services}
        if lang is not None:
            env.update(LANG=lang, LOCPATH=os.path.abspath(world.args.locales))
        self.proc = world.spawn(["setpriv", "--reuid", str(world.uid), "--regid", str(world.uid),
                                 "--clear-groups", "--", "i3lock", "-n", "--debug"], env=env,
                                cwd=world.home, stdout=open(self.log_path, "w"),
                                stderr=subprocess.STDOUT)
        # Drawn means the keyboard is grabbed and the event loop runs: keys reach it.
        self.wait_for("redraw_screen(unlock_state = 0, auth_state = 0)")

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, text, count=1):
        try:
            wait_until(lambda: self.log().count(text) >= count, "i3lock: %r" % text,
                       proc=self.proc)
        except Failure as e:
            raise Failure("%s (exit status %s):\n%s" % (e, self.proc.poll(), self.log()[-800:]))

    def xdotool(self, *args, must_succeed=True):
        """Runs xdotool; a connection the X server refused (seen with three servers on a loaded
        machine) is tried again, as it is not the answer. Returns the exit status."""
        deadline = time.monotonic() + BUDGET_WAIT_S
        while True:
            r = subprocess.run(["xdotool", *args], env=dict(os.environ, DISPLAY=self.world.display),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               timeout=BUDGET_WAIT_S)
            if "open display" not in r.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(not must_succeed or r.returncode == 0, "xdotool %s: %s" % (" ".join(args), r.stderr))
        return r.returncode

    def enter(self):
        self.xdotool("key", "Return")

    def type(self, text):
        self.xdotool("type", "--delay", "5", text)
        self.wait_for("current password = " + text)

    def unlocked_within(self, started, budget):
        """Waits for i3lock to exit; its status must be 0. Returns the seconds since started."""
        try:
            rc = self.proc.wait(timeout=BUDGET_WAIT_S)
        except subprocess.TimeoutExpired:
            raise Failure("still locked after %.0f s (%s):\n%s" % (
                BUDGET_WAIT_S, self.where_blocked(), self.log()[-600:]))
        took = time.monotonic() - started
        check(rc == 0, "i3lock exited with %d:\n%s" % (rc, self.log()[-600:]))
        check(took < budget, "unlocked after %.3f s, budget %.1f s" % (took, budget))
        return took

    def where_blocked(self):
        """Where a hung i3lock waits, from /proc: seen once after "successfully authenticated",
        not reproduced since; this is what the next occurrence should tell."""
        found = []
        for name in ("wchan", "syscall"):
            try:
                with open("/proc/%d/%s" % (self.proc.pid, name)) as f:
                    found.append("%s %s" % (name, f.read().strip()))
            except OSError as e:
                found.append("%s: %s" % (name, e))
        return "; ".join(found)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def still_locked_then_the_password_unlocks(lock, after):
    """After a failed attempt: still locked; the password and Enter unlock within budget."""
    check(lock.proc.poll() is None, "still locked after %s" % after)
    # i3lock shows "Wrong!" for a while and holds Enter until it clears.
    lock.wait_for("clearing auth wrong")
    lock.type(PASSWORD)
    started = time.monotonic()
    lock.enter()
    return lock.unlocked_within(started, BUDGET_PASSWORD_S)


def case_a(world):
    """Enter alone, then the enrolled finger: unlocked."""
    lock = Locker(world)
    started = time.monotonic()
    lock.enter()
    lock.wait_for("auth_state = 1")  # verifying: i3lock is inside pam_authenticate
    world.touch("finger-1")
    return {"enter_to_unlocked": lock.unlocked_within(started, BUDGET_WAIT_S)}


def case_b(world):
    """Enter alone, a wrong finger: still locked; then the password and Enter: unlocked."""
    # Each run is one miss; five in a row would lock biometrics, and the next Enter would
    # then never reach the reader (and leave the touch queued). Root resets it after the run.
    check("biometry locked: no" in world.ctl("status", "--user", USER), "not locked out")
    lock = Locker(world)
    lock.enter()
    lock.wait_for("auth_state = 1")
    touched = time.monotonic()
    world.touch("finger-2")
    lock.wait_for("Authentication failure")
    refused = time.monotonic() - touched
    took = still_locked_then_the_password_unlocks(lock, "the wrong finger")
    world.ctl("lockout", "reset", "--user", USER)
    return {"wrong_finger_to_refused": refused, "password_enter_to_unlocked": took}


def case_c(world):
    """The daemon is stopped: the password and Enter unlock."""
    lock = Locker(world)
    lock.type(PASSWORD)
    started = time.monotonic()
    lock.enter()
    return {"password_enter_to_unlocked": lock.unlocked_within(started, BUDGET_PASSWORD_S)}


def case_d(world):
    """After a reboot: the finger is refused at once, the password unlocks."""
    world.m.new_boot()
    world.m.report_password(USER)  # the password was used in the boot before
    world.m.new_boot()
    before = len(world.m.audit())
    lock = Locker(world)
    started = time.monotonic()
    lock.enter()
    decided = lambda: [l for l in world.m.audit()[before:] if "op=evaluate" in l]  # noqa: E731
    wait_until(decided, "the daemon's answer")
    refused = time.monotonic() - started
    check(len(decided()) == 1 and "result=biometryLockout" in decided()[0]
          and REQUIRED_AFTER_RESTART in decided()[0], "refused by the rule: %s" % decided())
    check(refused < BUDGET_PASSWORD_S, "Enter alone refused after %.3f s" % refused)
    # The empty password then fails in pam_unix (after its failure delay).
    lock.wait_for("Authentication failure")
    took = still_locked_then_the_password_unlocks(lock, "Enter alone")
    return {"enter_alone_to_daemon_refused": refused, "password_enter_to_unlocked": took}


def case_languages(world):
    """LANG=de_DE.UTF-8 and ko_KR.UTF-8: a finger unlocks as in English. i3lock never calls
    setlocale and never draws a PAM message, so the module inside it stays in the C locale and
    never opens a catalogue (as pam_fprintd): the module takes the application's locale, never
    the environment's. Its question is still asked (the password_first prompt)."""
    figures = {}
    for lang in ("de_DE.UTF-8", "ko_KR.UTF-8"):
        lock = Locker(world, lang)
        started = time.monotonic()
        lock.enter()
        lock.wait_for("auth_state = 1")
        with open("/proc/%d/maps" % lock.proc.pid) as f:
            maps = f.read()
        check("localauth.mo" not in maps, "%s: i3lock (C locale) opened a catalogue" % lang)
        world.touch("finger-1")
        figures["%s enter_to_unlocked" % lang] = lock.unlocked_within(started, BUDGET_WAIT_S)
    return figures


def main():
    ap = testargs.module_arguments("--bin")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--example", default=EXAMPLE, help="the stack to test (pam.d syntax)")
    ap.add_argument("-k", default="", help="only the cases whose name contains this")
    ap.add_argument("--locales", required=True, help=".build/test-locales (make test-locales)")
    ap.add_argument("--catalogues", required=True, help=".build/share/locale (make locale)")
    ap.add_argument("--localedir", required=True, help="where the module looks: its LOCALEDIR")
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)
    args.bin = os.path.abspath(args.bin)
    if os.getuid() != 0:
        print("run as root: the daemon, the private /etc and setpriv need it")
        return 1
    sandbox.enter("LA_LOCKER_NAMESPACE")
    for tool in ("i3lock", "Xvfb", "xdotool", "setpriv", "stdbuf"):
        if shutil.which(tool) is None:
            print("FAIL %s is not installed (scripts/ensure-deps.sh installs it)" % tool)
            print("0 passed, 1 failed")
            return 1
    for name in ("localauthd", "localauthctl"):
        if not os.access(os.path.join(args.bin, name), os.X_OK):
            print("FAIL %s/%s is missing" % (args.bin, name))
            print("0 passed, 1 failed")
            return 1

    figures = {}

    def measured(fn):
        def run(world):
            if fn is case_c:
                world.stop_daemon()
            elif not lawire_answers(world.sock):
                world.m.start_daemon()  # after case c, which stops it
            for key, value in fn(world).items():
                figures.setdefault("%s: %s" % (fn.__name__[-1], key), []).append(value)
        return run

    def on_failure(world):
        print(world.m.daemon_tail(800))

    cases = [("a_enter_alone_and_the_enrolled_finger_unlock", measured(case_a)),
             ("b_wrong_finger_stays_locked_then_the_password_unlocks_in_under_1s",
              measured(case_b)),
             ("c_daemon_stopped_the_password_unlocks_in_under_1s", measured(case_c)),
             ("languages_german_and_korean_a_finger_unlocks", measured(case_languages)),
             ("d_after_a_reboot_the_finger_is_refused_at_once_and_the_password_unlocks_in_under_1s",
              measured(case_d))]
    passed, failed = sandbox.run_cases(lambda: World(args), cases, args.k, args.runs,
                                       on_failure)
    if figures:
        print("figures (seconds):")
        sandbox.print_figures(figures)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
