# SPDX-License-Identifier: Apache-2.0
"""The keyring opens (issue 17): the real pam_gnome_keyring.so after pam_localauth.so, as Debian
places them, through the real libpam.

In the sandbox (sandbox.py: a private mount namespace, a scratch /etc with a test account whose
password pam_unix checks for real, the module installed where libpam finds it, the real
localauthd on its default socket), /etc/pam.d/gdm-password is Debian 12's (gdm3), including
common-auth and common-session, which the real pam-auth-update writes from the shipped
profiles (unix, systemd, gnome-keyring) and ours. A PAM client (pamconv.py) plays the display
manager's worker: pam_authenticate, pam_acct_mgmt, pam_setcred, pam_open_session, as root.
pam_gnome_keyring starts the real gnome-keyring-daemon as the user on a private D-Bus session
bus (XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS given through pam_putenv, as a display
manager does), with the user's scratch home. logind is python-dbusmock's
(Tests/system/logind_mock.py): the worker stands in a greeter session; once logged in, the user
has a session of their own. A "boot" is a fresh /proc/sys/kernel/random/boot_id (a file bound
over it) with a fresh daemon, logind, session bus and no keyring daemon.

Cases, in order, each on the state the previous one left:
  first-login   after the machine's first boot the user logs in with the password (no finger
                yet), then enrols a finger; "reboot".
  after-boot    the first login after boot: the finger is refused at once with "Password
                required after restart" (the reader untouched), the password is asked, typed;
                the login keyring is created and unlocked with it, a secret is stored.
  finger-unlock the next unlock (as GNOME's lock screen does: gdm-password again) by finger:
                succeeds without a password prompt; the keyring stays unlocked; the secret reads.
  reboot        a new boot: the finger is refused, the password asked, and the keyring opens
                again with it (the secret stored before the reboot reads back).
  old-behaviour a new boot with the rules turned off (password-after-restart = no,
                password-for-first-session = no): the finger logs in, and the keyring stays
                locked — the complaint this issue fixes, shown so that the cases above can fail.

Usage: keyring_test.py --module SO --bin DIR [-k NAME]   (as root)
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandbox  # noqa: E402
import seat  # noqa: E402
from sandbox import check, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
USER, PASSWORD = "lapwrules-kr", "Keyring-pass 4711"
SECRET = "the secret only the password opens"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
BUDGET_PROMPT_S = 1.0  # the finger is skipped "at once": the password prompt comes within this
PLACE = "Place your"
REQUIRED_AFTER_RESTART = "Password required after restart"

# Debian 12's /etc/pam.d/gdm-password (gdm3 43), without the SELinux and loginuid lines, which
# need a kernel audit and SELinux context the sandbox has no use for.
GDM_PASSWORD = """#%PAM-1.0
auth    requisite       pam_nologin.so
auth\trequired\tpam_succeed_if.so user != root quiet_success
@include common-auth
auth    optional        pam_gnome_keyring.so
@include common-account
session optional        pam_keyinit.so force revoke
session required        pam_limits.so
session required        pam_env.so readenv=1
session required        pam_env.so readenv=1 user_readenv=1 envfile=/etc/default/locale
@include common-session
session optional        pam_gnome_keyring.so auto_start
@include common-password
"""


class World:
    def __init__(self, args):
        self.args = args
        self.m = sandbox.Machine(args.module, args.bin, {USER: PASSWORD})
        self.uid = self.m.uids[USER]
        self.home = os.path.expanduser("~" + USER)
        self.runtime = "/run/user/%d" % self.uid
        self.logind = None
        self.bus = None
        self.boots = 0
        self.m.pam_auth_update_root()
        self.m.write_pam("gdm-password", GDM_PASSWORD)
        r = subprocess.run(["pam-auth-update", "--package", "--enable", "localauth"],
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                           capture_output=True, text=True)
        check(r.returncode == 0, "pam-auth-update: %s%s" % (r.stdout, r.stderr))
        with open("/etc/pam.d/common-auth") as f:
            self.common_auth = f.read()
        check("pam_localauth.so" in self.common_auth, "the profile is in common-auth")

    def path(self, *names):
        return self.m.path(*names)

    # -- a boot --------------------------------------------------------------------------------

    def boot(self, config=""):
        """Everything a reboot renews: the boot id, logind, the daemon, the user's bus."""
        self.shutdown()
        self.boots += 1
        boot_file = self.path("boot_id-%d" % self.boots)
        with open(boot_file, "w") as f:
            f.write(str(uuid.uuid4()) + "\n")
        subprocess.run(["mount", "--bind", boot_file, BOOT_ID], check=True)
        os.mkdir(self.path("logind-%d" % self.boots))
        self.logind = seat.LogindMock(self.path("logind-%d" % self.boots))
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.logind.address  # the daemon inherits it
        with open("/etc/localauthd.conf", "w") as f:  # the overlay's /etc: the default path
            f.write(config)
        self.m.start_daemon()
        os.makedirs(self.runtime, exist_ok=True)
        os.chown(self.runtime, self.uid, self.uid)
        os.chmod(self.runtime, 0o700)
        self.bus = subprocess.Popen(
            ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.uid, "--clear-groups",
             "env", "-i", "HOME=" + self.home, "XDG_RUNTIME_DIR=" + self.runtime,
             "PATH=/usr/bin:/bin", "dbus-daemon", "--session",
             "--address=unix:path=%s/bus" % self.runtime, "--nofork"],
            stdout=subprocess.DEVNULL, stderr=open(self.path("bus.log"), "a"))
        wait_until(lambda: os.path.exists(self.runtime + "/bus"), "the session bus")

    def logind_says(self, command):
        answer = self.logind.say(command)
        check(answer == "ok", "logind mock: %s -> %s" % (command, answer))

    def own_processes(self):
        """The test user's processes in this sandbox: its uid in this mount namespace. Other
        sandboxes running at the same time (another checkout's tests) give their first account the
        same uid number, so `pkill -u` would end their processes too."""
        mine = os.stat("/proc/self/ns/mnt").st_ino
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if (os.stat("/proc/" + entry).st_uid == self.uid
                        and os.stat("/proc/%s/ns/mnt" % entry).st_ino == mine):
                    found.append(int(entry))
            except OSError:
                pass  # ended meanwhile
        return found

    def shutdown(self):
        """What a power-off ends: the user's processes, the daemon, logind."""
        for pid in self.own_processes():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        if self.bus is not None:
            self.bus.wait()
            self.bus = None
        self.m.stop_daemon()
        if self.logind is not None:
            self.logind.stop(timeout=30)
            self.logind = None
        wait_until(lambda: not self.own_processes(), "the user's processes end")
        if os.path.ismount(BOOT_ID):
            subprocess.run(["umount", BOOT_ID], check=True)
        if os.path.exists(self.runtime):
            subprocess.run(["rm", "-rf", self.runtime], check=True)

    # -- PAM -----------------------------------------------------------------------------------

    def pam(self, ops, answers=(), finger=None):
        """gdm-password for USER as the display manager's worker (root): ops in order. finger:
        the print id touched when the module asks for a finger (None: nobody touches). Returns
        (result, the streamed conversation with the time of each line)."""
        spec = {"answers": list(answers), "stream": True, "ops": ops, "items": {"tty": ":0"},
                "env": ["XDG_RUNTIME_DIR=" + self.runtime,
                        "DBUS_SESSION_BUS_ADDRESS=unix:path=%s/bus" % self.runtime],
                "report_env": ["GNOME_KEYRING_CONTROL"]}
        start = time.monotonic()
        p = subprocess.Popen([PYTHON, os.path.join(self.args.pamconv_dir, "pamconv.py"),
                              "gdm-password", USER, "0", json.dumps(spec)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        result = None
        for line in p.stdout:
            lines.append((time.monotonic() - start, line.rstrip("\n")))
            if line.startswith("MSG ") and PLACE in line and finger is not None:
                self.m.touch(finger)
            elif line.startswith("{"):
                result = json.loads(line)
        p.wait(timeout=sandbox.WAIT_S)
        check(result is not None, "pamconv.py said nothing: %s" % p.stderr.read()[-800:])
        return result, lines

    # -- the keyring ---------------------------------------------------------------------------

    def as_user(self, argv, stdin=None, timeout=10):
        env = ["HOME=" + self.home, "XDG_RUNTIME_DIR=" + self.runtime, "PATH=/usr/bin:/bin",
               "DBUS_SESSION_BUS_ADDRESS=unix:path=%s/bus" % self.runtime]
        return subprocess.run(["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.uid,
                               "--clear-groups", "env", "-i", *env, *argv], input=stdin,
                              capture_output=True, text=True, timeout=timeout)

    def keyring_locked(self):
        """The login collection's Locked property (org.freedesktop.Secret.Collection)."""
        r = self.as_user(["gdbus", "call", "--session", "--dest", "org.freedesktop.secrets",
                          "--object-path", "/org/freedesktop/secrets/collection/login",
                          "--method", "org.freedesktop.DBus.Properties.Get",
                          "org.freedesktop.Secret.Collection", "Locked"])
        check(r.returncode == 0, "the login keyring does not answer: %s" % r.stderr[-300:])
        check(r.stdout.strip() in ("(<true>,)", "(<false>,)"), "Locked: %r" % r.stdout)
        return r.stdout.strip() == "(<true>,)"

    def store_secret(self):
        r = self.as_user(["secret-tool", "store", "--label=localauth test", "app", "localauth"],
                         stdin=SECRET)
        check(r.returncode == 0, "secret-tool store: %s" % r.stderr[-300:])

    def read_secret(self):
        # Only on an unlocked keyring: a locked one would start a prompter and wait.
        r = self.as_user(["secret-tool", "lookup", "app", "localauth"])
        check(r.returncode == 0, "secret-tool lookup: %s" % r.stderr[-300:])
        return r.stdout

    def close(self):
        self.shutdown()
        os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        self.m.close()


LOGIN = ["authenticate", "acct_mgmt", "setcred", "open_session"]


def login_with_password_after_refused_finger(w, expected_reason):
    """The greeter's login: the finger refused at once with the reason, the password typed."""
    result, lines = w.pam(LOGIN, answers=[PASSWORD])
    check(result["codes"] == {op: 0 for op in LOGIN}, "login: %s %s" % (result, lines))
    infos = [(t, l) for t, l in lines if l.startswith("MSG")]
    check(not any(PLACE in l for _, l in infos), "the finger was asked for: %s" % infos)
    refused = [t for t, l in infos if expected_reason in l]
    check(refused, "no %r line: %s" % (expected_reason, infos))
    prompt = [t for t, l in infos if l.startswith("MSG prompt")]
    check(prompt and prompt[0] >= refused[0], "the password prompt: %s" % infos)
    print("       finger refused (%r) and the password asked after %.3f s" % (
        expected_reason, prompt[0]))
    check(prompt[0] < BUDGET_PROMPT_S, "the password prompt came after %.3f s" % prompt[0])
    audit = "".join(w.m.audit())
    check("result=biometryLockout" in audit, "the daemon's decision: %s" % audit[-600:])
    # The reader was never opened: the virtual driver binds its socket only at open.
    return result


def case_first_login(w):
    w.boot()
    # No finger enrolled yet: the password logs in, and the stack reports it (pam_setcred).
    result, lines = w.pam(LOGIN, answers=[PASSWORD])
    check(result["codes"] == {op: 0 for op in LOGIN}, "first login: %s %s" % (result, lines))
    check(os.path.exists(w.m.path("state", "password-reported")), "the password use was reported")
    w.m.enroll(USER, "kr-finger")


def case_after_boot(w):
    w.boot()
    login_with_password_after_refused_finger(w, REQUIRED_AFTER_RESTART)
    w.logind_says("add-session c2 seat0 %d %s user active local" % (w.uid, USER))
    w.logind_says("place 0 c2")  # the lock screen's worker runs for the user's session
    w.logind_says("place %d c2" % w.uid)
    check(not w.keyring_locked(), "the login keyring is unlocked by the password")
    w.store_secret()
    check(w.read_secret() == SECRET, "the secret reads back")


def case_finger_unlock(w):
    unlock = ["authenticate", "acct_mgmt", "reinitialize_cred"]
    result, lines = w.pam(unlock, finger="kr-finger")
    check(result["codes"] == {op: 0 for op in unlock}, "unlock: %s %s" % (result, lines))
    check(not any(l.startswith("MSG prompt") for _, l in lines), "a password was asked: %s" % lines)
    check(not w.keyring_locked(), "the keyring stays unlocked")
    check(w.read_secret() == SECRET, "the secret still reads")


def case_reboot(w):
    w.boot()
    login_with_password_after_refused_finger(w, REQUIRED_AFTER_RESTART)
    w.logind_says("add-session c2 seat0 %d %s user active local" % (w.uid, USER))
    check(not w.keyring_locked(), "the keyring opens again with the password")
    check(w.read_secret() == SECRET, "the secret from before the reboot reads")


def case_old_behaviour(w):
    w.boot("password-after-restart = no\npassword-for-first-session = no\n")
    result, lines = w.pam(LOGIN, finger="kr-finger")
    check(result["codes"] == {op: 0 for op in LOGIN}, "finger login: %s %s" % (result, lines))
    check(not any(l.startswith("MSG prompt") for _, l in lines), "a password was asked: %s" % lines)
    w.logind_says("add-session c2 seat0 %d %s user active local" % (w.uid, USER))
    w.logind_says("place %d c2" % w.uid)
    check(w.keyring_locked(), "without the rules the finger login leaves the keyring locked")


CASES = [("first-login", case_first_login), ("after-boot", case_after_boot),
         ("finger-unlock", case_finger_unlock), ("reboot", case_reboot),
         ("old-behaviour", case_old_behaviour)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", required=True)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--pamconv-dir", default=HERE)
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    check(os.geteuid() == 0, "run as root")
    sandbox.enter("LA_KEYRING_SANDBOX")

    def on_failure(w):
        print("       daemon: %s" % w.m.daemon_tail(1200).replace("\n", "\n       "))

    passed, failed = sandbox.run_cases(lambda: World(args), CASES, only=args.k,
                                       on_failure=on_failure)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
