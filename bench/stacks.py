# SPDX-License-Identifier: Apache-2.0
"""The two stacks the bench compares, each behind one interface: ours (localauthd +
pam_localauth.so), theirs (fprintd + pam_fprintd.so on a private bus with polkitd), and ours
behind its fprintd D-Bus door (figure 10).
"""
import json
import os
import pty
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

import common  # noqa: F401 (puts pam/tests on the path first)
import lawire  # pam/tests, on the path common.py sets
import seat
from common import (FINGER, FPRINTD, POLKITD, PRINT_ID, SO_TIMESTAMPNS, USER, log, read_to_eof,
                    send_scan, timed, wait_for)


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


    # sd_notify STATUS= texts that mark the phases of a start (Sources/localauthd/main.swift), in order.
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
