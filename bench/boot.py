#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-boot: the bench's figures on the booted Debian 12 of `make test-boot` (issue 29).

The tier's machine (Tests/boot/machine.py: the cached root under an overlay, booted with
systemd-nspawn, systemd as PID 1, the real logind, journald, dbus-daemon and polkitd) with the
packages `make deb` built installed by apt, and beside them Debian's fprintd and libpam-fprintd
(kept in the root's apt cache by Tests/boot/root.sh, installed only here). Nothing is mocked and
no unit is changed: localauthd runs under the shipped localauthd.socket/.service (socket
activation), fprintd under its own unit through D-Bus activation. The readers are libfprint's
virtual devices: ours by a configuration drop-in (`virtual-reader = yes`, as the tier does), fprintd's
by an Environment= drop-in (FP_VIRTUAL_DEVICE in its state directory).

Who asks: alice logs in at the console by password (tier.console_login: a logind session of class
user, active on seat0). The PAM client (pam/tests/bench_client, the same as `make bench`) runs as
root inside alice's session (its process moved into the session's scope, as sudo's child at her
console is), so the presence rule sees the person at the reader asking for their own account, and
polkit sees root for fprintd. The services are real /etc/pam.d files of the booted copy.

Figures, the two daemons interleaved (A B A B ...) as in bench.py:
  1   pam_authenticate, a matching finger: total, start -> prompt, prompt -> result
  5   cold start: the unit stopped (the socket, or the bus name, stays), the first list as a whole
      process to its answer: localauthd by socket activation, fprintd by D-Bus activation; and
      systemd's timestamps of each start (left inactive, main process forked, active), in ms
      from the client's fork
  6   list as a whole process, daemon running
  7   RSS / PSS / private dirty idle after start (a fresh start, one list, 1 s), and by mapping;
      ours 10 s after a burst of 1000 status clients (localauth-bench concurrent, as figure 8a)
  11  what localauthd asks logind per verify in alice's session (dbus-monitor; untimed)
  1b  what the audit trail costs after the touch: figure 1's prompt -> result with the shipped unit,
      blocks alternated with the same unit plus a measurement-only drop-in that sends the daemon's
      records to a file (StandardError=file:, so not to journald) and the client in a mount namespace
      where /dev/log leads nowhere (pam_localauth's syslog line not to journald either), the unit
      restarted before each block; and journald's CPU per verify (schedstat) in each. The drop-ins
      are removed after it (docs/performance.md, "Prompt -> result on the booted system")
  10  pam_fprintd.so through localauthd's D-Bus door (localauth-fprintd-compat replaces fprintd,
      which it conflicts with: this phase comes after the others, fprintd's figure 1 beside it)
Times are taken inside the machine (bench_client's own clock; bench/boot_timer.c for whole
processes), so nsenter's start is never in them.

Usage: bench/boot.py --root CACHED_ROOT --deb dist/localauth_*.deb --compat dist/localauth-fprintd-compat_*.deb
       [--quick] [--keep] [--json PATH] [--by-hand bench/results/latest.json]   (as root)
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "Tests", "boot"))

import tier  # noqa: E402  (the tier's people and console login)
from common import log, machine, read_to_eof, send_scan, stats  # noqa: E402
from figures.memory_floor import (by_mapping, executable_by_module, mappings, print_floor,  # noqa: E402
                                  same_layout)
from machine import BootFailure, Machine  # noqa: E402
from report import goals, print_goals  # noqa: E402

USER, PASSWORD = tier.ALICE, tier.ALICE_PW
PRINT_ID = "bench-finger"
FINGER = "right-index-finger"
LIB = "/usr/local/lib/localauth-bench"
LA_VIRTUAL = "/var/lib/localauthd/virtual-reader.socket"
FP_VIRTUAL = "/var/lib/fprint/virtual-device.socket"
PAM_SUCCESS = 0


def rollup(m, pid):
    """VmRSS, and Pss and Private_Dirty of smaps_rollup, of a process inside (kB)."""
    out = m.out("grep VmRSS /proc/%d/status; grep -E '^(Pss|Private_Dirty):' /proc/%d/smaps_rollup"
                % (pid, pid))
    got = {l.split(":")[0]: int(l.split()[1]) for l in out.splitlines() if ":" in l}
    return {"rss_kb": got["VmRSS"], "pss_kb": got["Pss"], "private_dirty_kb": got["Private_Dirty"]}


def cpu_ns(pid):
    """CPU time (ns) of every thread of a process of this machine, from schedstat."""
    total = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
    except OSError:
        pass
    return total


def host_pid(m, nspid):
    """The pid on this machine of the process that is `nspid` in the booted system."""
    want = os.readlink("/proc/%d/ns/pid" % m.leader)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/status" % entry) as f:
                ns = [l for l in f if l.startswith("NSpid:")][0].split()
            if ns[-1] == str(nspid) and os.readlink("/proc/%s/ns/pid" % entry) == want:
                return int(entry)
        except (OSError, IndexError):
            continue
    return None


class Side:
    """One daemon in the booted system: its unit, its PAM service, its reader, its list."""

    def __init__(self, name, unit, service, virtual, list_cmd):
        self.name, self.unit, self.service, self.virtual, self.list_cmd = (
            name, unit, service, virtual, list_cmd)


class BootBench:
    def __init__(self, args):
        self.args = args
        self.results = {}
        base = os.path.join(REPO, ".build", "boot-run")
        os.makedirs(base, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="bench-", dir=base)
        self.m = Machine(args.root, self.work, name="labench")
        self.ours = Side("localauth", "localauthd.service", "bench-la", LA_VIRTUAL,
                         "localauthctl list --user %s" % USER)
        self.theirs = Side("fprintd", "fprintd.service", "bench-fp", FP_VIRTUAL,
                           "fprintd-list %s" % USER)
        self.sides = (self.ours, self.theirs)
        self.scope = None

    # -- inside the machine ------------------------------------------------------------------

    def in_session(self, command):
        """command as root inside alice's console session (its scope's cgroup)."""
        return "%s && exec %s" % (" && ".join("echo $$ > %s/cgroup.procs" % d for d in self.scope),
                                  command)

    def timed(self, command, what, expect=0, check_out=None):
        """One whole process timed inside by boot_timer: (ns, its output)."""
        r = self.m.sh("%s/boot_timer %s" % (LIB, command), check=False)
        found = re.search(r"boot_timer: ns=(\d+) status=(\d+) t0=(\d+)", r.stderr)
        if not found or int(found.group(2)) != expect:
            sys.exit("%s: %s%s" % (what, r.stdout, r.stderr))
        self.last_t0 = int(found.group(3))
        if check_out and check_out not in r.stdout:
            sys.exit("%s: %r not in %r" % (what, check_out, r.stdout))
        return int(found.group(1)), r.stdout

    def main_pid(self, unit):
        pid = int(self.m.out("systemctl show -p MainPID --value %s" % unit).strip() or 0)
        return pid or None

    def wait_inactive(self, unit):
        for _ in range(200):
            if self.m.out("systemctl is-active %s" % unit, check=False).strip() in (
                    "inactive", "failed"):
                return
            time.sleep(0.05)
        sys.exit("%s did not stop" % unit)

    # -- setting up --------------------------------------------------------------------------

    def setup(self):
        m, a = self.m, self.args
        t0 = time.monotonic()
        self.results["boot_s"] = m.boot()
        os.makedirs(m.root + "/root/debs", exist_ok=True)
        for deb in (a.deb, a.compat):
            shutil.copy(deb, m.root + "/root/debs/")
        # localauth and, beside it, Debian's fprintd: apt from the root's cache (root.sh).
        r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                 "--no-install-recommends ./%s fprintd libpam-fprintd" % os.path.basename(a.deb),
                 check=False, timeout=600)
        if r.returncode != 0:
            sys.exit("apt-get install ./localauth fprintd libpam-fprintd: %s%s" % (r.stdout, r.stderr))
        self.versions = dict(l.split() for l in m.out(
            "dpkg-query -W -f='${Package} ${Version}\\n' localauth fprintd libpam-fprintd "
            "libfprint-2-2 systemd dbus polkitd").splitlines())
        os.makedirs(m.root + LIB, exist_ok=True)
        for src in (a.client, a.timer, os.path.join(a.bin, "localauth-bench")):
            shutil.copy(src, m.root + LIB)
        # pam_fprintd.so kept apart: figure 10 needs it after libpam-fprintd left with fprintd.
        module = m.out("dpkg -L libpam-fprintd | grep '/pam_fprintd.so$'").strip()
        shutil.copy(m.root + module, m.root + LIB + "/pam_fprintd.so")
        m.write("/etc/localauthd.conf.d/bench-reader.conf", "virtual-reader = yes\n")
        m.write("/etc/systemd/system/fprintd.service.d/bench-reader.conf",
                "[Service]\nEnvironment=FP_VIRTUAL_DEVICE=%s\n" % FP_VIRTUAL)
        m.write("/etc/pam.d/bench-la", "auth required pam_localauth.so timeout=10\n")
        m.write("/etc/pam.d/bench-fp", "auth required %s/pam_fprintd.so max-tries=1 timeout=10\n"
                % LIB)
        m.sh("systemctl daemon-reload && systemctl restart localauthd.socket")
        tier.setup_people(m)
        m.wait_for(lambda s: s.rstrip().endswith("login:"), "the console's login prompt", timeout=60)
        tier.console_login(m, USER, PASSWORD)
        sess = tier.session_of(m, USER)
        if not sess or sess.get("Active") != "yes" or sess.get("Seat") != "seat0":
            sys.exit("alice's console session is not active on seat0: %s" % sess)
        uid = m.out("id -u %s" % USER).strip()
        sid = [l.split()[0] for l in m.out("loginctl list-sessions --no-legend").splitlines()
               if l.split()[2] == USER][0]
        # The session's scope in every cgroup hierarchy that has it (unified, or the hybrid
        # layout's name=systemd and unified, as systemd-nspawn sets up on a host of that kind).
        scope = "user.slice/user-%s.slice/session-%s.scope" % (uid, sid)
        self.scope = [d for d in ("/sys/fs/cgroup", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified")
                      if m.sh("test -w %s/%s/cgroup.procs" % (d, scope), check=False).returncode == 0]
        if not self.scope:
            sys.exit("no cgroup for alice's session %s" % scope)
        self.scope = ["%s/%s" % (d, scope) for d in self.scope]
        self.enrol_ours()
        self.enrol_theirs()
        self.results["setup_s"] = time.monotonic() - t0

    def enrol_ours(self):
        m, out = self.m, []
        t = threading.Thread(target=lambda: out.append(m.sh(self.in_session(
            "localauthctl enroll --user %s --finger %s" % (USER, FINGER)), check=False)))
        t.start()
        for _ in range(5):
            deadline = time.monotonic() + 20
            while m.sh("localauthctl simulate touch %s --quiet" % PRINT_ID,
                       check=False).returncode != 0:
                if time.monotonic() > deadline:
                    sys.exit("simulate touch: the reader never listened")
                time.sleep(0.2)
        t.join(60)
        if not out or out[0].returncode != 0:
            sys.exit("localauthctl enroll in the booted system: %s" % (
                out and out[0].stdout + out[0].stderr))
        self.timed(self.ours.list_cmd, "list after the enrolment", check_out=FINGER)

    def enrol_theirs(self):
        m = self.m
        p = subprocess.Popen(m.argv("stdbuf -oL fprintd-enroll -f %s %s" % (FINGER, USER)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in p.stdout:
            lines.append(line.rstrip())
            if line.startswith("Enrolling") or "enroll-stage-passed" in line:
                read_to_eof(send_scan(m.root + FP_VIRTUAL, PRINT_ID))
            if "enroll-completed" in line or "enroll-failed" in line:
                break
        p.wait(timeout=30)
        if p.returncode != 0 or not any("enroll-completed" in x for x in lines):
            sys.exit("fprintd-enroll in the booted system: %s" % lines)
        self.timed(self.theirs.list_cmd, "fprintd-list after the enrolment", check_out=FINGER)

    # -- figures -----------------------------------------------------------------------------

    def record(self, key, side, samples_ns):
        self.results.setdefault(key, {})[side] = stats(samples_ns)

    def interleaved(self, blocks, fn, sides=None):
        sides = sides or self.sides
        out = {s.name: [] for s in sides}
        for i in range(blocks):
            for s in (sides if i % 2 == 0 else sides[::-1]):
                out[s.name].append(fn(s))
        return out

    def pam_runs(self, side, runs, service=None, no_syslog=False):
        """bench_client in alice's session: runs pam_authenticate calls, the first left out.
        no_syslog: in a mount namespace of its own where /dev/log is /dev/null (figure 1b)."""
        client = "%s/bench_client %s %s %d %s:%s" % (
            LIB, side.virtual, USER, runs + 1, service or side.service, PRINT_ID)
        if no_syslog:
            client = "unshare -m sh -c 'mount --bind /dev/null /dev/log && exec %s'" % client
        r = self.m.sh(self.in_session(client), check=False, timeout=600)
        rows = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        if r.returncode != 0 or len(rows) != runs + 1:
            sys.exit("%s: bench_client: %s%s" % (side.name, r.stdout[-2000:], r.stderr[-2000:]))
        bad = [x for x in rows if x["rc"] != PAM_SUCCESS or x["prompt_ns"] < 0]
        if bad:
            sys.exit("%s: pam_authenticate did not match: %s" % (side.name, bad[0]))
        return rows[1:]

    def record_pam(self, prefix, name, rows):
        for key, label in (("total_ns", "total"), ("prompt_ns", "start_to_prompt"),
                           ("result_ns", "prompt_to_result")):
            self.record(prefix + label, name, [x[key] for x in rows])

    def figure_1(self):
        a = self.args
        log("boot figure 1: pam_authenticate in alice's console session (%d x %d each) ..." % (
            a.blocks, a.runs // a.blocks))
        rows = self.interleaved(a.blocks, lambda s: self.pam_runs(s, a.runs // a.blocks))
        for s in self.sides:
            self.record_pam("1 match ", s.name, sum(rows[s.name], []))

    # Figure 1b's measurement-only drop-ins (never in the other figures): the daemon's records to a
    # file instead of journald, and no start limit while the unit is restarted before each block.
    AUDIT_DROPIN = "/etc/systemd/system/localauthd.service.d/zz-bench-audit-to-file.conf"
    LIMIT_DROPIN = "/etc/systemd/system/localauthd.service.d/zz-bench-no-start-limit.conf"

    def figure_1b(self):
        """Figure 1's prompt -> result with the audit trail going to journald (the shipped unit) and,
        alternated block by block, not going there; journald's CPU per verify in each."""
        a, m = self.args, self.m
        blocks, runs = a.blocks, max(a.runs // a.blocks, 10)
        log("boot figure 1b: the audit trail after the touch (%d x %d each) ..." % (blocks, runs))
        journald = host_pid(m, int(m.out("systemctl show -p MainPID --value systemd-journald").strip() or 0))
        m.write(self.LIMIT_DROPIN, "[Unit]\nStartLimitIntervalSec=0\n")
        kinds = (("journal", "1b prompt_to_result, journald"),
                 ("file", "1b prompt_to_result, no journald"))
        rows = {k: [] for k, _ in kinds}
        cpu = {k: [] for k, _ in kinds}
        try:
            for i in range(blocks):
                for kind, _ in (kinds if i % 2 == 0 else kinds[::-1]):
                    if kind == "file":
                        m.write(self.AUDIT_DROPIN, "[Service]\nStandardError=file:/run/localauthd-bench-audit.log\n")
                    elif os.path.exists(m.root + self.AUDIT_DROPIN):
                        os.unlink(m.root + self.AUDIT_DROPIN)
                    m.sh("systemctl daemon-reload && systemctl restart localauthd.service")
                    self.pam_runs(self.ours, 3, no_syslog=kind == "file")
                    before = cpu_ns(journald) if journald else 0
                    got = self.pam_runs(self.ours, runs, no_syslog=kind == "file")
                    if journald:
                        cpu[kind].append((cpu_ns(journald) - before) / (runs + 1))
                    rows[kind].append([x["result_ns"] for x in got])
        finally:
            for path in (self.AUDIT_DROPIN, self.LIMIT_DROPIN):
                if os.path.exists(m.root + path):
                    os.unlink(m.root + path)
            # The restarts above count against the shipped unit's start limit once it is back.
            m.sh("systemctl daemon-reload && systemctl reset-failed localauthd.service && "
                 "systemctl restart localauthd.service")
        for kind, key in kinds:
            self.record(key, "localauth", sum(rows[kind], []))
        diffs = [statistics.median(f) - statistics.median(j) for f, j in zip(rows["file"], rows["journal"])]
        self.results["1b audit trail after the touch"] = {"localauth": {
            "paired_difference_ms": statistics.median(diffs) / 1e6, "blocks": len(diffs),
            "faster_without_journald_in": sum(1 for d in diffs if d < 0),
            "journald_cpu_us_per_verify": {k: statistics.median(v) / 1e3 if v else None
                                           for k, v in cpu.items()}}}

    def figure_11(self):
        """What localauthd asks logind per pam_authenticate in alice's session, as figure 1 runs it
        (dbus-monitor inside: untimed, never during figure 1's timed runs). With the real logind the
        session comes from sd-login's files; the lid is asked when the reader counts as built in."""
        runs = 10 if self.args.quick else 40
        log("boot figure 11: logind questions per verify (%d verifies, dbus-monitor) ..." % (runs + 1))
        calls, _ = tier.login1_calls(self.m, lambda: self.pam_runs(self.ours, runs))
        self.results["11 logind per verify (booted)"] = {"localauth": {
            "verifies": runs + 1, "calls": len(calls),
            "by member": {c: calls.count(c) for c in sorted(set(calls))}}}

    def figure_6(self):
        a = self.args
        log("boot figure 6: list as a whole process (%d each) ..." % a.process_runs)
        out = self.interleaved(a.process_runs + 1, lambda s: self.timed(
            s.list_cmd, s.name + " list", check_out=FINGER)[0])
        for s in self.sides:
            self.record("6 list (warm)", s.name, out[s.name][1:])

    # systemd's timestamps of a unit's start (CLOCK_MONOTONIC, µs), each read after a cold start and
    # recorded as ms from the client's fork: where the booted cold start goes (docs/performance.md,
    # "Cold start and `list`, taken apart").
    UNIT_PHASES = (("InactiveExitTimestampMonotonic", "5 … unit activating (left inactive)"),
                   ("ExecMainStartTimestampMonotonic", "5 … main process forked"),
                   ("ActiveEnterTimestampMonotonic", "5 … READY=1 / bus name (active)"))

    def figure_5(self):
        """Each side's unit stopped, then its first list timed. systemd starts a unit at most 5
        times in 10 s (StartLimitBurst=): each side's starts are kept 2.2 s apart."""
        a = self.args
        log("boot figure 5: cold start under the units (%d each) ..." % a.cold_runs)
        last = {}
        phases = {}

        def one(s):
            self.m.sh("systemctl stop %s" % s.unit)
            self.wait_inactive(s.unit)
            wait = last.get(s.name, 0) + 2.2 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            last[s.name] = time.monotonic()
            ns, _ = self.timed(s.list_cmd, s.name + " cold list", check_out=FINGER)
            if self.m.out("systemctl is-active %s" % s.unit, check=False).strip() != "active":
                sys.exit("%s: the list did not start %s" % (s.name, s.unit))
            shown = self.m.out("systemctl show %s %s" % (s.unit, " ".join(
                "-p " + p for p, _ in self.UNIT_PHASES)))
            stamps = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
            for prop, key in self.UNIT_PHASES:
                if stamps.get(prop, "0").isdigit() and int(stamps[prop]) > 0:
                    phases.setdefault(key, {}).setdefault(s.name, []).append(
                        int(stamps[prop]) * 1000 - self.last_t0)
            return ns
        out = self.interleaved(a.cold_runs, one)
        for s in self.sides:
            self.record("5 cold start (list)", s.name, out[s.name])
        for key, sides in phases.items():
            for name, samples in sides.items():
                self.record(key, name, samples)

    def memory(self, label, sides=None):
        for s in sides or self.sides:
            pid = self.main_pid(s.unit)
            if pid is None:
                sys.exit("%s is not running for the memory reading %r" % (s.unit, label))
            self.results.setdefault("rss_kb", {}).setdefault(s.name, {})[label] = dict(
                rollup(self.m, pid), auths=0)

    def figure_7(self):
        log("boot figure 7: memory idle after start, by mapping ...")
        for s in self.sides:
            self.m.sh("systemctl stop %s" % s.unit)
            self.wait_inactive(s.unit)
            self.timed(s.list_cmd, s.name + " list (memory)", check_out=FINGER)
        time.sleep(1)
        self.memory("idle after start")
        floor, floor_exe = {}, None
        for s in self.sides:
            pid = host_pid(self.m, self.main_pid(s.unit))
            exe = os.readlink("/proc/%d/exe" % pid) if pid else ""
            floor[s.name] = by_mapping(pid, exe if s is self.ours else "") if pid else {}
            if s is self.ours and pid:
                # The package's binary is stripped; the release build it was made from has the
                # symbols at the same addresses (checked), and names the modules.
                mapped = [m["path"] for m in mappings(pid) if m["path"].endswith("/localauthd")]
                built = os.path.join(self.args.bin, "localauthd")
                try:
                    if not same_layout(built, self.m.root + "/usr/sbin/localauthd"):
                        raise OSError("the installed localauthd is not the stripped %s" % built)
                    floor_exe = executable_by_module(pid, built, mapped_as=mapped[0] if mapped else None)
                except (OSError, subprocess.CalledProcessError) as e:
                    floor_exe = {"error": str(e)}
        self.results["7 floor"] = {"by mapping": floor, "executable": floor_exe}

    def figure_8(self):
        """Ours: the burst of figure 8a (localauth-bench concurrent) in alice's session; RSS right
        after and 10 s after."""
        a = self.args
        log("boot figure 8: %d concurrent status clients while verifies run ..." % a.clients)
        r = self.m.sh(self.in_session("env LOCALAUTHD_SOCKET=/run/localauthd/socket %s/localauth-bench "
                                      "concurrent %d %d %s %s" % (LIB, a.clients, a.rounds, USER,
                                                                  PRINT_ID)),
                      check=False, timeout=600)
        if r.returncode != 0:
            sys.exit("localauth-bench concurrent in the booted system: %s%s" % (r.stdout, r.stderr))
        c = json.loads(r.stdout)
        self.record("8a status, burst", "localauth", c["status_ns"])
        self.record("8a verify, burst", "localauth", c["verify_ns"])
        self.memory("right after the burst", sides=(self.ours,))
        time.sleep(10)
        self.memory("10 s after the burst", sides=(self.ours,))

    def figure_10(self):
        """pam_fprintd.so through localauthd's D-Bus door: fprintd and libpam-fprintd removed,
        localauth-fprintd-compat installed (the bus then starts localauthd for
        net.reactivated.Fprint). The same module file, service line and client as figure 1's
        fprintd side; fprintd's own figure is taken again just before, in this boot."""
        a = self.args
        m = self.m
        log("boot figure 10: pam_fprintd.so through fprintd, then through our D-Bus door ...")
        rows_fp = [self.pam_runs(self.theirs, a.runs // a.blocks) for _ in range(a.blocks // 2)]
        self.record_pam("10 pam_fprintd match ", "fprintd", sum(rows_fp, []))
        r = m.sh("systemctl stop fprintd.service; cd /root/debs && DEBIAN_FRONTEND=noninteractive "
                 "apt-get install -y ./%s" % os.path.basename(a.compat), check=False, timeout=600)
        if r.returncode != 0:
            sys.exit("apt-get install ./localauth-fprintd-compat: %s%s" % (r.stdout, r.stderr))
        door = Side("localauth (D-Bus)", "localauthd.service", "bench-fp", LA_VIRTUAL,
                    "fprintd-list %s" % USER)
        m.sh("systemctl restart localauthd.service")
        self.timed(door.list_cmd, "fprintd-list through the door", check_out=FINGER)
        rows = [self.pam_runs(door, a.runs // a.blocks) for _ in range(a.blocks // 2)]
        self.record_pam("10 pam_fprintd match ", "localauth", sum(rows, []))
        out = [self.timed(door.list_cmd, "fprintd-list (door)", check_out=FINGER)[0]
               for _ in range(a.process_runs + 1)]
        self.record("10 fprintd-list (warm)", "localauth", out[1:])

    def run(self):
        self.setup()
        self.figure_7()
        self.figure_1()
        self.figure_11()
        self.figure_1b()
        self.figure_6()
        self.figure_5()
        if self.args.clients:
            self.figure_8()
        self.figure_10()
        return self.results

    def close(self):
        if self.args.keep:
            log("kept: %s (leader pid %s; tmux -S %s attach)" % (self.work, self.m.leader, self.m.sock))
            return
        self.m.poweroff()
        self.m.remove()


def print_booted(r, info):
    print("\nlocalauth vs fprintd on the booted Debian 12 (systemd-nspawn, systemd %s, the real "
          "logind, dbus %s, polkitd %s; fprintd %s), %s; load %.2f before, %.2f after" % (
              info["versions"].get("systemd", "?"), info["versions"].get("dbus", "?"),
              info["versions"].get("polkitd", "?"), info["versions"].get("fprintd", "?"),
              info["date"], info["machine"]["loadavg_before"][0], info["machine"]["loadavg_after"][0]))
    print("times in ms: median [min / p95 / max] (n); ratio = ours / theirs (medians)\n")
    print("%-34s %-36s %-36s %7s" % ("figure", "localauth", "fprintd", "ratio"))

    def cell(s):
        if not s or not s.get("n"):
            return "-"
        return "%.3f [%.3f/%.3f/%.3f] (%d)" % (s["median"], s["min"], s["p95"], s["max"], s["n"])
    for key, sides in r.items():
        if not isinstance(sides, dict) or key in ("rss_kb", "7 floor", "11 logind per verify (booted)",
                                                  "1b audit trail after the touch"):
            continue
        o, t = sides.get("localauth"), sides.get("fprintd")
        ratio = "%.3f" % (o["median"] / t["median"]) if o and t and o.get("n") and t.get("n") else "-"
        print("%-34s %-36s %-36s %7s" % (key, cell(o), cell(t), ratio))
    mem = r.get("rss_kb", {})
    for label in mem.get("localauth", {}):
        o, t = mem["localauth"][label], mem.get("fprintd", {}).get(label)

        def mb(x):
            return "%.1f MB (PSS %.1f, dirty %.1f)" % (x["rss_kb"] / 1024, x["pss_kb"] / 1024,
                                                      x["private_dirty_kb"] / 1024) if x else "-"
        print("%-34s %-36s %-36s %7s" % ("7 RSS " + label, mb(o), mb(t),
                                         "%.3f" % (o["rss_kb"] / t["rss_kb"]) if t else "-"))


def print_logind(r):
    """Figure 11 on the booted system: localauthd's calls to org.freedesktop.login1 per verify."""
    a = r.get("11 logind per verify (booted)", {}).get("localauth")
    if a:
        print("\n11 logind on the booted system: %.2f calls to org.freedesktop.login1 per pam_authenticate "
              "in alice's session (%d verifies: %s)" % (
                  a["calls"] / a["verifies"], a["verifies"],
                  ", ".join("%s %d" % kv for kv in a["by member"].items()) or "none"))


def print_audit_trail(r):
    """Figure 1b: what journald's share of the audit trail costs after the touch."""
    a = r.get("1b audit trail after the touch", {}).get("localauth")
    if not a:
        return
    j = a["journald_cpu_us_per_verify"]
    print("\n1b the audit trail after the touch: prompt -> result %.3f ms with the daemon's record and the "
          "module's syslog line going to journald (the shipped unit), %.3f ms with neither going there "
          "(measurement only); paired, %+.3f ms, faster without journald in %d of %d blocks; journald's CPU "
          "per verify %s and %s us" % (
              r["1b prompt_to_result, journald"]["localauth"]["median"],
              r["1b prompt_to_result, no journald"]["localauth"]["median"],
              a["paired_difference_ms"], a["faster_without_journald_in"], a["blocks"],
              "%.0f" % j["journal"] if j.get("journal") is not None else "-",
              "%.0f" % j["file"] if j.get("file") is not None else "-"))


def print_side_by_side(booted, by_hand):
    """Each goal of issue 29: by hand (make bench's daemons beside python-dbusmock's logind) and
    on the booted system, in one table."""
    hand = {g[0]: g for g in goals(by_hand)} if by_hand else {}
    boot = {g[0]: g for g in goals(booted)}
    print("\nissue 29's goals, by hand (bench.py, this run's latest.json) and on the booted system")
    print("%-58s %-34s %-8s %-34s %s" % ("goal", "by hand", "", "booted", ""))
    for name in list(hand) + [n for n in boot if n not in hand]:
        h, b = hand.get(name), boot.get(name)

        def verdict(g):
            return "-" if not g or g[2] is None else "met" if g[2] else "NOT MET"
        print("%-58s %-34s %-8s %-34s %s" % (name[:58], (h[1] if h else "-")[:34], verdict(h),
                                             (b[1] if b else "-")[:34], verdict(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--deb", required=True)
    ap.add_argument("--compat", required=True)
    ap.add_argument("--bin", default=os.path.join(REPO, ".build", "release"))
    ap.add_argument("--client", default=os.path.join(REPO, "pam", "build", "tests", "bench_client"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--process-runs", type=int, default=40)
    ap.add_argument("--cold-runs", type=int, default=11)
    ap.add_argument("--clients", type=int, default=1000, help="figure 8 (0: none)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--by-hand", default=os.path.join(HERE, "results", "latest.json"),
                    help="make bench's JSON, printed beside (its issue 29 goals)")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.blocks, args.process_runs, args.cold_runs = 20, 2, 5, 3
        args.clients, args.rounds = 100, 2
    if os.geteuid() != 0:
        sys.exit("bench-boot: needs root (systemd-nspawn)")
    for path in (args.deb, args.compat, args.client, os.path.join(args.bin, "localauth-bench")):
        if not os.path.exists(path):
            sys.exit("%s is missing (make bench-boot builds it)" % path)
    # The timer, built for this run.
    args.timer = os.path.join(tempfile.mkdtemp(prefix="la-boot-timer-"), "boot_timer")
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", args.timer, os.path.join(HERE, "boot_timer.c")],
                   check=True)
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "git_head": subprocess.run(
                ["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
            "settings": {k: v for k, v in vars(args).items() if k != "json"}}
    bench = BootBench(args)
    t0 = time.monotonic()
    try:
        results = bench.run()
    except BootFailure as e:
        sys.exit("bench-boot: the root does not boot: %s" % e)
    finally:
        info["versions"] = getattr(bench, "versions", {})
        bench.close()
        shutil.rmtree(os.path.dirname(args.timer), ignore_errors=True)
    info["seconds"] = time.monotonic() - t0
    info["machine"]["loadavg_after"] = os.getloadavg()
    print_booted(results, info)
    print_logind(results)
    print_audit_trail(results)
    print_floor(results)
    print_goals(goals(results), "issue 29's goals on the booted system")
    by_hand = None
    if args.by_hand and os.path.exists(args.by_hand):
        with open(args.by_hand) as f:
            by_hand = json.load(f).get("results")
    print_side_by_side(results, by_hand)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = args.json or os.path.join(HERE, "results", "boot-%s.json" % stamp)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(dict(info, results=results), f, indent=1)
    print("\nJSON: %s (%.0f s)" % (path, info["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
