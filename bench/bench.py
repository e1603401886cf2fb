#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench`: localauthd + pam_localauth.so side by side with fprintd + pam_fprintd.

One run, the same machine, the same libfprint virtual device kind (virtual_device, an instant
"SCAN id" sent the moment the PAM prompt arrives), the same PAM client (pam/tests/bench_client
under pam_wrapper, private service directory, /etc/pam.d untouched). The two stacks run at the
same time and the phases alternate between them (A B A B ...) so that load drift hits both alike.

Ours: the release localauthd --virtual-reader on a temporary socket and state directory.
Theirs: Debian's fprintd + libpam-fprintd (installed when missing; /etc/pam.d is checked to be
byte-identical afterwards) on a private system-type dbus-daemon with the real polkitd; fprintd is
started by D-Bus activation (`fprintd -t`) with FP_VIRTUAL_DEVICE and STATE_DIRECTORY.

Figures (docs/performance.md explains each):
  1  pam_authenticate, matching finger: total, start -> prompt, prompt -> result
  2  the same, another finger (tries=1 / max-tries=1)
  3  pamtester as a whole process, matching finger (prompt read from a pty)
  4  canEvaluatePolicy through LAContext (new connection each), status on one connection (ours)
  5  cold start: the first `list` as a whole process to its answer, daemon not running
     (ours: systemd-socket-activate; theirs: D-Bus activation)
  6  `localauthctl list` / `fprintd-list` as a whole process, daemon running
  7  daemon RSS (and PSS, private dirty) idle after start, after figure 1 and after 1000
     authentications
  8  1000 concurrent status clients while verifies run (ours): a) all at once, b) Poisson
     arrivals at 1000 requests per second in all, c) a) against a minimal C server (the floor),
     d) a) with each status client under a uid of its own and one heavy uid (issue 18)
  9  LASecret.loadData after a finger, beside evaluatePolicy (ours)
  10 fprintd's clients through localauthd's D-Bus door (--fprintd-compat, a private bus of its
     own with the real polkitd) beside fprintd: pam_fprintd.so pam_authenticate with a matching
     finger (the same bench_client, service line and reader driver), fprintd-list as a process
  growth (how cost grows; a pair of daemons of its own on libfprint's virtual_image, NBIS):
     1, 10, 100, 1000 enrolled users: cold start, list, status, memory, the accounts read at
     start (strace); verify over 1, 5, 10 fingers of one account; the enrolment's duplicate
     check over 1, 5, 10, 50 prints of all accounts (--no-growth skips it, --growth-only runs
     only it)

Usage: /usr/bin/python3 bench/bench.py [--quick] [--json PATH]   (as root; `make bench`)
Prints the table and writes JSON (default bench/results/bench-<UTC time>.json and latest.json).
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import pty
import select
import shutil
import signal
import socket
import stat
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the tree
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "pam", "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import lawire  # noqa: E402
import seat  # noqa: E402

PYTHON = "/usr/bin/python3"
USER = "root"  # LAContext authenticates the caller's own account: the bench runs as root
PRINT_ID, STRANGER = "bench-finger", "stranger"
FINGER = "right-index-finger"
PAM_SUCCESS = 0
FPRINTD = "/usr/libexec/fprintd"
POLKITD = "/usr/lib/polkit-1/polkitd"
INCUMBENT_PACKAGES = ["fprintd", "libpam-fprintd", "dbus-daemon", "polkitd"]
# The growth phase copies a print to other accounts and fingers through libfprint's bindings.
INCUMBENT_PACKAGES += ["gir1.2-fprint-2.0", "python3-gi"]
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)



def stats(values):
    """min / median / p95 (nearest rank) / max in milliseconds, and n."""
    v = sorted(values)
    if not v:
        return {"n": 0}
    p95 = v[max(0, math.ceil(0.95 * len(v)) - 1)]
    return {"n": len(v), "min": v[0] / 1e6, "median": statistics.median(v) / 1e6,
            "p95": p95 / 1e6, "max": v[-1] / 1e6}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
            "loadavg_before": os.getloadavg()}


def ms(ns):
    return ns / 1e6


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def pam_d_digest():
    """Every file under /etc/pam.d with its content, to prove nothing changed."""
    out = {}
    for dirpath, _, files in os.walk("/etc/pam.d"):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            try:
                out[path] = sha256(path)
            except OSError as e:
                out[path] = "unreadable: %s" % e
    return out


def ensure_incumbent():
    missing = [p for p in INCUMBENT_PACKAGES if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True
    ).stdout.strip() != "install ok installed"]
    if not missing:
        return []
    before = pam_d_digest()
    log("installing %s (the incumbent, for comparison) ..." % " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    if pam_d_digest() != before:
        sys.exit("installing %s changed /etc/pam.d: stop and restore it" % missing)
    return missing


class Processes:
    """Every process the bench starts, each in its own session; all are stopped at the end."""

    def __init__(self):
        self.procs = []

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=5):
        """SIGTERM to the process group (activated children included), then SIGKILL."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        # Children of the group (fprintd under dbus-daemon) may outlive their parent.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)
        self.procs = []


def wait_for(what, predicate, timeout=15.0, proc=None):
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            sys.exit("%s: the process exited (%d)" % (what, proc.returncode))
        if time.monotonic() > deadline:
            sys.exit("timed out waiting for %s" % what)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def connect_retrying(path, patience, pause):
    """A connection to a virtual device's socket, retried while the driver is not listening."""
    deadline = time.monotonic() + patience
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except (FileNotFoundError, ConnectionRefusedError):
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(pause)


def send_scan(path, print_id, patience=5.0):
    """Connects to the virtual device (retrying while it is not listening), sends SCAN; returns the
    socket: reading it to EOF tells the command was taken."""
    s = connect_retrying(path, patience, 0.0002)
    s.sendall(("SCAN %s" % print_id).encode())
    s.shutdown(socket.SHUT_WR)
    return s


def read_to_eof(s, timeout=10):
    s.settimeout(timeout)
    while s.recv(256):
        pass
    s.close()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for %d" % pid)


def rollup_kb(pid, field):
    """A field of /proc/PID/smaps_rollup (Pss, Private_Dirty, ...), in kB."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def pss_kb(pid):
    return rollup_kb(pid, "Pss")


def timed(cmd, env, what, expect=0):
    t0 = time.monotonic_ns()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.monotonic_ns() - t0
    if r.returncode != expect:
        sys.exit("%s: exit %d: %s%s" % (what, r.returncode, r.stdout, r.stderr))
    return elapsed, r.stdout


class Stack:
    """What the two sides share: a temporary directory, a PAM service directory, the client."""

    name = ""

    def __init__(self, bench, tmp):
        self.bench = bench
        self.tmp = tmp
        os.makedirs(tmp)
        self.services = os.path.join(tmp, "pam.d")
        os.mkdir(self.services)
        open(os.path.join(self.services, "other"), "w").close()
        self.auths = 0

    def write_service(self, name, line):
        with open(os.path.join(self.services, name), "w") as f:
            f.write(line + "\n")

    def pam_env(self):
        env = dict(self.env(), LD_PRELOAD="libpam_wrapper.so", PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=self.services)
        for k in ("PAM_RHOST", "PAM_TTY", "PAM_WRAPPER_DEBUGLEVEL"):
            env.pop(k, None)
        return env

    def client(self, runs, plan):
        """bench_client: RUNS pam_authenticate calls following PLAN [(service, print)...]."""
        cmd = [self.bench.args.client, self.virtual, USER, str(runs)] + [
            "%s:%s" % p for p in plan]
        r = subprocess.run(cmd, env=self.pam_env(), capture_output=True, text=True, timeout=900)
        if r.returncode != 0 and "pam_start(" in r.stderr:
            # pam_wrapper copies the service directory to /tmp/pam.* at pam_start; seen to fail
            # once on a shared machine (another job cleaning /tmp). The block is run again whole.
            self.auths += sum(1 for line in r.stdout.splitlines() if line.startswith("{"))
            log("%s: pam_start failed (%s); running the block again" % (
                self.name, r.stderr.strip().splitlines()[-1]))
            r = subprocess.run(cmd, env=self.pam_env(), capture_output=True, text=True,
                               timeout=900)
        if r.returncode != 0:
            sys.exit("%s: bench_client failed (%d): %s" % (self.name, r.returncode, r.stderr))
        rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        self.auths += len(rows)
        for row in rows:
            if row["prompt_ns"] < 0 or row["scan_errno"] or row["eof_ns"] < 0:
                sys.exit("%s: a run went wrong: %s" % (self.name, row))
        return rows

    def pamtester(self, service, print_id):
        """pamtester as a whole process; its stdout is a pty, so the prompt line arrives at once and
        the SCAN is sent then, as the in-process client does."""
        master, slave = pty.openpty()
        t0 = time.monotonic_ns()
        p = subprocess.Popen(["pamtester", "-v", service, USER, "authenticate"],
                             stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                             env=self.pam_env())
        os.close(slave)
        out, scan = b"", None
        try:
            while True:
                ready, _, _ = select.select([master], [], [], 15)
                if not ready:
                    p.kill()
                    sys.exit("%s: pamtester hangs: %r" % (self.name, out))
                try:
                    data = os.read(master, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
                if scan is None and b"finger" in out.lower():
                    scan = send_scan(self.virtual, print_id)
            rc = p.wait()
            elapsed = time.monotonic_ns() - t0
        finally:
            os.close(master)
        if scan is not None:
            read_to_eof(scan)
        self.auths += 1
        if rc != 0 or scan is None:
            sys.exit("%s: pamtester exit %d: %s" % (self.name, rc, out.decode(errors="replace")))
        return elapsed


class Ours(Stack):
    name = "localauth"
    # The reader: libfprint's virtual_device driven by `localauthctl simulate` (the growth phase
    # sets FP_VIRTUAL_IMAGE instead).
    reader_flags, reader_env = ("--virtual-reader",), {}

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        args = bench.args
        self.bin = args.bin
        self.sock = os.path.join(tmp, "socket")
        self.state = os.path.join(tmp, "state")
        self.virtual = os.path.join(self.state, "virtual-reader.socket")
        self.daemon = None
        self.log = os.path.join(tmp, "localauthd.log")
        self.write_service("la-match", "auth required %s socket=%s timeout=10" % (
            args.module, self.sock))
        self.write_service("la-nomatch", "auth required %s socket=%s timeout=10 tries=1" % (
            args.module, self.sock))
        self.match, self.nomatch = "la-match", "la-nomatch"
        self.phases = []

    def env(self):
        return dict(os.environ, LOCALAUTHD_SOCKET=self.sock)

    def start(self):
        with open(self.log, "a") as log_file:
            self.daemon = self.bench.procs.start(
                [os.path.join(self.bin, "localauthd"), "--socket", self.sock, "--state-dir",
                 self.state, *self.reader_flags], stdout=subprocess.DEVNULL, stderr=log_file,
                # The bench's PAM clients run as root and ask for other accounts, as a greeter's
                # worker does: they stand at python-dbusmock's greeter (pam/tests/seat.py).
                env=dict(seat.env(), **self.reader_env))

        def up():
            try:
                return lawire.handshake(self.sock, timeout=1)
            except (OSError, EOFError, ValueError):
                return None
        wait_for("localauthd on %s (log %s)" % (self.sock, self.log), up, proc=self.daemon)
        self.pid = self.daemon.pid

    def restart(self):
        self.bench.procs.stop(self.daemon)
        self.start()

    def copy_state(self, prefix):
        """A new temporary directory holding a copy of the state directory (no sockets): (the
        directory, the copy)."""
        d = tempfile.mkdtemp(prefix=prefix, dir=self.tmp)
        state = os.path.join(d, "state")
        shutil.copytree(self.state, state, ignore=lambda src, names: [
            n for n in names if stat.S_ISSOCK(os.lstat(os.path.join(src, n)).st_mode)])
        # The copy is sealed with this machine's key, which lives beside the state directory.
        if os.path.exists(self.state + ".key"):
            shutil.copy2(self.state + ".key", state + ".key")
        return d, state

    def ctl(self, *args):
        return [os.path.join(self.bin, "localauthctl"), *args]

    def enrol(self):
        enrol = subprocess.Popen(self.ctl("enroll", "--user", USER, "--finger", FINGER),
                                 env=self.env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        for _ in range(5):
            r = subprocess.run(self.ctl("simulate", "touch", PRINT_ID, "--quiet"),
                               env=self.env(), capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                enrol.kill()
                sys.exit("simulate touch: %s%s" % (r.stdout, r.stderr))
        out = enrol.communicate(timeout=30)[0]
        if enrol.returncode != 0:
            sys.exit("localauthctl enroll failed: %s" % out)

    def list_cmd(self):
        return self.ctl("list", "--user", USER)

    def cold_start(self):
        """systemd-socket-activate holds the socket; the first `localauthctl list` starts the
        daemon (on a copy of the enrolled state) and is timed to its answer."""
        d, state = self.copy_state("cold-")
        sock = os.path.join(d, "socket")
        # The daemon's sd_notify messages, each stamped on arrival: its phases (5b).
        notify_path = os.path.join(d, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # The kernel stamps each message as it arrives (CLOCK_REALTIME), read after the answer.
        notify.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        notify.bind(notify_path)
        act = self.bench.procs.start(
            ["systemd-socket-activate", "-l", sock, "-E", "NOTIFY_SOCKET=" + notify_path,
             os.path.join(self.bin, "localauthd"),
             "--socket", sock, "--state-dir", state, "--virtual-reader"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # It prints "Listening on ..." once the socket listens.
        line = act.stderr.readline()
        if "Listening" not in line:
            sys.exit("systemd-socket-activate: %r" % line)
        t0 = time.time_ns()
        elapsed, out = timed(self.ctl("list", "--user", USER), dict(os.environ,
                             LOCALAUTHD_SOCKET=sock), "cold localauthctl list")
        if FINGER not in out:
            sys.exit("cold list does not show the finger: %r" % out)
        self.phases.append(self.notify_phases(notify, t0, elapsed))
        notify.close()
        self.bench.procs.stop(act)
        act.stderr.close()
        shutil.rmtree(d, ignore_errors=True)
        return elapsed


    # sd_notify STATUS= texts that mark the phases of a start (DaemonMain.run), in order.
    PHASES = (("configuration read from", "Reading the configuration"),
              ("store opened from", "Opening the state directory"),
              ("libfprint started from", "Starting libfprint"),
              ("socket adopted (READY=1)", "READY=1"),
              ("readers enumerated", "reader: Virtual"))

    def notify_phases(self, notify, t0, elapsed):
        """Milliseconds from `localauthctl list` started to each phase's message, and to the answer;
        waits up to 2 s for the enumeration's message, which may come after the answer."""
        got, deadline = {}, time.monotonic() + 2
        while time.monotonic() < deadline and "readers enumerated" not in got:
            ready, _, _ = select.select([notify], [], [], 0.05)
            if not ready:
                continue
            data, ancillary, _, _ = notify.recvmsg(4096, 64)
            arrived = time.time_ns()
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:16])
                    arrived = sec * 1_000_000_000 + nsec
            text = data.decode(errors="replace")
            for name, marker in self.PHASES:
                if marker in text and name not in got:
                    got[name] = (arrived - t0) / 1e6
        got["answer (localauthctl exited)"] = elapsed / 1e6
        return got


class Theirs(Stack):
    name = "fprintd"

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        self.bus_path = os.path.join(tmp, "system_bus_socket")
        self.address = "unix:path=" + self.bus_path
        self.virtual = os.path.join(tmp, "virtual-device.socket")
        self.state = os.path.join(tmp, "fprintd-state")
        os.mkdir(self.state, 0o700)
        servicedir = os.path.join(tmp, "system-services")
        os.mkdir(servicedir)
        # fprintd -t: no idle exit during the bench; the cold-start phase stops it itself.
        with open(os.path.join(servicedir, "net.reactivated.Fprint.service"), "w") as f:
            f.write("[D-BUS Service]\nName=net.reactivated.Fprint\nExec=%s -t\n" % FPRINTD)
        self.conf = os.path.join(tmp, "bus.conf")
        with open(self.conf, "w") as f:
            f.write("""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>%s</listen>
  <auth>EXTERNAL</auth>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
""" % (self.address, servicedir))
        module = "/lib/%s/security/pam_fprintd.so" % bench.multiarch
        self.write_service("fp-match", "auth required %s max-tries=1 timeout=10" % module)
        self.write_service("fp-nomatch", "auth required %s max-tries=1 timeout=10" % module)
        self.match, self.nomatch = "fp-match", "fp-nomatch"
        self.module = module

    def env(self):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address, FP_VIRTUAL_DEVICE=self.virtual,
                   STATE_DIRECTORY=self.state)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        return env

    def busctl(self, *args):
        return subprocess.run(["busctl", "--address=" + self.address, *args],
                              capture_output=True, text=True)

    def owner_pid(self, name):
        r = self.busctl("call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                        "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", name)
        return int(r.stdout.split()[1]) if r.returncode == 0 else None

    def start(self):
        self.start_bus()
        self.activate()

    def start_bus(self):
        """The private system bus and the real polkitd on it."""
        self.dbus = self.bench.procs.start(
            ["dbus-daemon", "--config-file=" + self.conf, "--nofork", "--nopidfile",
             "--nosyslog"], env=self.env(), stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.tmp, "dbus.log"), "w"))
        wait_for("the private bus", lambda: os.path.exists(self.bus_path), proc=self.dbus)
        self.polkitd = self.bench.procs.start(
            [POLKITD, "--no-debug"], env=self.env(), stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.tmp, "polkitd.log"), "w"))
        wait_for("polkitd on the private bus",
                 lambda: self.owner_pid("org.freedesktop.PolicyKit1"), proc=self.polkitd)

    def activate(self):
        """The first fprintd-list starts fprintd through D-Bus activation."""
        elapsed, out = timed(["fprintd-list", USER], self.env(), "fprintd-list")
        self.pid = self.owner_pid("net.reactivated.Fprint")
        if not self.pid:
            sys.exit("fprintd did not come up on the private bus")
        return elapsed, out

    def stop_fprintd(self):
        pid = self.owner_pid("net.reactivated.Fprint")
        if pid:
            os.kill(pid, signal.SIGTERM)
            wait_for("fprintd %d to exit" % pid, lambda: not os.path.exists("/proc/%d" % pid)
                     or open("/proc/%d/stat" % pid).read().split()[2] == "Z")
        wait_for("net.reactivated.Fprint to be released",
                 lambda: self.owner_pid("net.reactivated.Fprint") is None)

    def restart(self):
        self.stop_fprintd()
        self.activate()

    def enrol(self):
        enrol = subprocess.Popen(["stdbuf", "-oL", "fprintd-enroll", "-f", FINGER, USER],
                                 env=self.env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        lines, scans = [], 0
        for line in enrol.stdout:
            lines.append(line.rstrip())
            if line.startswith("Enrolling") or "enroll-stage-passed" in line:
                read_to_eof(send_scan(self.virtual, PRINT_ID))
                scans += 1
            if "enroll-completed" in line or "enroll-failed" in line:
                break
        enrol.wait(timeout=30)
        if enrol.returncode != 0 or not any("enroll-completed" in x for x in lines):
            sys.exit("fprintd-enroll failed after %d scans: %s" % (scans, lines))
        _, out = timed(["fprintd-list", USER], self.env(), "fprintd-list")
        if FINGER not in out:
            sys.exit("fprintd-list does not show the finger: %r" % out)

    def list_cmd(self):
        return ["fprintd-list", USER]

    def cold_start(self):
        """fprintd stopped (the bus and polkitd stay, as systemd's socket stays for ours); the first
        fprintd-list starts it through D-Bus activation and is timed to its answer."""
        self.stop_fprintd()
        elapsed, out = self.activate()
        if FINGER not in out:
            sys.exit("cold fprintd-list does not show the finger: %r" % out)
        return elapsed


class OursOverDBus(Theirs):
    """localauthd --fprintd-compat on a private system bus of its own with the real polkitd, reached
    by fprintd's clients (pam_fprintd.so, fprintd-enroll, fprintd-list) exactly as Theirs is: the
    same client code, the other daemon. Figure 10 sets the two side by side."""
    name = "localauth (D-Bus)"
    reader_flags = ("--virtual-reader",)

    def __init__(self, bench, tmp):
        super().__init__(bench, tmp)
        os.unlink(os.path.join(tmp, "system-services", "net.reactivated.Fprint.service"))
        self.sock = os.path.join(tmp, "socket")
        self.state = os.path.join(tmp, "state")
        self.virtual = os.path.join(self.state, "virtual-reader.socket")
        self.log = os.path.join(tmp, "localauthd.log")

    def start(self):
        self.start_bus()
        # As figure 1's daemon stands (seat.py): the bench's clients run as root and ask for root
        # from no login session, which the presence rule refuses without logind; python-dbusmock's
        # logind on this bus puts every process in an active local greeter session.
        mock_dir = os.path.join(self.tmp, "logind")
        os.mkdir(mock_dir)
        self.logind = seat.LogindMock(mock_dir, on_bus=self.address, env=self.env(), start=self.bench.procs.start)
        with open(self.log, "a") as log_file:
            self.daemon = self.bench.procs.start(
                [os.path.join(self.bench.args.bin, "localauthd"), "--socket", self.sock, "--state-dir",
                 self.state, *self.reader_flags, "--fprintd-compat"], env=self.env(),
                stdout=subprocess.DEVNULL, stderr=log_file)
        wait_for("localauthd --fprintd-compat on the private bus (log %s)" % self.log,
                 lambda: self.owner_pid("net.reactivated.Fprint"), proc=self.daemon)
        self.pid = self.daemon.pid


class Bench:
    def __init__(self, args):
        self.args = args
        self.procs = Processes()
        self.tmp = tempfile.mkdtemp(prefix="la-bench-")
        os.chmod(self.tmp, 0o755)
        self.multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                                        text=True).stdout.strip() or "x86_64-linux-gnu"
        self.ours = Ours(self, os.path.join(self.tmp, "ours"))
        self.theirs = Theirs(self, os.path.join(self.tmp, "theirs"))
        self.sides = (self.ours, self.theirs)
        self.over_dbus = OursOverDBus(self, os.path.join(self.tmp, "ours-dbus"))
        self.results = {}

    def close(self):
        self.procs.stop_all()
        if self.args.keep:
            log("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, key, side, samples_ns, **extra):
        """min / median / p95 / max in ms and n, from samples in nanoseconds."""
        entry = dict(stats(samples_ns), **extra)
        self.results.setdefault(key, {})[side] = entry
        return entry

    def interleaved(self, blocks, fn):
        """fn(side) for A B A B ... over `blocks` rounds; the order within a round alternates."""
        out = {s.name: [] for s in self.sides}
        for i in range(blocks):
            for side in (self.sides if i % 2 == 0 else self.sides[::-1]):
                out[side.name].append(fn(side))
        return out

    def memory(self, label):
        for side in self.sides:
            self.results.setdefault("rss_kb", {}).setdefault(side.name, {})[label] = {
                "rss_kb": rss_kb(side.pid), "pss_kb": pss_kb(side.pid),
                "private_dirty_kb": rollup_kb(side.pid, "Private_Dirty"), "auths": side.auths}

    def run(self):
        a = self.args
        blocks, per_block = a.blocks, a.runs // a.blocks
        for side in self.sides:
            log("starting %s ..." % side.name)
            side.start()
            side.enrol()

        # 7: idle after a fresh start and one list request, settled.
        for side in self.sides:
            side.restart()
            side.auths = 0
            subprocess.run(side.list_cmd(), env=side.env(), capture_output=True, check=True)
        time.sleep(1)
        self.memory("idle after start")

        # 1: matching finger; the first run of every block (pam_start's module load, lazy
        # binding) is left out.
        log("figure 1: pam_authenticate, matching finger (%d x %d runs each) ..."
            % (blocks, per_block))
        rows = self.interleaved(blocks, lambda s: s.client(per_block + 1, [(s.match, PRINT_ID)])[1:])
        for side in self.sides:
            r = sum(rows[side.name], [])
            bad = [x for x in r if x["rc"] != PAM_SUCCESS]
            if bad:
                sys.exit("%s: matching runs failed: %s" % (side.name, bad[0]))
            for key, label in (("total_ns", "total"), ("prompt_ns", "start_to_prompt"),
                               ("result_ns", "prompt_to_result")):
                self.record("1 match " + label, side.name, [x[key] for x in r])
            self.results["1 match total"][side.name]["messages"] = r[0]["messages"]
        self.memory("after figure 1")

        # 2: another finger, one try; every miss is followed by an untimed match so that our
        # lockout (5 consecutive misses) never trips; the same for both.
        log("figure 2: pam_authenticate, non-matching finger ...")
        rows = self.interleaved(blocks, lambda s: s.client(
            2 * (per_block + 1), [(s.nomatch, STRANGER), (s.match, PRINT_ID)])[2:])
        for side in self.sides:
            r = sum(rows[side.name], [])
            misses, matches = r[0::2], r[1::2]
            if any(x["rc"] == PAM_SUCCESS for x in misses) or any(
                    x["rc"] != PAM_SUCCESS for x in matches):
                sys.exit("%s: no-match phase: unexpected codes" % side.name)
            for key, label in (("total_ns", "total"), ("prompt_ns", "start_to_prompt"),
                               ("result_ns", "prompt_to_result")):
                self.record("2 no-match " + label, side.name, [x[key] for x in misses])
            self.results["2 no-match total"][side.name]["pam_codes"] = sorted(
                {x["rc"] for x in misses})
            self.results["2 no-match total"][side.name]["messages"] = misses[0]["messages"]

        # 3: pamtester, one process per authentication.
        log("figure 3: pamtester, matching finger (%d runs each) ..." % a.process_runs)
        out = self.interleaved(a.process_runs + 1, lambda s: s.pamtester(s.match, PRINT_ID))
        for side in self.sides:
            self.record("3 pamtester match", side.name, out[side.name][1:])

        # 7 continued: up to 1000 authentications each.
        for side in self.sides:
            left = a.auths - side.auths
            while left > 0:
                side.client(min(left, 250), [(side.match, PRINT_ID)])
                left = a.auths - side.auths
        time.sleep(1)
        self.memory("after %d authentications" % a.auths)

        # 6: list, daemon running.
        log("figure 6: list as a whole process (%d runs each) ..." % a.process_runs)
        out = self.interleaved(a.process_runs + 1, lambda s: timed(
            s.list_cmd(), s.env(), "list")[0])
        self.record("6 list (warm)", "localauth", out["localauth"][1:])
        self.record("6 list (warm)", "fprintd", out["fprintd"][1:])

        # 10: fprintd's clients against both daemons: pam_fprintd.so (the same bench_client, PAM
        # service and reader driver) and fprintd-list, through fprintd and through localauthd's
        # D-Bus door, interleaved.
        log("figure 10: pam_fprintd.so and fprintd-list through localauthd's D-Bus door and fprintd ...")
        dbus = self.over_dbus
        dbus.start()
        dbus.enrol()
        pair = (dbus, self.theirs)

        def alternate(rounds, fn):
            out = {s.name: [] for s in pair}
            for i in range(rounds):
                for side in (pair if i % 2 == 0 else pair[::-1]):
                    out[side.name].append(fn(side))
            return out
        rows = alternate(blocks, lambda s: s.client(per_block + 1, [(s.match, PRINT_ID)])[1:])
        for side, label in ((dbus, "localauth"), (self.theirs, "fprintd")):
            r = sum(rows[side.name], [])
            if any(x["rc"] != PAM_SUCCESS for x in r):
                sys.exit("%s: pam_fprintd matching runs failed: %s" % (side.name, r[0]))
            for key, part in (("total_ns", "total"), ("prompt_ns", "start_to_prompt"),
                              ("result_ns", "prompt_to_result")):
                self.record("10 pam_fprintd match " + part, label, [x[key] for x in r])
        out = alternate(a.process_runs + 1, lambda s: timed(s.list_cmd(), s.env(), "fprintd-list")[0])
        self.record("10 fprintd-list (warm)", "localauth", out[dbus.name][1:])
        self.record("10 fprintd-list (warm)", "fprintd", out[self.theirs.name][1:])

        # 4 and 8: the Swift client against our daemon.
        log("figure 4: canEvaluatePolicy / status through the Swift client ...")
        bench_bin = os.path.join(a.bin, "localauth-bench")
        for key, cmd in (("4 canEvaluatePolicy (LAContext)", "can-evaluate"),
                         ("4 status (one connection)", "status")):
            _, out = timed([bench_bin, cmd, str(a.swift_runs)], self.ours.env(), cmd)
            self.record(key, "localauth", json.loads(out)["samples_ns"])
        # 9: a right's secret released by a finger (LASecret.loadData: one RIGHT_USE, the
        # evaluation then the secret), beside a plain evaluatePolicy with the same finger.
        log("figure 9: LASecret.loadData after a finger, beside evaluatePolicy ...")
        for key, cmd in (("9 LASecret.loadData after a finger", "secret"),
                         ("9 evaluatePolicy after a finger (LAContext)", "evaluate")):
            _, out = timed([bench_bin, cmd, str(a.swift_runs), PRINT_ID], self.ours.env(), cmd)
            samples = json.loads(out)["samples_ns"]
            self.ours.auths += len(samples)
            self.record(key, "localauth", samples)
        # 8: a burst (every client at once), then Poisson arrivals at --rate per second.
        for mode, rate in (("burst", None), ("paced", a.rate)):
            log("figure 8 (%s): %d concurrent status clients while verifies run ..."
                % (mode, a.clients))
            cmd = [bench_bin, "concurrent", str(a.clients), str(a.rounds), USER, PRINT_ID]
            _, out = timed(cmd + ([str(rate)] if rate else []), self.ours.env(), "concurrent")
            c = json.loads(out)
            self.ours.auths += len(c["verify_ns"]) + len(c["verify_idle_ns"])
            label = "8%s status, %s" % ("a" if rate is None else "b", mode)
            self.record(label, "localauth", c["status_ns"],
                        p99=ms(percentile(c["status_ns"], 0.99)), clients=c["clients"],
                        rounds=c["rounds"], rate=c["rate"], wall_ms=ms(c["wall_ns"]))
            self.record(label.replace("status", "verify"), "localauth", c["verify_ns"])
            self.record("8 verify, idle (before %s)" % mode, "localauth", c["verify_idle_ns"])
            if rate is None:
                # What the burst took, and whether it is given back within 10 s.
                self.memory("right after the burst")
                time.sleep(10)
                self.memory("10 s after the burst")
        self.memory("at the end")

        # 8c: the floor: the same burst against a minimal C server that does only the accept,
        # SO_PEERCRED and one answer per request (bench/floor_server.c), in this run.
        log("figure 8c: the same burst against the floor (a minimal C server) ...")
        floor_bin = os.path.join(self.tmp, "floor_server")
        subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", floor_bin,
                        os.path.join(ROOT, "bench", "floor_server.c")], check=True)
        floor_sock = os.path.join(self.tmp, "floor.socket")
        floor = self.procs.start([floor_bin, floor_sock])
        wait_for("the floor server", lambda: os.path.exists(floor_sock), proc=floor)
        _, out = timed([bench_bin, "concurrent", str(a.clients), str(a.rounds), USER, PRINT_ID],
                       dict(os.environ, LOCALAUTHD_SOCKET=floor_sock), "concurrent (floor)")
        c = json.loads(out)
        self.record("8c status, burst, floor (C server)", "localauth", c["status_ns"],
                    p99=ms(percentile(c["status_ns"], 0.99)), clients=c["clients"],
                    rounds=c["rounds"], rate=c["rate"], wall_ms=ms(c["wall_ns"]))
        self.procs.stop(floor)
        self.burst_many_uids(bench_bin)

        # 5: cold start, last (it stops and starts fprintd).
        log("figure 5: cold start (%d runs each) ..." % a.cold_runs)
        out = self.interleaved(a.cold_runs, lambda s: s.cold_start())
        for side in self.sides:
            self.record("5 cold start (list)", side.name, out[side.name])
        phases = {}
        for run in self.ours.phases:
            for name, ms_ in run.items():
                phases.setdefault(name, []).append(ms_)
        self.results["5b cold start phases, ms from localauthctl started (ours)"] = {
            name: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
            for name, v in phases.items()}
        return self.results


    # 8d (issue 18): figure 8a's burst with each status client under a uid of its own (FIRST_UID
    # on, none in passwd: status needs no account name), one heavy uid trying HEAVY_CONNECTIONS
    # connections that ask back to back (its per-uid limit refuses the excess, its gate paces the
    # rest), and the console user's verifies (root's, as in 8a) beside them.
    MANY_UIDS_FIRST = 610000
    HEAVY_CONNECTIONS = 40

    def burst_many_uids(self, bench_bin):
        a = self.args
        log("figure 8d: %d status clients of %d uids and one heavy uid, while verifies run ..."
            % (a.clients, a.clients))
        _, out = timed([bench_bin, "concurrent-uids", str(a.clients), str(a.rounds), USER, PRINT_ID,
                        str(self.MANY_UIDS_FIRST), str(self.HEAVY_CONNECTIONS)], self.ours.env(),
                       "concurrent-uids")
        c = json.loads(out)
        self.ours.auths += len(c["verify_ns"]) + len(c["verify_idle_ns"])
        self.record("8d status, burst, 1000 uids", "localauth", c["status_ns"],
                    p99=ms(percentile(c["status_ns"], 0.99)), clients=c["clients"],
                    rounds=c["rounds"], rate=0, wall_ms=ms(c["wall_ns"]))
        self.record("8d verify, burst, 1000 uids", "localauth", c["verify_ns"])
        # Where the verify's time goes: EVALUATE sent to its placeFinger event (read, scheduled,
        # decided up to the scan), beside the same before the burst.
        self.record("8d verify to placeFinger, burst", "localauth", c["verify_prompt_ns"])
        self.record("8d verify to placeFinger, idle", "localauth", c["verify_idle_prompt_ns"])
        self.record("8d heavy uid's status, burst", "localauth", c["heavy_ns"],
                    connections=c["heavy_connections"], refused=c["heavy_refused"])
        self.record("8d verify, idle (before 8d)", "localauth", c["verify_idle_ns"])


# ---------------------------------------------------------------------------------------------
# How cost grows (issue 18): 1, 10, 100 and 1000 enrolled users; identify over 1, 5 and 10
# fingers. Its own daemons on libfprint's virtual_image driver (real NBIS matching), so that
# nothing the figures above measure is touched. docs/performance.md, "How cost grows".

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
    """The growth phase. Users: 1 -> 10 -> 100 -> 1000 (each step adds accounts) on one pair of
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

    interleaved = Bench.interleaved  # over self.sides, the pair in use

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
    bench.results["growth"] = Growth(bench, prints_dir).run()


def print_growth(g):
    """The growth figures, each beside its goal (the issue sets none: figures, not goals)."""
    if "skipped" in g:
        print("\nhow cost grows: skipped (%s)" % g["skipped"])
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


def percentile(values, q):
    """Nearest rank, as stats does for p95."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None


def budgets(r):
    """(budget, what was measured, met?) for each budget of issues 7 and 18."""
    def med(key, side):
        return r[key][side]["median"]
    out = []

    def ratio(text, key, factor):
        ours, theirs = med(key, "localauth"), med(key, "fprintd")
        out.append((text, "%.3f vs %.3f ms (ratio %.3f)" % (ours, theirs, ours / theirs),
                    ours <= theirs * factor))
    ratio("1: pam_authenticate match median <= 1/10 of fprintd's", "1 match total", 0.1)
    prompt = med("1 match start_to_prompt", "localauth")
    out.append(("1: start -> prompt median <= 0.5 ms", "%.3f ms" % prompt, prompt <= 0.5))
    ratio("3: pamtester median <= 1/2 of fprintd's", "3 pamtester match", 0.5)
    ratio("5: cold start median <= 1/2 of fprintd's", "5 cold start (list)", 0.5)
    ratio("6: list, whole process, median <= 1/3 of fprintd-list's", "6 list (warm)", 1 / 3)
    mem = r["rss_kb"]
    idle = {s: mem[s]["idle after start"]["rss_kb"] for s in mem}
    out.append(("7: idle RSS <= 12 MB", "%.1f MB (fprintd %.1f MB)" % (
        idle["localauth"] / 1024, idle["fprintd"] / 1024), idle["localauth"] <= 12 * 1024))
    for field, name in (("pss_kb", "PSS"), ("private_dirty_kb", "private dirty")):
        o = mem["localauth"]["idle after start"][field] or 0
        t = mem["fprintd"]["idle after start"][field] or 0
        out.append(("7: idle %s <= fprintd's" % name, "%.1f vs %.1f MB" % (o / 1024, t / 1024),
                    o <= t))
    if "10 s after the burst" in mem["localauth"]:
        peak = mem["localauth"]["right after the burst"]["rss_kb"]
        back = mem["localauth"]["10 s after the burst"]["rss_kb"]
        out.append(("7: 10 s after the burst, RSS within +1 MB of idle", "%+.2f MB (%+.2f MB right "
                    "after)" % ((back - idle["localauth"]) / 1024, (peak - idle["localauth"]) / 1024),
                    back - idle["localauth"] <= 1024))
    if "8a verify, burst" in r:
        v = r["8a verify, burst"]["localauth"]
        out.append(("8a: verify during the burst <= 5 ms (max)", "%.3f ms median, %.3f max (n %d)" % (
            v["median"], v["max"], v["n"]), v["max"] <= 5))
    after = [k for k in mem["localauth"] if k.startswith("after ") and "authentications" in k][0]
    growth = mem["localauth"][after]["rss_kb"] - idle["localauth"]
    later = mem["localauth"][after]["rss_kb"] - mem["localauth"]["after figure 1"]["rss_kb"]
    out.append(("7: RSS growth after 1000 authentications < 1 MB", "%+.2f MB (of which %+.2f MB "
                "after the first %d)" % (growth / 1024, later / 1024,
                                         mem["localauth"]["after figure 1"]["auths"]),
                growth < 1024))
    for key in ("8a status, burst", "8b status, paced"):
        p99 = r[key]["localauth"]["p99"]
        out.append(("%s: p99 < 5 ms" % key, "%.3f ms" % p99, p99 < 5))
    if "8d verify, burst, 1000 uids" in r:
        v = r["8d verify, burst, 1000 uids"]["localauth"]
        h = r["8d heavy uid's status, burst"]["localauth"]
        out.append(("8d: verify, burst of 1000 uids <= 5 ms (median)", "%.3f ms median, %.3f max (n %d)" % (
            v["median"], v["max"], v["n"]) if v["n"] else "no verify finished during the burst",
            v["n"] > 0 and v["median"] <= 5))
        out.append(("8d: the heavy uid held to its 32 connections", "%d of %d refused; %d answered" % (
            h["refused"], h["connections"], h["n"]), h["refused"] == max(0, h["connections"] - 32)))
    if "8c status, burst, floor (C server)" in r:
        floor = r["8c status, burst, floor (C server)"]["localauth"]
        ours = r["8a status, burst"]["localauth"]
        out.append(("8a status, burst: p99 vs the floor (C server)", "%.3f vs %.3f ms (%.1fx)" % (
            ours["p99"], floor["p99"], ours["p99"] / floor["p99"]), None))
    return out


def print_table(r, info):
    print("localauth vs fprintd, %s; %s, %d CPUs, kernel %s; load %.2f before, %.2f after" % (
        info["date"], info["machine"]["cpu"], info["machine"]["cpus"], info["machine"]["kernel"],
        info["machine"]["loadavg_before"][0], info["machine"]["loadavg_after"][0]))
    print("times in ms: median [min / p95 / max] (n); ratio = ours / theirs (medians)\n")
    print("%-34s %-36s %-36s %7s" % ("figure", "localauth", "fprintd", "ratio"))

    def cell(s):
        if not s:
            return "-"
        return "%.3f [%.3f/%.3f/%.3f] (%d)" % (s["median"], s["min"], s["p95"], s["max"], s["n"])
    for key, sides in r.items():
        if key in ("rss_kb", "growth") or key.startswith("5b "):
            continue
        ours, theirs = sides.get("localauth"), sides.get("fprintd")
        ratio = "%.3f" % (ours["median"] / theirs["median"]) if ours and theirs else "-"
        print("%-34s %-36s %-36s %7s" % (key, cell(ours), cell(theirs), ratio))
        if "p99" in (ours or {}):
            print("%-34s p99 %.3f ms; %d clients x %d requests, %s, %.0f ms wall" % (
                "", ours["p99"], ours["clients"], ours["rounds"], "%g/s in all" % ours["rate"]
                if ours["rate"] else "all at once", ours["wall_ms"]))
    for key in (k for k in r if k.startswith("5b ")):
        print("\n" + key)
        for name, v in sorted(r[key].items(), key=lambda kv: kv[1]["median"]):
            print("  %-34s %.3f [%.3f / %.3f] (%d)" % (name, v["median"], v["min"], v["max"], v["n"]))
    print()
    mem = r["rss_kb"]
    for label in mem["localauth"]:
        o, t = mem["localauth"][label], mem["fprintd"][label]
        print("%-34s %-36s %-36s %7.3f" % (
            "7 RSS " + label, "%.1f MB (PSS %.1f, dirty %.1f; %d auths)" % (
                o["rss_kb"] / 1024, (o["pss_kb"] or 0) / 1024,
                (o["private_dirty_kb"] or 0) / 1024, o["auths"]),
            "%.1f MB (PSS %.1f, dirty %.1f; %d auths)" % (
                t["rss_kb"] / 1024, (t["pss_kb"] or 0) / 1024,
                (t["private_dirty_kb"] or 0) / 1024, t["auths"]), o["rss_kb"] / t["rss_kb"]))
    print()
    for text, measured, met in info["budgets"]:
        print("%-56s %-42s %s" % (text, measured, "-" if met is None else "met" if met else "NOT MET"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests",
                                                     "bench_client"))
    ap.add_argument("--runs", type=int, default=200, help="figures 1 and 2, per side")
    ap.add_argument("--blocks", type=int, default=10, help="A B rounds for figures 1 and 2")
    ap.add_argument("--process-runs", type=int, default=60, help="figures 3 and 6, per side")
    ap.add_argument("--cold-runs", type=int, default=21, help="figure 5, per side")
    ap.add_argument("--auths", type=int, default=1000, help="figure 7")
    ap.add_argument("--swift-runs", type=int, default=1000, help="figure 4")
    ap.add_argument("--clients", type=int, default=1000, help="figure 8")
    ap.add_argument("--rounds", type=int, default=5, help="figure 8: requests per client")
    ap.add_argument("--rate", type=int, default=1000, help="figure 8b: requests per second")
    ap.add_argument("--quick", action="store_true", help="small numbers, to try the bench out")
    ap.add_argument("--no-growth", action="store_true", help="skip the growth phase")
    ap.add_argument("--growth-only", action="store_true", help="only the growth phase")
    ap.add_argument("--growth-users", default="1,10,100,1000", help="growth: enrolled users")
    ap.add_argument("--growth-fingers", default="1,5,10", help="growth: one account's fingers")
    ap.add_argument("--growth-gallery", default="1,5,10,50",
                    help="growth: prints in all for the enrolment's duplicate check")
    ap.add_argument("--growth-runs", type=int, default=21, help="growth: list/status, per side")
    ap.add_argument("--growth-cold-runs", type=int, default=11, help="growth: cold starts, per side")
    ap.add_argument("--growth-identify-runs", type=int, default=5,
                    help="growth: verify pairs (a miss, a match) per side and finger count")
    ap.add_argument("--prints", default=None, help="growth: the NBIS images' directory")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.blocks, args.process_runs, args.cold_runs = 20, 2, 5, 3
        args.auths, args.swift_runs, args.clients, args.rounds = 100, 100, 100, 2
        args.growth_users, args.growth_fingers, args.growth_gallery = "1,10", "1,5", "1,12"
        args.growth_runs, args.growth_cold_runs, args.growth_identify_runs = 5, 3, 2
    args.growth_users = [int(n) for n in args.growth_users.split(",")]
    args.growth_fingers = [int(n) for n in args.growth_fingers.split(",")]
    args.growth_gallery = [int(n) for n in args.growth_gallery.split(",")]
    if sorted(args.growth_users) != args.growth_users or args.growth_users[0] < 1 or sorted(
            args.growth_fingers) != args.growth_fingers or not 1 <= args.growth_fingers[0] <= \
            args.growth_fingers[-1] <= 10:
        sys.exit("--growth-users: rising counts from 1; --growth-fingers: rising, 1 to 10")
    args.bin, args.module, args.client = (os.path.abspath(p) for p in (args.bin, args.module,
                                                                       args.client))
    if os.getuid() != 0:
        sys.exit("run as root: pam_localauth.so believes only a daemon run by root, and fprintd "
                 "needs root on its bus")
    for path in (args.module, args.client, *(os.path.join(args.bin, b) for b in (
            "localauthd", "localauthctl", "localauth-bench"))):
        if not os.path.exists(path):
            sys.exit("%s is missing (make bench builds it)" % path)
    pam_before = pam_d_digest()
    installed = ensure_incumbent()
    versions = {p: subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True,
                                  text=True).stdout for p in INCUMBENT_PACKAGES + ["libfprint-2-2"]}
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "installed_now": installed, "versions": versions,
            "git_head": subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
            "localauthd_sha256": sha256(os.path.join(args.bin, "localauthd")),
            "module_sha256": sha256(args.module), "user": USER,
            "p95": "nearest rank", "clock": "CLOCK_MONOTONIC",
            "settings": {k: v for k, v in vars(args).items() if k != "json"}}

    # Freshly linked binaries are dirty in the page cache until written back, and smaps counts
    # those pages as the daemon's private dirty memory: write them back first.
    os.sync()
    bench = Bench(args)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        results = bench.results if args.growth_only else bench.run()
        if not args.no_growth:
            growth_phase(bench)
    finally:
        bench.close()
        if pam_d_digest() != pam_before:
            print("WARNING: /etc/pam.d changed during the bench", file=sys.stderr)
    info["machine"]["loadavg_after"] = os.getloadavg()
    info["pam_d_unchanged"] = pam_d_digest() == pam_before
    if not args.growth_only:
        info["budgets"] = budgets(results)
        print_table(results, info)
    if "growth" in results:
        print_growth(results["growth"])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = args.json or os.path.join(ROOT, "bench", "results", "bench-%s.json" % stamp)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(dict(info, results=results), f, indent=1)
    latest = os.path.join(os.path.dirname(os.path.abspath(path)), "latest.json")
    if os.path.abspath(path) != latest:
        shutil.copyfile(path, latest)
    print("\nJSON: %s" % path)
    if not args.quick and not args.growth_only:
        import charts  # noqa: E402 (bench/charts.py)
        for svg in charts.write_charts(results, info, os.path.join(ROOT, "docs", "performance")):
            print("chart: %s" % svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
