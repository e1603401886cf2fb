# SPDX-License-Identifier: Apache-2.0
"""Promise 6 of docs/reliability.md: hostile local clients.

The real localauthd (--virtual-reader, default limits: 32 connections per non-root uid, 30 s
idle timeout) on a temporary socket. Root's pam_authenticate through pam_localauth.so is timed
by bench_client (its conversation puts root's enrolled finger on the virtual reader when the
prompt arrives) on the idle daemon, then while hostile_load.py attacks it:
  * 1000 idle connections: 50 uids holding 20 each (HELLO, then nothing);
  * a flood from uid 65534 (setpriv): 100 connections asked for, then requests as fast as the
    daemon answers on every one it was given (DEVICES, STATUS, CAN_EVALUATE, LIST, EVALUATE of
    itself, LIST of root);
  * oversized frames from uid 64000: a header claiming 2 GiB, again and again;
  * slow partial frames from uid 64001: 10 connections sending one byte every 200 ms of a
    frame that never ends;
(for at least 5 s), then on the idle daemon again. Checked: the flood got exactly 32 connections
and the rest ERROR tooManyConnections, and was paced to 100 requests a second (after a burst of
50); all 1000 idle connections were welcomed; every oversized frame got
ERROR tooLarge; every slow connection was closed with ERROR timeout 30 s (the default idle
timeout) after it opened, whatever it dribbled; the flood's requests were answered; the daemon
serves on; and the median of root's pam_authenticate under attack is at most 10 ms above the
median on the idle daemon (before and after).

Usage: hostile.py --module SO --bin DIR --client BENCH_CLIENT [--runs N] [--json PATH]
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import json
import os
import resource
import select
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lawire  # noqa: E402
import privtmp  # noqa: E402
from daemon_death import daemon_test_arguments, daemon_with_service, stats  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
ROOT_PRINT = "root-finger"
BUDGET_MS = 10.0
IDLE_UIDS, IDLE_PER_UID = 50, 20
FLOOD_UID, FLOOD_ASKED, PER_UID_LIMIT = 65534, 100, 32
OVERSIZED_UID, SLOW_UID, SLOW_CONNECTIONS, SLOW_INTERVAL_MS = 64000, 64001, 10, 200
IDLE_TIMEOUT_S = 30.0
ATTACK_S = 5.0
RATE_PER_UID, BURST = 100, 50  # Server.Limits: requests a non-root uid may start per second


def setpriv(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--"]


class Role:
    def __init__(self, cmd, log):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, text=True)
        self.name = "?"
        for i, part in enumerate(cmd):
            if part.endswith("hostile_load.py"):
                self.name = cmd[i + 1]

    def line(self, kind, timeout):
        deadline = time.monotonic() + timeout
        while True:
            r, _, _ = select.select([self.proc.stdout], [], [], max(0, deadline - time.monotonic()))
            if not r:
                raise RuntimeError("%s: no %r line within %d s" % (self.name, kind, timeout))
            text = self.proc.stdout.readline()
            if not text:
                raise RuntimeError("%s ended before %r (exit %s)" % (
                    self.name, kind, self.proc.wait()))
            if text.startswith(kind + " "):
                return json.loads(text[len(kind) + 1:])

    def stop(self, timeout=30):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.line("done", timeout)


def main():
    ap = daemon_test_arguments()
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    if os.getuid() != 0:
        print("run as root: the module believes only a daemon run by root; setpriv needs root")
        return 1
    # 1000 idle connections and more: the daemon and the load need the descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    root, services, daemon = daemon_with_service("la-hostile", args.module, args.bin, timeout=20)
    load_log = open(os.path.join(root, "load.log"), "w")
    failures, roles, report = [], [], {}

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL " + what)
        else:
            print("ok   " + what)
        sys.stdout.flush()

    def timed_runs(n):
        """n timed runs after 2 untimed ones (the reader may have closed since the last)."""
        env = dict(os.environ, LD_PRELOAD="libpam_wrapper.so", PAM_WRAPPER="1",
                   PAM_WRAPPER_SERVICE_DIR=services)
        for k in ("PAM_RHOST", "PAM_TTY", "PAM_WRAPPER_DEBUGLEVEL"):
            env.pop(k, None)
        private, env = privtmp.wrap(env, os.path.dirname(services), os.path.dirname(daemon.vsock))
        r = subprocess.run(private + [args.client, daemon.vsock, "root", str(n + 2),
                            "la-hostile:" + ROOT_PRINT], env=env, capture_output=True, text=True,
                           timeout=60 + 5 * n)
        if r.returncode != 0:
            raise RuntimeError("bench_client failed (%d): %s" % (r.returncode, r.stderr))
        runs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        bad = [x["rc"] for x in runs if x["rc"] != 0]
        if bad:
            raise RuntimeError("root's pam_authenticate failed: PAM codes %s" % bad)
        return [x["total_ns"] / 1e6 for x in runs[2:]]

    def role(*cmd_args, uid=None):
        cmd = (setpriv(uid) if uid is not None else []) + [
            PYTHON, os.path.join(HERE, "hostile_load.py"), cmd_args[0], daemon.sock,
            *[str(a) for a in cmd_args[1:]]]
        r = Role(cmd, load_log)
        roles.append(r)
        return r

    try:
        daemon.start()
        daemon.enroll(user="root", print_id=ROOT_PRINT)
        idle_before = timed_runs(args.runs)

        slow = role("slow", SLOW_CONNECTIONS, SLOW_INTERVAL_MS, uid=SLOW_UID)
        slow_started = time.monotonic()
        slow.line("ready", 30)
        idle = role("idle", 61000, IDLE_UIDS, IDLE_PER_UID)
        held = idle.line("ready", 120)
        flood = role("flood", FLOOD_ASKED, uid=FLOOD_UID)
        flooding = flood.line("ready", 60)
        oversized = role("oversized", uid=OVERSIZED_UID)
        oversized.line("ready", 30)
        # At least ATTACK_S of attack, however fast the runs are.
        attack_began, under_attack = time.monotonic(), []
        while len(under_attack) < args.runs or time.monotonic() - attack_began < ATTACK_S:
            under_attack += timed_runs(10)
        flood_done = flood.stop()
        oversized_done = oversized.stop()
        # The slow connections end by themselves at the idle timeout.
        slow_done = slow.line("done", max(5, IDLE_TIMEOUT_S + 30 - (time.monotonic() - slow_started)))
        served = lawire.handshake(daemon.sock, timeout=5)
        idle_done = idle.stop()
        idle_after = timed_runs(args.runs)

        check(held["held"] == IDLE_UIDS * IDLE_PER_UID and not held["refused"],
              "1000 idle connections from %d uids all welcomed and held: %s" % (IDLE_UIDS, held))
        check(flooding["held"] == PER_UID_LIMIT and flooding["refused"] == {
            "6": FLOOD_ASKED - PER_UID_LIMIT},
            "uid %d asked for %d connections: %d welcomed, the rest ERROR tooManyConnections (%s)"
            % (FLOOD_UID, FLOOD_ASKED, PER_UID_LIMIT, flooding))
        check(flood_done["results"] > 0 and flood_done["errors"] == 0,
              "the flood's requests were answered, no connection dropped: %s" % flood_done)
        most = BURST + RATE_PER_UID * flood_done["seconds"] + 32
        check(flood_done["results"] <= most,
              "the flood was paced to %d requests/s: %d answered in %.1f s (at most %d)" % (
                  RATE_PER_UID, flood_done["results"], flood_done["seconds"], most))
        check(oversized_done["rounds"] > 0 and oversized_done["codes"] == {
            "2": oversized_done["rounds"]},
            "every oversized frame got ERROR tooLarge: %s" % oversized_done)
        slow_conns = slow_done["connections"]
        opens = [c["open_s"] for c in slow_conns]
        check(all(o is not None and IDLE_TIMEOUT_S - 0.5 <= o <= IDLE_TIMEOUT_S + 15 for o in opens)
              and all(c["error_code"] == 7 for c in slow_conns),
              "every slow partial frame was closed with ERROR timeout after the 30 s idle timeout"
              " (open for %s s, %s bytes sent)" % (
                  [round(o, 2) if o else o for o in opens], [c["bytes_sent"] for c in slow_conns]))
        check(served.get("version") == 1, "the daemon still answers HELLO after the attack")
        base = statistics.median(idle_before + idle_after)
        loaded = statistics.median(under_attack)
        check(loaded - base <= BUDGET_MS,
              "root's pam_authenticate median %.2f ms under attack vs %.2f ms idle: +%.2f ms "
              "(budget %.0f ms)" % (loaded, base, loaded - base, BUDGET_MS))
        report = {
            "runs_per_phase": args.runs,
            "idle_before_ms": stats(idle_before), "under_attack_ms": stats(under_attack),
            "idle_after_ms": stats(idle_after), "median_increase_ms": loaded - base,
            "idle_connections": held, "flood": {**flooding, **flood_done},
            "oversized": oversized_done, "slow": slow_conns, "idle_done": idle_done,
        }
        print("root's pam_authenticate (ms)   %4s %8s %8s %8s %8s" % ("n", "min", "median", "p95",
                                                                      "max"))
        for name, values in (("idle daemon, before", idle_before),
                             ("under attack", under_attack), ("idle daemon, after", idle_after)):
            s = stats(values)
            print("  %-28s %4d %8.2f %8.2f %8.2f %8.2f" % (name, s["n"], s["min"], s["median"],
                                                          s["p95"], s["max"]))
    except Exception as e:  # noqa: BLE001 — any exception fails the suite, with its reason
        failures.append("%s: %s" % (type(e).__name__, e))
        print("FAIL %s" % e)
    finally:
        for r in roles:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.terminate()
            daemon.proc.wait()
        if failures:
            load_log.flush()
            print("daemon log tail:\n" + open(daemon.log.name).read()[-1500:])
            print("hostile_load.py errors:\n" + open(load_log.name).read()[-3000:])
        shutil.rmtree(root, ignore_errors=True)
    if args.json and report:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    checks = 8
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
