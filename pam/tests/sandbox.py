# SPDX-License-Identifier: Apache-2.0
"""A private machine for tests that run the real sudo, su, login and pam-auth-update.

Everything happens in a private mount namespace (enter() re-executes the calling script under
`unshare --mount`), so the machine's files never change. /etc is an overlay whose upper layer
is scratch: the tests write /etc/passwd, /etc/shadow, /etc/group (test accounts with known
passwords), /etc/pam.d and /etc/sudoers there. (An overlay and not bind mounts of single files:
a file bound over /etc/passwd is bypassed as soon as something on the machine, useradd for
one, replaces /etc/passwd by a rename.) The PAM module directory gets the host's modules plus
the pam_localauth.so under test, so that stacks name it without a path, as documented; a tmpfs
covers /run, where the real localauthd serves its default socket /run/localauthd/socket.
pam-auth-update's own state (/usr/share/pam-configs, /var/lib/pam, debconf's database) gets
scratch copies, and so do the files sudo and login write as they go (/var/lib/sudo,
/var/log/wtmp, btmp, lastlog). The mounts vanish with the namespace.
"""
import glob
import grp
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402
import procs  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # noqa: E402 — Debian 12's Python 3.11 still has it; only for test hashes

SOCKET = "/run/localauthd/socket"
BOOT_ID = "/proc/sys/kernel/random/boot_id"  # DESIGN.md: what identifies the boot
WAIT_S = 30.0  # for everything that is not a measured figure: a loaded 2-core machine
# Debian 12's /etc/pam.d/common-auth as libpam-runtime ships it, with no profile enabled: the
# stand-in for a machine's common-auth.
STOCK_COMMON_AUTH = """auth\t[success=1 default=ignore]\tpam_unix.so nullok
auth\trequisite\t\t\tpam_deny.so
auth\trequired\t\t\tpam_permit.so
"""


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_until(cond, what, timeout=WAIT_S, step=0.005):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        check(time.monotonic() < deadline, "%s: not within %.0f s" % (what, timeout))
        time.sleep(step)


def enter(marker):
    """Re-executes the running script in a private mount namespace (once)."""
    if os.environ.get(marker) == "1":
        return
    env = dict(os.environ, **{marker: "1"})
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", "--",
                           sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]], env)


def security_dir():
    """Where libpam looks for a module named without a path."""
    found = sorted(glob.glob("/lib/*/security/pam_unix.so") +
                   glob.glob("/usr/lib/*/security/pam_unix.so"))
    check(found, "pam_unix.so not found")
    return os.path.realpath(os.path.dirname(found[0]))


class Machine:
    """The scratch /etc, module directory, /run and daemon. Use inside enter()."""

    def __init__(self, module, bindir, accounts):
        """accounts: {name: password}. Each gets a uid, a home and a private group."""
        self.module = module
        self.bindir = bindir
        self.root = tempfile.mkdtemp(prefix="la-sandbox-")
        os.chmod(self.root, 0o755)
        self.children = []
        self.daemon = None
        self.uids = {}
        self.overlay_etc()
        self.add_accounts(accounts)
        for name in os.listdir("/etc/sudoers.d"):
            os.remove(os.path.join("/etc/sudoers.d", name))
        self.write_sudoers([])
        self.install_module()
        # What sudo (its lecture marks) and login (the login records) write on the way.
        if os.path.isdir("/var/lib/sudo"):
            self.bind_copy("/var/lib/sudo", "var-lib-sudo", empty=True)
        for log in ("wtmp", "btmp", "lastlog"):
            self.bind_empty_file("/var/log/" + log)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"], check=True)

    def path(self, *names):
        return os.path.join(self.root, *names)

    # -- files -------------------------------------------------------------------------------

    def bind_copy(self, target, name, empty=False):
        """A scratch copy of the directory target, bound over it; returns the copy's path."""
        copy = self.path(name)
        if empty or not os.path.isdir(target):
            os.mkdir(copy)
        else:
            shutil.copytree(target, copy, symlinks=True)
        st = os.stat(target) if os.path.exists(target) else None
        if st is not None:
            os.chown(copy, st.st_uid, st.st_gid)
            os.chmod(copy, st.st_mode & 0o7777)
        subprocess.run(["mount", "--bind", copy, target], check=True)
        return copy

    def overlay_etc(self):
        upper, work = self.path("etc-upper"), self.path("etc-work")
        os.mkdir(upper)
        os.mkdir(work)
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=/etc,upperdir=%s,workdir=%s" % (upper, work), "/etc"],
                       check=True)

    def bind_empty_file(self, target):
        """An empty file with target's owner and mode, bound over it (when it exists)."""
        if not os.path.isfile(target):
            return
        copy = self.path(target.strip("/").replace("/", "-"))
        open(copy, "w").close()
        st = os.stat(target)
        os.chown(copy, st.st_uid, st.st_gid)
        os.chmod(copy, st.st_mode & 0o7777)
        subprocess.run(["mount", "--bind", copy, target], check=True)

    def add_accounts(self, accounts):
        used = {p.pw_uid for p in pwd.getpwall()} | {g.gr_gid for g in grp.getgrall()}
        free = (u for u in range(64200, 65000) if u not in used)
        lines = {"passwd": "", "group": "", "shadow": ""}
        for name, password in accounts.items():
            uid = next(free)
            home = self.path("home-" + name)
            os.mkdir(home)
            os.chown(home, uid, uid)
            self.uids[name] = uid
            lines["passwd"] += "%s:x:%d:%d:localauth test:%s:/bin/bash\n" % (name, uid, uid, home)
            lines["group"] += "%s:x:%d:\n" % (name, uid)
            hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_SHA512))
            lines["shadow"] += "%s:%s:19000:0:99999:7:::\n" % (name, hashed)
        for name, extra in lines.items():
            with open("/etc/" + name, "a") as f:  # the overlay's copy
                f.write(extra)
        for name in accounts:
            check(pwd.getpwnam(name).pw_uid == self.uids[name], "%s resolves" % name)

    def write_sudoers(self, users):
        """Debian 12's /etc/sudoers, with these users allowed everything and no timestamp, so
        that every sudo asks; without mail_badpass (no mail leaves a test)."""
        text = ("Defaults\tenv_reset\n"
                'Defaults\tsecure_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:'
                '/sbin:/bin"\nDefaults\tuse_pty\nDefaults\ttimestamp_timeout=0\n'
                "root\tALL=(ALL:ALL) ALL\n")
        text += "".join("%s\tALL=(ALL:ALL) ALL\n" % u for u in users)
        with open("/etc/sudoers", "w") as f:  # the overlay's copy, mode and owner kept
            f.write(text)

    def write_pam(self, service, text):
        """/etc/pam.d/SERVICE (the overlay's copy)."""
        with open(os.path.join("/etc/pam.d", service), "w") as f:
            f.write(text)

    def install_module(self):
        """The host's module directory, copied, with the module under test added."""
        target = security_dir()
        copy = self.path("security")
        os.mkdir(copy)
        for f in os.listdir(target):
            shutil.copy2(os.path.join(target, f), os.path.join(copy, f), follow_symlinks=False)
        shutil.copy2(self.module, os.path.join(copy, "pam_localauth.so"))
        os.chmod(os.path.join(copy, "pam_localauth.so"), 0o644)
        os.chmod(copy, 0o755)
        subprocess.run(["mount", "--bind", copy, target], check=True)

    def pam_auth_update_root(self):
        """Scratch state for the real pam-auth-update: its profiles (the host's plus
        pam/pam-configs/localauth), its saved copies and debconf's database."""
        self.bind_copy("/usr/share/pam-configs", "pam-configs")
        self.bind_copy("/var/lib/pam", "var-lib-pam")
        self.bind_copy("/var/cache/debconf", "debconf")
        profile = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pam-configs",
                               "localauth")
        shutil.copy2(profile, "/usr/share/pam-configs/localauth")

    # -- languages ---------------------------------------------------------------------------

    def add_locales(self, locpath):
        """The locales built by `make test-locales` (localedef into .build/test-locales: de_DE,
        ko_KR, zh_CN, UTF-8), laid over /usr/lib/locale with a read-only overlay, so that setuid
        programs, which ignore LOCPATH, find them too; the machine's locale files stay as they are."""
        check(os.path.isdir(locpath), "%s: run make test-locales" % locpath)
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=%s:/usr/lib/locale" % os.path.abspath(locpath), "/usr/lib/locale"],
                       check=True)

    def add_catalogues(self, tree, localedir):
        """The built catalogues (.build/share/locale/LANG/LC_MESSAGES/localauth.mo) where the
        module under test looks for them (LOCALEDIR, $(PREFIX)/share/locale), through a
        read-only overlay on LOCALEDIR's nearest existing parent."""
        localedir = os.path.abspath(localedir)
        parent = localedir
        while not os.path.isdir(parent):
            parent = os.path.dirname(parent)
        extra = self.path("catalogues")
        shutil.copytree(tree, os.path.join(extra, os.path.relpath(localedir, parent)))
        os.chmod(extra, 0o755)
        for d, dirs, _ in os.walk(extra):
            for name in dirs:
                os.chmod(os.path.join(d, name), 0o755)
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=%s:%s" % (extra, parent), parent], check=True)

    # -- processes ---------------------------------------------------------------------------

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, **kw)
        self.children.append(p)
        return p

    def start_daemon(self, extra=()):
        """localauthd on the default socket with the virtual reader; extra: more arguments."""
        os.makedirs(os.path.dirname(SOCKET), mode=0o755, exist_ok=True)
        state = self.path("state")
        if not os.path.isdir(state):
            os.mkdir(state, 0o700)
        self.daemon_log = self.path("localauthd.log")
        self.daemon = self.spawn([os.path.join(self.bindir, "localauthd"), "--socket", SOCKET,
                                  "--state-dir", state, "--virtual-reader", *extra],
                                 stdout=subprocess.DEVNULL, stderr=open(self.daemon_log, "a"))
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                lawire.handshake(SOCKET, timeout=1)
                break
            except (OSError, EOFError, ValueError):
                check(self.daemon.poll() is None and time.monotonic() < deadline,
                      "localauthd did not come up: %s" % self.daemon_tail())
                time.sleep(0.02)
        os.chmod(SOCKET, 0o666)

    def daemon_tail(self, n=800):
        try:
            with open(self.daemon_log) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def audit(self):
        with open(self.daemon_log) as f:
            return [l for l in f if "audit " in l]

    def stop_daemon(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=WAIT_S)
        self.daemon = None

    def new_boot(self):
        """What a reboot means to the daemon: a fresh boot id (a file bound over the kernel's,
        in this private mount namespace) and a fresh daemon on the same state."""
        self.stop_daemon()
        self.boots = getattr(self, "boots", 0) + 1
        boot_file = self.path("boot_id-%d" % self.boots)
        with open(boot_file, "w") as f:
            f.write(str(uuid.uuid4()) + "\n")
        if os.path.ismount(BOOT_ID):
            subprocess.run(["umount", BOOT_ID], check=True)
        subprocess.run(["mount", "--bind", boot_file, BOOT_ID], check=True)
        self.start_daemon()

    def report_password(self, user, service="login"):
        """A root PAM stack's report that user's password was just used (what pam_setcred of
        login or sudo sends): the password-required rules apply from then on."""
        fields = lawire.password_used(SOCKET, user, service)
        check(fields.get("code") == 0, "PASSWORD_USED for %s: %s" % (user, fields))

    def ctl(self, *args, stdin=None, check_rc=True):
        env = dict(os.environ, LOCALAUTHD_SOCKET=SOCKET)
        r = subprocess.run([os.path.join(self.bindir, "localauthctl"), *args], env=env,
                           input=stdin, capture_output=True, text=True, timeout=WAIT_S)
        check(not check_rc or r.returncode == 0,
              "localauthctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def touch(self, print_id):
        self.ctl("simulate", "touch", print_id)

    def enroll(self, user, print_id="finger-1"):
        """Five touches once the daemon has asked for the finger, and not one more: a touch
        left queued in the virtual reader would answer the next verify."""
        env = dict(os.environ, LOCALAUTHD_SOCKET=SOCKET)
        p = self.spawn(["stdbuf", "-oL", os.path.join(self.bindir, "localauthctl"), "enroll",
                        "--user", user, "--finger", "right-index-finger"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = p.stdout.readline()
        check("finger" in first.lower(), "enrolment prompt: %r" % first)
        for _ in range(5):
            self.touch(print_id)
        out = first + p.stdout.read()
        check(p.wait(timeout=WAIT_S) == 0, "enrolment: %s" % out)

    def close(self):
        procs.stop_all(self.children)
        shutil.rmtree(self.root, ignore_errors=True)


def run_cases(make_world, cases, only="", runs=1, on_failure=None):
    """Runs each (name, fn) whose name contains only, runs times, against one world from
    make_world(); a case fails on any exception. Prints "ok"/"FAIL" lines; on_failure(world)
    may print more. Returns (passed, failed); a world that cannot be made fails once."""
    passed = failed = 0
    world = None
    try:
        world = make_world()
        for name, fn in cases:
            if only not in name:
                continue
            started = time.monotonic()
            try:
                for _ in range(runs):
                    fn(world)
                passed += 1
                print("ok   %s (%.2f s)" % (name, time.monotonic() - started))
            except Exception as e:  # noqa: BLE001 — any exception is this case's failure
                failed += 1
                print("FAIL %s: %s" % (name, e))
                if not isinstance(e, (Failure, AssertionError)):
                    traceback.print_exc()
                if on_failure is not None:
                    on_failure(world)
            sys.stdout.flush()
    except Exception as e:  # noqa: BLE001 — no world: every case fails
        failed += 1
        print("FAIL setup: %s" % e)
        traceback.print_exc()
    finally:
        if world is not None:
            world.close()
    return passed, failed


def print_figures(figures, unit="s"):
    """Each figure's n, median, min and max."""
    for key, values in figures.items():
        print("       %-62s n=%-3d median %.3f %s  min %.3f  max %.3f" % (
            key, len(values), statistics.median(values), unit, min(values), max(values)))
