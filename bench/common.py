# SPDX-License-Identifier: Apache-2.0
"""What every figure of `make bench` shares: the paths, the names (user, prints, the
incumbent's packages), the processes started and stopped, statistics in nanoseconds.
"""
import hashlib
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the tree


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "pam", "tests"))  # lawire, seat

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


def percentile(values, q):
    """Nearest rank, as stats does for p95."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None


def interleaved(sides, blocks, fn):
    """fn(side) for A B A B ... over `blocks` rounds; the order within a round alternates."""
    out = {s.name: [] for s in sides}
    for i in range(blocks):
        for side in (sides if i % 2 == 0 else sides[::-1]):
            out[side.name].append(fn(side))
    return out
