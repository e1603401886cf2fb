#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""pam_authenticate through pam_localauth.so against the real localauthd, timed in process.

Starts localauthd --virtual-reader on a temporary socket and state directory, enrols one
finger (localauthctl enroll + five simulated touches, as scripts/demo.sh does), then runs
pam/build/tests/bench_client (`make pam-bench`) under pam_wrapper with a private service
directory. The client's conversation sends "SCAN id" to the virtual device the moment the
"Place your ... finger" prompt arrives, so what is timed is the stack, not a person.

Phases (each after --warmup untimed runs):
  match          the enrolled finger; PAM_SUCCESS expected
  no-match       another finger, tries=1; PAM_MAXTRIES expected. Every no-match run is followed
                 by an untimed matching run, so the daemon's lockout (5 consecutive misses)
                 never trips
  EOF cost       matching runs alternating between the normal conversation (the EOF of the
                 virtual device's control socket is awaited by a helper thread) and one that
                 waits for that EOF itself before returning; alternating in one process keeps
                 load drift out of the comparison

Usage: /usr/bin/python3 bench/pam_timing.py [--runs N] [--bin DIR] [--module SO] [--json PATH]
Prints a table (milliseconds) and writes JSON (default bench/results/pam_timing.json).
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "pam", "tests"))
import lawire  # noqa: E402

PAM_SUCCESS, PAM_MAXTRIES = 0, 11
PRINT_ID, STRANGER = "bench-finger", "stranger"
METRICS = [("total_ns", "total (pam_authenticate)"),
           ("prompt_ns", "start -> prompt"),
           ("result_ns", "prompt -> result"),
           ("send_ns", "SCAN send in the conversation"),
           ("eof_ns", "prompt -> device EOF"),
           ("start_ns", "pam_start (not in total)")]


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


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="la-pam-bench-")
        os.chmod(self.tmp, 0o755)
        self.sock = os.path.join(self.tmp, "socket")
        self.state = os.path.join(self.tmp, "state")
        self.virtual = os.path.join(self.state, "virtual-reader.socket")
        self.services = os.path.join(self.tmp, "pam.d")
        self.daemon = None
        self.log = open(os.path.join(self.tmp, "localauthd.log"), "w")

    def close(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        self.log.close()
        if self.args.keep:
            print("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def ctl(self, *args):
        env = dict(os.environ, LOCALAUTHD_SOCKET=self.sock)
        return subprocess.run([os.path.join(self.args.bin, "localauthctl"), *args], env=env,
                              capture_output=True, text=True, timeout=30)

    def start_daemon(self):
        cmd = [os.path.join(self.args.bin, "localauthd"), "--socket", self.sock,
               "--state-dir", self.state, "--virtual-reader"]
        if self.args.linger_ms is not None:
            cmd += ["--linger-ms", str(self.args.linger_ms)]
        self.daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 15
        while True:
            try:
                return lawire.handshake(self.sock, timeout=1)
            except (OSError, EOFError, ValueError):
                if self.daemon.poll() is not None or time.monotonic() > deadline:
                    sys.exit("localauthd did not come up; log in %s" % self.log.name)
                time.sleep(0.05)

    def enrol(self):
        env = dict(os.environ, LOCALAUTHD_SOCKET=self.sock)
        enrol = subprocess.Popen([os.path.join(self.args.bin, "localauthctl"), "enroll", "--user",
                                  self.args.user, "--finger", "right-index-finger"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(5):
            r = self.ctl("simulate", "touch", PRINT_ID, "--quiet")
            if r.returncode != 0:
                enrol.kill()
                sys.exit("simulate touch: %s%s" % (r.stdout, r.stderr))
        out = enrol.communicate(timeout=30)[0]
        if enrol.returncode != 0:
            sys.exit("enrolment failed: %s" % out)

    def write_services(self):
        os.mkdir(self.services)
        open(os.path.join(self.services, "other"), "w").close()
        lines = {"la-bench": "socket=%s timeout=10" % self.sock,
                 "la-bench-nomatch": "socket=%s timeout=10 tries=1" % self.sock}
        for name, args in lines.items():
            with open(os.path.join(self.services, name), "w") as f:
                f.write("auth required %s %s\n" % (self.args.module, args))
        return lines

    def client(self, runs, plan):
        env = dict(os.environ, LD_PRELOAD="libpam_wrapper.so", PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=self.services)
        for k in ("PAM_RHOST", "PAM_TTY", "PAM_WRAPPER_DEBUGLEVEL"):
            env.pop(k, None)
        cmd = [self.args.client, self.virtual, self.args.user, str(runs)] + [
            ":".join(p) for p in plan]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            sys.exit("bench_client failed (%d): %s" % (r.returncode, r.stderr))
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def check_runs(rows, expect_rc, what):
    bad = [r for r in rows if r["rc"] != expect_rc or r["prompt_ns"] < 0 or r["scan_errno"]
           or r["eof_ns"] < 0]
    if bad:
        sys.exit("%s: %d of %d runs went wrong, e.g. %s" % (what, len(bad), len(rows), bad[0]))


def summarise(rows):
    return {key: stats([r[key] for r in rows]) for key, _ in METRICS}


def print_table(phases):
    print("%-19s %-30s %5s %8s %8s %8s %8s" % ("phase", "interval (ms)", "n", "min", "median",
                                                 "p95", "max"))
    for name, phase in phases.items():
        for key, label in METRICS:
            s = phase["stats"][key]
            print("%-19s %-30s %5d %8.3f %8.3f %8.3f %8.3f" % (
                name, label, s["n"], s["min"], s["median"], s["p95"], s["max"]))
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "debug"))
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests",
                                                     "bench_client"))
    ap.add_argument("--user", default="nobody")
    ap.add_argument("--linger-ms", type=int, default=None,
                    help="passed to localauthd (default: the daemon's, 2000)")
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "pam_timing.json"))
    ap.add_argument("--no-build", action="store_true", help="do not run make pam pam-bench")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    args.module, args.bin = os.path.abspath(args.module), os.path.abspath(args.bin)
    if os.getuid() != 0:
        sys.exit("run as root: pam_localauth.so believes only a daemon run by root")
    if not args.no_build:
        subprocess.run(["make", "-s", "-C", ROOT, "-f", "pam/pam.mk", "pam", "pam-bench"],
                       check=True)
    for path in (args.module, args.client, os.path.join(args.bin, "localauthd"),
                 os.path.join(args.bin, "localauthctl")):
        if not os.path.exists(path):
            sys.exit("%s is missing" % path)

    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "runs": args.runs, "warmup": args.warmup, "user": args.user,
            "module": {"path": args.module, "sha256": sha256(args.module)},
            "localauthd": {"path": os.path.join(args.bin, "localauthd"),
                           "sha256": sha256(os.path.join(args.bin, "localauthd")),
                           "mtime": datetime.datetime.fromtimestamp(
                               os.path.getmtime(os.path.join(args.bin, "localauthd")),
                               datetime.timezone.utc).isoformat(timespec="seconds")},
            "linger_ms": args.linger_ms if args.linger_ms is not None else "daemon default",
            "clock": "CLOCK_MONOTONIC in the client process",
            "p95": "nearest rank"}
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True)
    info["git_head"] = git.stdout.strip()

    b = Bench(args)
    try:
        welcome = b.start_daemon()
        info["daemon"] = welcome.get("peer")
        b.enrol()
        info["services"] = b.write_services()
        w, n = args.warmup, args.runs
        phases = {}

        rows = b.client(w + n, [("la-bench", PRINT_ID)])
        check_runs(rows, PAM_SUCCESS, "match")
        phases["match"] = {"expect": "PAM_SUCCESS", "rows": rows[w:], "warmup": rows[:w]}

        rows = b.client(2 * (w + n), [("la-bench-nomatch", STRANGER), ("la-bench", PRINT_ID)])
        check_runs(rows[0::2], PAM_MAXTRIES, "no-match")
        check_runs(rows[1::2], PAM_SUCCESS, "no-match phase, matching runs between")
        phases["no-match"] = {"expect": "PAM_MAXTRIES", "rows": rows[0::2][w:],
                              "warmup": rows[0::2][:w]}

        rows = b.client(2 * (w + n), [("la-bench", PRINT_ID), ("la-bench", PRINT_ID, "sync")])
        check_runs(rows, PAM_SUCCESS, "EOF cost")
        phases["EOF async (alt.)"] = {"expect": "PAM_SUCCESS", "rows": rows[0::2][w:],
                                      "warmup": rows[0::2][:w]}
        phases["EOF in conv (alt.)"] = {"expect": "PAM_SUCCESS", "rows": rows[1::2][w:],
                                        "warmup": rows[1::2][:w]}
    finally:
        b.close()

    info["machine"]["loadavg_after"] = os.getloadavg()
    for phase in phases.values():
        phase["stats"] = summarise(phase["rows"])
        phase["messages"] = phase["rows"][0]["messages"]
        phase["connect_tries_max"] = max(r["connect_tries"] for r in phase["rows"])
        phase["first_warmup_run"] = {k: phase["warmup"][0][k] / 1e6 for k, _ in METRICS} \
            if phase["warmup"] else None
    print("pam_authenticate through pam_localauth.so, localauthd --virtual-reader, instant "
          "virtual scan sent from the conversation; %d runs per phase after %d warm-up runs"
          % (args.runs, args.warmup))
    print("machine: %s, %d CPUs, load %.2f before / %.2f after\n" % (
        info["machine"]["cpu"], info["machine"]["cpus"], info["machine"]["loadavg_before"][0],
        info["machine"]["loadavg_after"][0]))
    print_table(phases)
    a, z = phases["EOF async (alt.)"]["rows"], phases["EOF in conv (alt.)"]["rows"]
    paired = {key: statistics.median(y[key] - x[key] for x, y in zip(a, z)) / 1e6
              for key in ("total_ns", "result_ns", "send_ns")}
    info["eof_in_conversation_cost_ms"] = dict(paired, pairs=min(len(a), len(z)),
                                               how="median of (sync run - preceding async run)")
    print("waiting for the EOF in the conversation, median paired difference over %d pairs: "
          "total %+.3f ms, prompt -> result %+.3f ms, time held in the conversation %+.3f ms\n"
          % (min(len(a), len(z)), paired["total_ns"], paired["result_ns"], paired["send_ns"]))
    for name, phase in phases.items():
        print("%s: messages %s" % (name, [m[1] for m in phase["messages"]]))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(info, phases=phases), f, indent=1)
    print("\nJSON: %s" % args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
