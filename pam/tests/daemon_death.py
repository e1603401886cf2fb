# SPDX-License-Identifier: Apache-2.0
"""Promise 1 of docs/reliability.md: daemon death never hangs a login.

The real localauthd (--virtual-reader, temporary socket and state directory), real libpam under
pam_wrapper, the real pam_localauth.so, driven by step_client (one pam_authenticate that reports
each step as it happens). KILLS times: start an authentication, kill -9 the daemon at a random
moment of it, check that pam_authenticate returns PAM_AUTHINFO_UNAVAIL within 1 s of the kill,
restart the daemon and check that the next authentication with the enrolled finger succeeds.

The moment is drawn from one of three phases, aimed so that each gets about a third of the
kills:
  before the prompt   a uniform delay after step_client is told to call pam_authenticate, up
                      to 1.5 times the go->prompt time measured in the warm-up
  waiting for finger  after the prompt, a uniform delay of 0-300 ms, no finger given
  after the scan      the finger (enrolled or not, one each in turn; tries=1, so a miss is
                      recorded as a failure) is on the reader, then a uniform delay up to the
                      scan->result time of the warm-up: the daemon is matching, writing its
                      state or replying
Each kill is classified by what the client had seen when it landed. A kill that lands before
pam_authenticate was called or after it returned does not count (it killed nothing in flight),
nor one that lands after the daemon had already sent its RESULT, which the module then reads
and returns (checked to be the right answer for the finger: never PAM_SUCCESS for a stranger);
the run goes on until KILLS kills landed inside a call.

Usage: daemon_death.py --module SO --bin DIR [--kills N] [--json PATH] [--seed S]
Exit status 0 when every kill passed; the last line is "N passed, N failed".
"""
import json
import math
import os
import queue
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402
import privtmp  # noqa: E402
import seat  # noqa: E402
import testargs  # noqa: E402

PAM_SUCCESS, PAM_AUTH_ERR, PAM_AUTHINFO_UNAVAIL, PAM_MAXTRIES = 0, 7, 9, 11
USER, FINGER, STRANGER = "nobody", "finger-1", "stranger"
BUDGET_S = 1.0


def stats(values):
    v = sorted(values)
    if not v:
        return {"n": 0}
    p95 = v[max(0, math.ceil(0.95 * len(v)) - 1)]
    return {"n": len(v), "min": v[0], "median": statistics.median(v), "p95": p95, "max": v[-1]}


class Daemon:
    def __init__(self, root, bin_dir):
        self.bin = bin_dir
        self.sock = os.path.join(root, "socket")
        self.state = os.path.join(root, "state")
        self.vsock = os.path.join(self.state, "virtual-reader.socket")
        self.log = open(os.path.join(root, "localauthd.log"), "a")
        self.proc = None

    def start(self):
        """Starts localauthd and returns once it answers HELLO; the seconds that took."""
        began = time.monotonic()
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "localauthd"), "--socket", self.sock, "--state-dir",
             self.state, "--virtual-reader"], stdout=self.log, stderr=self.log,
            env=seat.env({"PATH": "/usr/bin:/bin"}))
        deadline = began + 30
        while True:
            try:
                lawire.handshake(self.sock, timeout=2)
                return time.monotonic() - began
            except (OSError, EOFError, ValueError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("localauthd did not start (exit %s)" % self.proc.poll())
                time.sleep(0.01)

    def kill(self):
        t = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return t

    def ctl(self, *args):
        return subprocess.run([os.path.join(self.bin, "localauthctl"), *args],
                              capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "LOCALAUTHD_SOCKET": self.sock})

    def enroll(self, user=USER, print_id=FINGER):
        """Five touches once the daemon has asked for the finger (the prompt, its first line), and
        not one more: a touch left queued in the virtual reader would answer the next call. (Before,
        a touch every 0.2 s until it ended: on a slow machine more than five could queue.)"""
        p = subprocess.Popen(["stdbuf", "-oL", os.path.join(self.bin, "localauthctl"), "enroll", "--user", user,
                              "--finger", "right-index-finger"],
                             env={"PATH": "/usr/bin:/bin", "LOCALAUTHD_SOCKET": self.sock},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = p.stdout.readline()
        if "finger" not in first.lower():
            p.kill()
            raise RuntimeError("enrolment: no prompt: %r" % (first + p.communicate()[0]))
        for _ in range(5):
            self.ctl("simulate", "touch", print_id)
        out = first + p.communicate(timeout=60)[0]
        if p.returncode != 0:
            raise RuntimeError("enrolment failed: %s" % out)

    def scan(self, print_id):
        """SCAN to the virtual device, once it listens; returns when the device has taken it."""
        deadline = time.monotonic() + 10
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(5)
                s.connect(self.vsock)
                s.sendall(("SCAN %s" % print_id).encode())
                s.shutdown(socket.SHUT_WR)
                while s.recv(256):
                    pass
                return
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.001)
            finally:
                s.close()


class Call:
    """One step_client run; its lines arrive on a queue as (kind, fields)."""

    def __init__(self, client, services, service):
        env = dict(os.environ, LD_PRELOAD="libpam_wrapper.so", PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=services)
        for k in ("PAM_RHOST", "PAM_TTY"):
            env.pop(k, None)
        private, env = privtmp.wrap(env, os.path.dirname(services))  # pam_wrapper's /tmp/pam.X
        self.proc = subprocess.Popen(private + [client, service, USER], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for("ready")

    def go(self):
        """Lets step_client call pam_authenticate; returns the time it was told to."""
        t = time.monotonic()
        self.proc.stdin.write(b"g")
        self.proc.stdin.close()
        return t

    def _read(self):
        for line in self.proc.stdout:
            parts = line.decode(errors="replace").rstrip("\n").split(" ", 3)
            self.lines.put(parts)
        self.lines.put(None)

    def wait_for(self, kind, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            for parts in self.seen:
                if parts[0] == kind:
                    return parts
            try:
                parts = self.lines.get(timeout=max(0.001, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("no %r line from step_client within %d s" % (kind, timeout))
            if parts is None:
                raise RuntimeError("step_client ended before %r: %s" % (
                    kind, self.proc.stderr.read().decode(errors="replace")))
            self.seen.append(parts)

    def time_of(self, kind):
        for parts in self.seen:
            if parts[0] == kind:
                return int(parts[2] if kind == "result" else parts[1]) / 1e9
        return None

    def finish(self, timeout=20):
        result = self.wait_for("result", timeout)
        self.proc.wait(timeout=5)
        return int(result[1]), int(result[2]) / 1e9


def daemon_with_service(service, module, bin_dir, timeout):
    """A temporary directory (readable by every uid) with a real daemon not yet started, and a
    pam_wrapper service directory whose SERVICE has the module alone against that daemon."""
    root = tempfile.mkdtemp(prefix=service + "-")
    os.chmod(root, 0o755)
    services = os.path.join(root, "pam.d")
    os.mkdir(services)
    open(os.path.join(services, "other"), "w").close()
    daemon = Daemon(root, bin_dir)
    with open(os.path.join(services, service), "w") as f:
        f.write("auth required %s socket=%s tries=1 timeout=%d\n" % (
            os.path.abspath(module), daemon.sock, timeout))
    return root, services, daemon


def daemon_test_arguments():
    """The arguments of a test that runs the daemon behind the module: --module, --bin, --client,
    --json (where to write the figures); the test adds its own."""
    ap = testargs.module_arguments("--bin", "--client")
    ap.add_argument("--json", default=None)
    return ap


def main():
    ap = daemon_test_arguments()
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    if os.getuid() != 0:
        print("run as root: the module believes only a daemon run by root")
        return 1
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    root, services, daemon = daemon_with_service("la-death", args.module, args.bin, timeout=10)

    def call():
        return Call(args.client, services, "la-death")

    def authenticate_with(print_id):
        c = call()
        c.go()
        c.wait_for("msg")
        daemon.scan(print_id)
        return c.finish()[0]

    failures, kills, missed = [], [], {"before the prompt": 0, "waiting for the finger": 0,
                                        "after the scan": 0}
    restarts, answered_before = [], 0
    try:
        daemon.start()
        daemon.enroll()
        # Warm-up: how long the phases take here, to aim the kills.
        to_prompt, to_result = [], []
        for i in range(4):
            c = call()
            told = c.go()
            c.wait_for("msg")
            daemon.scan(FINGER if i % 2 == 0 else STRANGER)
            scanned = time.monotonic()
            code, end = c.finish()
            if code not in (PAM_SUCCESS, PAM_MAXTRIES):
                raise RuntimeError("warm-up authentication: PAM code %d" % code)
            to_prompt.append(c.time_of("msg") - told)
            to_result.append(end - scanned)
        authenticate_with(FINGER)  # a success clears the warm-up's miss
        prompt_window = 1.5 * statistics.median(to_prompt)
        result_window = statistics.median(to_result)
        print("seed %d; warm-up: go->prompt %.1f ms, scan->result %.1f ms" % (
            seed, 1e3 * statistics.median(to_prompt), 1e3 * statistics.median(to_result)))

        aimed = 0
        while len(kills) < args.kills and aimed < args.kills * 4:
            aimed += 1
            # The phase with the fewest kills so far: late kills often miss a fast call.
            phases = ["before the prompt", "waiting for the finger", "after the scan"]
            phase = min(phases, key=lambda ph: (sum(1 for k in kills if k["landed"] == ph),
                                                phases.index(ph)))
            print_id = FINGER if (aimed // 3) % 2 == 0 else STRANGER
            c = call()
            scanned = False
            if phase == "before the prompt":
                c.go()
                time.sleep(rng.uniform(0, prompt_window))
            elif phase == "waiting for the finger":
                c.go()
                c.wait_for("msg")
                time.sleep(rng.uniform(0, 0.3))
            else:
                c.go()
                c.wait_for("msg")
                daemon.scan(print_id)
                scanned = True
                time.sleep(rng.uniform(0, result_window))
            killed = daemon.kill()
            code, end = c.finish()
            c.wait_for("call")
            if c.time_of("call") > killed:
                missed["before the call"] = missed.get("before the call", 0) + 1
            elif end <= killed:
                missed[phase] += 1  # the call was over: nothing in flight to kill
            elif scanned and code == (PAM_SUCCESS if print_id == FINGER else PAM_MAXTRIES):
                # The daemon had sent its RESULT before it died and the module read it from the
                # socket afterwards: a real answer, not a call cut short. Never a wrong one.
                answered_before += 1
            else:
                prompt_at = c.time_of("msg")
                landed = ("before the prompt" if prompt_at is None or prompt_at > killed
                          else "after the scan" if scanned else "waiting for the finger")
                took = end - killed
                kills.append({"aimed": phase, "landed": landed, "code": code, "seconds": took,
                              "finger": print_id if phase == "after the scan" else None})
                if code != PAM_AUTHINFO_UNAVAIL or took >= BUDGET_S:
                    failures.append("kill %d (%s): PAM code %d, %.3f s after the kill" % (
                        len(kills), landed, code, took))
            restarts.append(daemon.start())
            code = authenticate_with(FINGER)
            if code != PAM_SUCCESS:
                failures.append("after restart %d: the enrolled finger got PAM code %d (log: %s)"
                                % (len(restarts), code, open(daemon.log.name).read()[-400:]))
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.terminate()
            daemon.proc.wait()
        shutil.rmtree(root, ignore_errors=True)

    ms = [1e3 * k["seconds"] for k in kills]
    report = {"seed": seed, "kills": len(kills), "aimed": aimed, "after_return": missed,
              "answered_before_the_kill": answered_before,
              "kill_to_return_ms": stats(ms), "restart_ms": stats([1e3 * r for r in restarts]),
              "by_phase": {}}
    print("kill -> pam_authenticate returned (ms), by where the kill landed:")
    print("  %-24s %4s %8s %8s %8s %8s" % ("phase", "n", "min", "median", "p95", "max"))
    for phase in ("before the prompt", "waiting for the finger", "after the scan", None):
        chosen = [m for m, k in zip(ms, kills) if phase is None or k["landed"] == phase]
        s = stats(chosen)
        report["by_phase"][phase or "all"] = s
        if s["n"]:
            print("  %-24s %4d %8.2f %8.2f %8.2f %8.2f" % (
                phase or "all", s["n"], s["min"], s["median"], s["p95"], s["max"]))
        else:
            print("  %-24s %4d" % (phase or "all", 0))
    codes = sorted({k["code"] for k in kills})
    print("PAM codes of the killed calls: %s; kills that landed after the call had returned "
          "(not counted): %s; after the daemon had sent its RESULT, which the module then "
          "returned (right code for the finger; not counted): %d" % (codes, missed, answered_before))
    r = report["restart_ms"]
    if r["n"]:
        print("daemon restart to first WELCOME (ms): n %d, median %.1f, p95 %.1f, max %.1f" % (
            r["n"], r["median"], r["p95"], r["max"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if len(kills) < args.kills:
        failures.append("only %d of %d kills landed inside a call" % (len(kills), args.kills))
    for line in failures:
        print("FAIL " + line)
    print("%d passed, %d failed" % (len(kills) - sum(1 for f in failures if f.startswith("kill")),
                                    len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
