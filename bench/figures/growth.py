# SPDX-License-Identifier: Apache-2.0
"""How cost grows (issues 18 and 29): 1, 10, 100, 1000 and 10,000 enrolled users; identify over
1, 5 and 10 fingers. Its own daemons on libfprint's virtual_image driver (real NBIS matching), so that nothing
the other figures measure is touched. docs/performance.md, "How cost grows"."""
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

import lawire  # pam/tests, on the path common.py sets
from common import (FINGER, ROOT, USER, connect_retrying, interleaved, log, pss_kb, rollup_kb,
                    rss_kb, stats, timed)
from stacks import Ours, OursOverDBus, Theirs


GROWTH_PREFIX = "lagrowth"
# The NBIS images (libfprint's examples/prints, public domain): shared/ beside the checkout, or
# /work/shared on the machine the project is built on.
PRINTS_DIRS = (os.path.join(ROOT, "..", "shared", "fixtures", "prints"),
               "/work/shared/fixtures/prints")
# libfprint's FpFinger numbers, which name fprintd's files: 1 left thumb ... 10 right little.
FINGER_NUMBERS = {FINGER: 7}


def image_frame(prints_dir, name):
    with open(os.path.join(prints_dir, name + ".raw"), "rb") as f:
        return f.read()


def send_frame(path, frame, patience=10.0):
    """One connection to virtual_image (retried while the driver is not listening: it listens
    only while the device is open), one frame; returns the connection, left open."""
    s = connect_retrying(path, patience, 0.005)
    s.sendall(frame)
    return s


def scan_to_answer(cmd, env, image_socket, frame, prompt, what, until=None):
    """scan_to_answer_once, again while the device is still claimed by the previous client (a
    daemon releases it a moment after that client exits)."""
    for _ in range(100):
        answer = scan_to_answer_once(cmd, env, image_socket, frame, prompt, what, until)
        if answer is not None:
            return answer
        time.sleep(0.05)
    sys.exit("%s: the device stays claimed" % what)


def scan_to_answer_once(cmd, env, image_socket, frame, prompt, what, until=None, settle=0.5,
                        patience=90.0):
    """Runs a client in a pty; once it has printed `prompt` (the reader is asked for a finger) and
    `settle` seconds more have passed (virtual_image opens with a 100 ms delay and drops frames
    while it is not capturing), sends `frame`. The answer: the client's exit, or with `until`
    (markers) the first marker printed, after which the client gets SIGINT (fprintd-enroll then
    stops the enrolment and releases the device) and is waited for. Returns (ns from the frame
    sent to the answer, exit code or None, output), or None when the device was still claimed.
    A frame is never sent twice: one the driver has not read stays in its socket and would be the
    next operation's scan. No answer within `patience` s stops the bench."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out, conn, t0, elapsed = b"", None, None, None
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 30 if t0 is None else patience)
            if not ready:
                p.kill()
                sys.exit("%s: no %s: %r" % (what, "prompt" if t0 is None else
                                            "answer to the frame (dropped?)", out))
            try:
                data = os.read(master, 4096)
            except OSError:
                data = b""
            if not data:
                break
            out += data
            if t0 is None and prompt in out.lower():
                time.sleep(settle)
                try:
                    conn = send_frame(image_socket, frame)
                except OSError as e:
                    p.kill()
                    p.wait()
                    try:
                        out += os.read(master, 65536)
                    except OSError:
                        pass
                    sys.exit("%s: the reader never listened (%s): %r" % (what, e, out))
                t0 = time.monotonic_ns()
                out = b""  # markers count from the frame on
            elif t0 is not None and until and any(m in out for m in until):
                elapsed = time.monotonic_ns() - t0
                p.send_signal(signal.SIGINT)
                break
        if until is None:
            rc = p.wait(timeout=30)
            elapsed = time.monotonic_ns() - t0 if t0 is not None else None
        else:
            # The rest of the output (the client's goodbye) is read so that it never blocks.
            deadline = time.monotonic() + 30
            while p.poll() is None and time.monotonic() < deadline:
                if select.select([master], [], [], 0.1)[0]:
                    try:
                        out += os.read(master, 4096)
                    except OSError:
                        pass
            rc = p.wait(timeout=5)
            # The daemon hears of the stopped client after it exits; a next client that comes
            # sooner has been seen to have its enrolment cancelled by our fprintd door
            # (docs/performance.md, "How cost grows"). Both sides wait alike, outside the timing.
            time.sleep(1.0)
    finally:
        os.close(master)
        if conn is not None:
            conn.close()
    if elapsed is None and t0 is None and any(
            m in out.lower() for m in (b"alreadyinuse", b"reader is in use", b"reader is busy")):
        return None
    if elapsed is None:
        sys.exit("%s: no answer (exit %s): %r" % (what, p.returncode, out))
    return elapsed, rc, out.decode(errors="replace")


class GrowthOurs(Ours):
    """localauthd on virtual_image (FP_VIRTUAL_IMAGE, no --virtual-reader), its own state."""

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        self.image = os.path.join(tmp, "image.socket")
        self.reader_env = {"FP_VIRTUAL_IMAGE": self.image}

    reader_flags = ()

    def import_fprintd(self, root):
        _, out = timed(self.ctl("import-fprintd", "--from", root), self.env(), "import-fprintd")
        return out

    def cold_start(self, user):
        """As figure 5: systemd-socket-activate holds the socket; the first `localauthctl list`
        starts the daemon on a copy of the state (and its machine key) and is timed to its answer."""
        d, state = self.copy_state("cold-")
        sock = os.path.join(d, "socket")
        act = self.bench.procs.start(
            ["systemd-socket-activate", "-l", sock, "-E", "FP_VIRTUAL_IMAGE=" + self.image + ".cold",
             os.path.join(self.bin, "localauthd"), "--socket", sock, "--state-dir", state],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = act.stderr.readline()
        if "Listening" not in line:
            sys.exit("systemd-socket-activate: %r" % line)
        elapsed, out = timed(self.ctl("list", "--user", user), dict(os.environ,
                             LOCALAUTHD_SOCKET=sock), "cold localauthctl list")
        if FINGER not in out:
            sys.exit("cold list does not show the finger: %r" % out)
        self.bench.procs.stop(act)
        act.stderr.close()
        shutil.rmtree(d, ignore_errors=True)
        return elapsed

    def accounts_read_at_start(self, user):
        """A cold start as cold_start's (untimed) with the daemon under strace: the accounts whose
        folder (state/users/NAME) the daemon touched by path from exec to the first `list` of
        `user` answered, and the number of file calls naming the state directory at all."""
        d, state = self.copy_state("trace-")
        sock, trace = os.path.join(d, "socket"), os.path.join(d, "trace")
        # strace outside: the daemon must keep the pid systemd-socket-activate names in LISTEN_PID.
        act = self.bench.procs.start(
            ["strace", "-f", "-qq", "-e", "trace=%file,getdents64", "-o", trace,
             "systemd-socket-activate", "-l", sock, "-E", "FP_VIRTUAL_IMAGE=" + self.image + ".cold",
             os.path.join(self.bin, "localauthd"), "--socket", sock, "--state-dir", state],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if "Listening" not in act.stderr.readline():
            sys.exit("systemd-socket-activate (strace) did not listen")
        timed(self.ctl("list", "--user", user), dict(os.environ, LOCALAUTHD_SOCKET=sock),
              "cold localauthctl list (strace)")
        self.bench.procs.stop(act)
        act.stderr.close()
        accounts, calls = set(), 0
        users_dir = state + "/users/"
        with open(trace) as f:
            for line in f:
                if "execve(" in line:
                    continue
                if state in line:
                    calls += 1
                at = line.find(users_dir)
                if at >= 0:
                    name = line[at + len(users_dir):].split("/")[0].split('"')[0]
                    if name:
                        accounts.add(name)
        shutil.rmtree(d, ignore_errors=True)
        return sorted(accounts), calls

    def request(self, msg, user):
        """One request on its own connection (HELLO, the request, its RESULT); the RESULT's fields."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.sock)
            s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="bench growth"))
            if lawire.read_frame(s)[0] != lawire.WELCOME:
                sys.exit("growth: no WELCOME")
            s.sendall(lawire.encode(lawire.MESSAGES[msg], user=user))
            while True:
                kind, fields = lawire.read_frame(s)
                if kind == lawire.RESULT:
                    return fields
                if kind == lawire.ERROR:
                    sys.exit("growth: %s %s: %r" % (msg, user, fields))

    def verify_cmd(self, user):
        return self.ctl("verify", "--user", user, "--timeout", "120")


class GrowthTheirs(Theirs):
    """fprintd on virtual_image, on its own private bus with its own state directory."""

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        self.image = os.path.join(tmp, "image.socket")

    def env(self):
        env = super().env()
        env.pop("FP_VIRTUAL_DEVICE", None)
        env["FP_VIRTUAL_IMAGE"] = self.image
        return env

    def enrol_image(self, user, finger, frame):
        """fprintd-enroll, one frame per stage, each sent once fprintd asks for the finger."""
        enrol = subprocess.Popen(["stdbuf", "-oL", "fprintd-enroll", "-f", finger, user],
                                 env=self.env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        lines, conn = [], None
        for line in enrol.stdout:
            lines.append(line.rstrip())
            if line.startswith("Enrolling") or "enroll-stage-passed" in line:
                time.sleep(0.3)  # virtual_image drops a frame that comes before it captures
                if conn is not None:
                    conn.close()
                conn = send_frame(self.image, frame)
            if "enroll-completed" in line or "enroll-failed" in line:
                break
        enrol.wait(timeout=60)
        if conn is not None:
            conn.close()
        if enrol.returncode != 0 or not any("enroll-completed" in x for x in lines):
            sys.exit("fprintd-enroll on virtual_image failed: %s" % lines)

    def verify_cmd(self, user):
        return ["fprintd-verify", "-f", "any", user]

    def cold_start(self, user):
        """As figure 5: fprintd stopped, the first fprintd-list starts it (D-Bus activation)."""
        self.stop_fprintd()
        elapsed, out = timed(["fprintd-list", user], self.env(), "cold fprintd-list")
        self.pid = self.owner_pid("net.reactivated.Fprint")
        if FINGER not in out or not self.pid:
            sys.exit("cold fprintd-list %s: %r" % (user, out))
        return elapsed


def adapt_print(data, user, finger_number):
    """The same print for another account or finger, through libfprint itself (its GObject
    bindings): deserialise, set the username and finger properties, serialise. libfprint's own
    format, exactly what fprintd writes at enrolment; our import checks it as any other."""
    import gi
    gi.require_version("FPrint", "2.0")
    from gi.repository import FPrint
    p = FPrint.Print.deserialize(data)
    p.set_property("username", user)
    p.set_property("finger", FPrint.Finger(finger_number))
    return bytes(p.serialize())


class GrowthDBusOurs(OursOverDBus):
    """figure 10's daemon (its fprintd door on a private bus of its own, python-dbusmock's logind
    beside it) on virtual_image: fprintd-enroll reaches its enrolment's duplicate check exactly as
    it reaches fprintd's; localauthctl reaches its socket."""
    name = "localauth"
    reader_flags = ()

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        self.bin = bench.args.bin
        self.image = os.path.join(tmp, "image.socket")

    ctl = Ours.ctl
    import_fprintd = GrowthOurs.import_fprintd
    request = GrowthOurs.request
    verify_cmd = GrowthOurs.verify_cmd

    def env(self):
        env = dict(super().env(), LOCALAUTHD_SOCKET=self.sock, FP_VIRTUAL_IMAGE=self.image)
        env.pop("FP_VIRTUAL_DEVICE", None)
        return env


class Growth:
    """The growth phase. Users: 1 -> 10 -> ... -> 10,000 (--growth-users; each step adds accounts) on one pair of
    daemons. Fingers, on a second pair: root with 1, 5, 10 fingers (verify: identify over them),
    and the enrolment's duplicate check (identify over every account's prints) at 1, 5, 10, 50."""

    ENROLLEE = GROWTH_PREFIX + "-enrol"  # enrols only to be checked against everyone's prints

    def __init__(self, bench, prints_dir):
        self.bench, self.args = bench, bench.args
        self.tmp = os.path.join(bench.tmp, "growth")
        os.mkdir(self.tmp)
        self.whorl = image_frame(prints_dir, "whorl")
        self.arch = image_frame(prints_dir, "arch")
        self.out = {"users": {}, "fingers": {}, "gallery": {}}

    def interleaved(self, blocks, fn):
        """Over self.sides, the pair in use."""
        return interleaved(self.sides, blocks, fn)

    def print_path(self, user, number):
        return os.path.join(self.theirs.state, user, self.driver, self.device, str(number))

    def write_print(self, user, number):
        """A print in fprintd's tree (fprintd reads it there; ours takes it by import-fprintd)."""
        path = self.print_path(user, number)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(adapt_print(self.template, user, number))

    def pair(self, ours, theirs):
        """Starts a pair; the first print of each pair is enrolled through fprintd on virtual_image
        (five frames of NBIS's whorl), and localauthd takes it by import-fprintd."""
        self.ours, self.theirs = ours, theirs
        self.sides = (ours, theirs)
        theirs.start()
        ours.start()
        theirs.enrol_image(USER, FINGER, self.whorl)
        user_dir = os.path.join(theirs.state, USER)
        self.driver = os.listdir(user_dir)[0]
        self.device = os.listdir(os.path.join(user_dir, self.driver))[0]
        with open(self.print_path(USER, FINGER_NUMBERS[FINGER]), "rb") as f:
            self.template = f.read()
        self.imported(USER, 1)

    def imported(self, user, fingers):
        """localauthd imports fprintd's tree; `user` must then hold `fingers` fingers."""
        out = self.ours.import_fprintd(self.theirs.state)
        got = self.ours.request("STATUS", user).get("enrolledCount")
        if got != fingers:
            sys.exit("growth: %s has %s fingers after the import, not %d: %s" % (
                user, got, fingers, out))

    def unpair(self):
        for side in self.sides:
            if isinstance(side, GrowthDBusOurs) or side is self.theirs:
                if side is self.theirs:
                    side.stop_fprintd()
                for p in (getattr(side, "daemon", None), side.polkitd, side.dbus):
                    if p is not None:
                        self.bench.procs.stop(p)
                if getattr(side, "logind", None):
                    side.logind.stop()
            else:
                self.bench.procs.stop(side.daemon)

    def run(self):
        began = time.monotonic()
        a = self.args
        log("growth: users %s (enrolling one finger through fprintd on virtual_image) ..."
            % a.growth_users)
        self.pair(GrowthOurs(self.bench, os.path.join(self.tmp, "users-ours")),
                  GrowthTheirs(self.bench, os.path.join(self.tmp, "users-theirs")))
        self.users = [USER]
        for n in a.growth_users:
            self.grow_users(n)
            self.measure_users(n)
        self.unpair()
        log("growth: fingers %s, duplicate check over %s prints ..." % (
            a.growth_fingers, a.growth_gallery))
        self.pair(GrowthDBusOurs(self.bench, os.path.join(self.tmp, "fingers-ours")),
                  GrowthTheirs(self.bench, os.path.join(self.tmp, "fingers-theirs")))
        gallery = sorted(set(a.growth_fingers) | set(a.growth_gallery))
        for n in gallery:
            self.grow_gallery(n)
            if n in a.growth_fingers:
                self.measure_fingers(n)
            if n in a.growth_gallery:
                self.measure_duplicate_check(n)
        self.unpair()
        self.out["seconds"] = time.monotonic() - began
        self.out["loadavg_after"] = os.getloadavg()
        return self.out

    # -- users

    def grow_users(self, n):
        t0 = time.monotonic()
        while len(self.users) < n:
            user = "%s%04d" % (GROWTH_PREFIX, len(self.users))
            self.write_print(user, FINGER_NUMBERS[FINGER])
            self.users.append(user)
        self.imported(self.users[-1], 1)
        log("growth: %d users (fprintd's files and localauthd's import: %.1f s)" % (
            n, time.monotonic() - t0))

    def measure_users(self, n):
        a, r = self.args, {}
        # The newest account: its files are the last written.
        who = self.users[-1]
        # Start-up: as figure 5 (the first list as a whole process, the daemon not running).
        out = self.interleaved(a.growth_cold_runs, lambda s: s.cold_start(who))
        r["cold start (list)"] = {s: stats(v) for s, v in out.items()}
        if shutil.which("strace"):
            accounts, calls = self.ours.accounts_read_at_start(who)
            r["accounts read from exec to the first answer (ours, strace)"] = {
                "accounts": accounts, "asked": who, "state directory file calls": calls}
        # list and status as whole processes, daemon running; each round asks for another user.
        picks = [self.users[(i * 7919) % len(self.users)] for i in range(a.growth_runs + 1)]
        calls = [0]

        def listing(side):  # both sides of a round ask for the same user
            user = picks[calls[0] // 2]
            calls[0] += 1
            cmd = side.ctl("list", "--user", user) if side is self.ours else ["fprintd-list", user]
            if side is self.theirs and side.polkitd.poll() is not None:
                sys.exit("growth: the private bus's polkitd has exited (%s); its log: %s" % (
                    side.polkitd.returncode, tail(os.path.join(side.tmp, "polkitd.log"))))
            elapsed, text = timed(cmd, side.env(), "list")
            if FINGER not in text:
                sys.exit("growth: list %s shows no finger: %r" % (user, text))
            return elapsed
        out = self.interleaved(a.growth_runs + 1, listing)
        r["list (warm)"] = {s: stats(v[1:]) for s, v in out.items()}
        samples = []
        for user in picks:
            elapsed, text = timed(self.ours.ctl("status", "--user", user), self.ours.env(),
                                  "status")
            if "1" not in text:
                sys.exit("growth: status %s: %r" % (user, text))
            samples.append(elapsed)
        r["status (warm)"] = {"localauth": stats(samples[1:])}
        # Memory: a fresh start and one list of root, settled; then every user listed (and, ours,
        # its status asked), settled. fprintd has no status; its lists go 100 users a process.
        mem = {}
        for side in self.sides:
            side.restart()
            subprocess.run(side.list_cmd(), env=side.env(), capture_output=True, check=True)
        time.sleep(1)
        for side in self.sides:
            mem[side.name] = {"after start": memory_of(side.pid)}
        for user in self.users:
            if self.ours.request("LIST", user).get("finger") != FINGER:
                sys.exit("growth: LIST %s shows no finger" % user)
            self.ours.request("STATUS", user)
        for i in range(0, len(self.users), 100):
            subprocess.run(["fprintd-list", *self.users[i:i + 100]], env=self.theirs.env(),
                           capture_output=True, check=True)
        time.sleep(1)
        for side in self.sides:
            mem[side.name]["after requests"] = memory_of(side.pid)
        r["memory"] = mem
        self.out["users"][str(n)] = r

    # -- fingers

    def grow_gallery(self, n):
        """n prints in all: root's fingers 1 ... min(n, 10), then accounts of ten fingers each."""
        have = sum(len(files) for _, _, files in os.walk(self.theirs.state))
        number = 0
        while have < n:
            number += 1
            user = USER if number <= 10 else "%sf%d" % (GROWTH_PREFIX, (number - 1) // 10)
            finger = (number - 1) % 10 + 1
            if not os.path.exists(self.print_path(user, finger)):
                self.write_print(user, finger)
                have += 1
        self.imported(USER, min(n, 10))

    def measure_fingers(self, n):
        """Each run: a finger that matches none (arch: every print of root's is compared), then one
        that matches (whorl; so the miss never becomes our lockout). Timed from the frame sent to
        the answer: fprintd-verify -f any exits after one scan (verify-no-match or verify-match);
        localauthctl verify exits on a match, and on a miss says "Not recognised, try again" and
        waits for the next try (three in all), so a miss is timed to that line and the client is
        then stopped (SIGINT)."""
        samples = {s.name: {"no match": [], "match": []} for s in self.sides}

        def one(side):
            for label, frame, ok in (("no match", self.arch, False), ("match", self.whorl, True)):
                ours_miss = side is not self.theirs and not ok
                elapsed, rc, text = scan_to_answer(
                    side.verify_cmd(USER), side.env(), side.image, frame, b"finger",
                    "%s verify (%s, %d fingers)" % (side.name, label, n),
                    until=(b"Not recognised", b"not available") if ours_miss else None)
                if ours_miss:
                    good = "Not recognised" in text
                elif side is self.theirs:
                    good = rc == (0 if ok else 1) and (
                        "verify-match" if ok else "verify-no-match") in text
                else:
                    good = rc == 0
                if not good:
                    sys.exit("growth: %s, %s over %d fingers: exit %d: %s" % (
                        side.name, label, n, rc, text))
                samples[side.name][label].append(elapsed)
        self.interleaved(self.args.growth_identify_runs, one)
        self.out["fingers"][str(n)] = {
            "verify (identify), no match": {s: stats(v["no match"]) for s, v in samples.items()},
            "verify (identify), match": {s: stats(v["match"]) for s, v in samples.items()}}

    def measure_duplicate_check(self, n):
        """fprintd-enroll for an account with no prints, through each daemon's D-Bus: its first
        scan is identified against every account's prints. arch (no match: all n compared; timed
        to the first stage passed, then the enrolment is stopped) and whorl (timed to
        enroll-duplicate)."""
        samples = {s.name: {"no match": [], "match": []} for s in self.sides}

        def one(side):
            for label, frame, marker in (("no match", self.arch, b"enroll-stage-passed"),
                                         ("match", self.whorl, b"enroll-duplicate")):
                elapsed, _, text = scan_to_answer(
                    ["fprintd-enroll", "-f", FINGER, self.ENROLLEE], side.env(), side.image,
                    frame, b"enrolling", "%s duplicate check (%s, %d prints)" % (
                        side.name, label, n), until=(b"enroll-", b"failed", b"rror"))
                if marker.decode() not in text:
                    sys.exit("growth: %s duplicate check, %s over %d prints: %r" % (
                        side.name, label, n, text))
                samples[side.name][label].append(elapsed)
        self.interleaved(self.args.growth_identify_runs, one)
        self.out["gallery"][str(n)] = {
            "enrol duplicate check, no match": {s: stats(v["no match"])
                                                for s, v in samples.items()},
            "enrol duplicate check, match": {s: stats(v["match"]) for s, v in samples.items()}}


def tail(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:] or "(empty)"
    except OSError as e:
        return "(%s)" % e


def memory_of(pid):
    return {"rss_kb": rss_kb(pid), "pss_kb": pss_kb(pid),
            "private_dirty_kb": rollup_kb(pid, "Private_Dirty")}


def growth_phase(bench):
    """Runs the growth phase into bench.results["growth"], or says why it cannot."""
    a = bench.args
    prints_dir = a.prints or next((d for d in PRINTS_DIRS if os.path.exists(
        os.path.join(d, "whorl.raw"))), None)
    if prints_dir is None:
        log("growth: no NBIS images (whorl.raw, arch.raw) in %s: the phase is skipped"
            % " or ".join(PRINTS_DIRS))
        bench.results["growth"] = {"skipped": "no NBIS images"}
        return
    log("growth: users %s, fingers %s ..." % (a.growth_users, a.growth_fingers))
    try:
        bench.results["growth"] = Growth(bench, prints_dir).run()
    except SystemExit as e:
        # The figures taken before stay printed and written; the run still fails (bench.py).
        bench.results["growth"] = {"failed": str(e.code)}
        log("growth: FAILED: %s" % e.code)


def print_growth(g):
    """The growth figures, each beside its goal (the issue sets none: figures, not goals)."""
    if "skipped" in g or "failed" in g:
        print("\nhow cost grows: %s (%s)" % ("skipped" if "skipped" in g else "FAILED",
                                           g.get("skipped") or g.get("failed")))
        return
    print("\nhow cost grows (%.0f s; load %.2f at the end); ms: median [min / p95 / max] (n); "
          "goal: none, figures" % (g["seconds"], g["loadavg_after"][0]))

    def cell(s):
        if not s:
            return "-"
        return "%.2f [%.2f/%.2f/%.2f] (%d)" % (s["median"], s["min"], s["p95"], s["max"], s["n"])
    print("%-44s %-36s %-36s %7s" % ("figure", "localauth", "fprintd", "ratio"))
    rows = []
    for n, r in g["users"].items():
        for key in ("cold start (list)", "list (warm)", "status (warm)"):
            rows.append(("%s users: %s" % (n, key), r[key]))
    for part, what in (("fingers", "fingers"), ("gallery", "prints")):
        for n, r in g[part].items():
            for key in r:
                rows.append(("%s %s: %s" % (n, what, key), r[key]))
    for label, sides in rows:
        o, t = sides.get("localauth"), sides.get("fprintd")
        ratio = "%.3f" % (o["median"] / t["median"]) if o and t else "-"
        print("%-44s %-36s %-36s %7s" % (label, cell(o), cell(t) if t else "- (no such request)",
                                         ratio))
    for n, r in g["users"].items():
        seen = r.get("accounts read from exec to the first answer (ours, strace)")
        if seen:
            print("%-44s %s" % ("%s users: accounts read at start" % n, "%d (%s), asked for %s; "
                                "%d file calls in the state directory" % (
                                    len(seen["accounts"]), ", ".join(seen["accounts"][:3]),
                                    seen.get("asked", "-"), seen["state directory file calls"])))
    for n, r in g["users"].items():
        for when in ("after start", "after requests"):
            o, t = r["memory"]["localauth"][when], r["memory"]["fprintd"][when]
            print("%-44s %-36s %-36s %7.3f" % (
                "%s users: RSS %s" % (n, when),
                "%.1f MB (PSS %.1f, dirty %.1f)" % (o["rss_kb"] / 1024, (o["pss_kb"] or 0) / 1024,
                                                    (o["private_dirty_kb"] or 0) / 1024),
                "%.1f MB (PSS %.1f, dirty %.1f)" % (t["rss_kb"] / 1024, (t["pss_kb"] or 0) / 1024,
                                                    (t["private_dirty_kb"] or 0) / 1024),
                o["rss_kb"] / t["rss_kb"]))
    print("verify over 50 fingers: neither daemon can (at most 10 fingers an account, and a verify "
          "identifies over one account's prints); the enrolment's duplicate check above is the "
          "identify that spans accounts, in both")
