#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The idle exit's cost after a burst: two release daemons' builds side by side, each started as
systemd starts it (systemd-socket-activate, `idle-exit-seconds` set, so its idle exit waits), the
blocks alternated. Per start: one `status`, 7 s idle (the pool's threads of the start end), the
idle figures; a burst of CLIENTS connections x ROUNDS `status` (BurstMemoryTests' client); then the
threads each second and, 10 s after the burst, the figures again. Prints one JSON line a run and the
medians of (10 s after - idle) per side.

Usage (as root, release builds):
  /usr/bin/python3 bench/idle_exit.py --before DIR --after DIR [--blocks 5] [--clients 1000]
"""
import argparse
import json
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import common as B  # noqa: E402 (puts pam/tests on the path)
import lawire  # noqa: E402


def ask_status(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="idle-exit"))
    assert lawire.read_frame(s)[0] == lawire.WELCOME
    s.sendall(lawire.encode(lawire.MESSAGES["STATUS"]))
    t, fields = lawire.read_frame(s)
    s.close()
    return t == lawire.RESULT and fields.get("code") == 0


def burst(path, clients, rounds):
    """CLIENTS connections at once, each HELLO then ROUNDS STATUS; (answered, failures)."""
    status = lawire.encode(lawire.MESSAGES["STATUS"])
    conns = []
    for _ in range(clients):
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                break
            except BlockingIOError:
                s.close()
                time.sleep(0.001)
        s.settimeout(60)
        conns.append(s)
    for s in conns:
        s.sendall(lawire.encode(lawire.HELLO, version=1, peerName="burst"))
    for s in conns:
        assert lawire.read_frame(s)[0] == lawire.WELCOME
    left = {s: rounds for s in conns}
    poller = selectors.DefaultSelector()
    for s in conns:
        poller.register(s, selectors.EVENT_READ)
        s.sendall(status)
    answered = failures = 0
    while left:
        ready = [key.fileobj for key, _ in poller.select(60)]
        if not ready:
            break
        for s in ready:
            t, fields = lawire.read_frame(s)
            answered += 1
            if t != lawire.RESULT or fields.get("code") != 0:
                failures += 1
            left[s] -= 1
            if left[s]:
                s.sendall(status)
            else:
                del left[s]
                poller.unregister(s)
                s.close()
    return answered, failures


def pool_threads(pid):
    """Threads of libdispatch's global queues (the cooperative pool), not the overcommit ones."""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            name = open("/proc/%d/task/%s/comm" % (pid, t)).read().strip()
        except OSError:
            continue
        n += name.endswith("-qos") and "overcommit" not in name
    return n


def figures(pid):
    return {"rss_kb": B.rss_kb(pid), "anonymous_kb": B.rollup_kb(pid, "Anonymous"),
            "private_dirty_kb": B.rollup_kb(pid, "Private_Dirty"),
            "threads": len(os.listdir("/proc/%d/task" % pid)), "pool_threads": pool_threads(pid)}


def one_run(bin_dir, clients, rounds, idle_exit):
    tmp = tempfile.mkdtemp(prefix="la-idle-exit-")
    os.chmod(tmp, 0o755)
    sock, conf = os.path.join(tmp, "socket"), os.path.join(tmp, "localauthd.conf")
    with open(conf, "w") as f:
        f.write("idle-exit-seconds = %d\n" % idle_exit)
    log = open(os.path.join(tmp, "daemon.log"), "w")
    activator = subprocess.Popen(
        ["systemd-socket-activate", "-l", sock, os.path.join(bin_dir, "localauthd"), "--socket", sock,
         "--state-dir", os.path.join(tmp, "state"), "--virtual-reader", "--config", conf],
        stdout=log, stderr=log, env={"PATH": "/usr/bin:/bin"})
    try:
        B.wait_for("the socket", lambda: os.path.exists(sock), proc=activator)
        time.sleep(0.2)  # listening
        assert ask_status(sock)  # starts the daemon (systemd-socket-activate execs it: same pid)
        pid = activator.pid
        time.sleep(7)
        idle = figures(pid)
        load = os.getloadavg()[0]
        answered, failures = burst(sock, clients, rounds)
        right = figures(pid)
        pool = []
        for _ in range(10):
            time.sleep(1)
            pool.append(pool_threads(pid))
        later = figures(pid)
        return {"idle": idle, "right_after": right, "later": later, "pool_threads_each_second": pool,
                "answered": answered, "failures": failures, "load": round(load, 2)}
    finally:
        activator.terminate()
        activator.wait(timeout=30)
        subprocess.run(["rm", "-rf", tmp])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="bin directory of the build before")
    ap.add_argument("--after", required=True, help="bin directory of the build after")
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--idle-exit", type=int, default=120, help="idle-exit-seconds of the daemons")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, a.clients + 64)), hard))
    os.sync()
    sides = {"before": a.before, "after": a.after}
    runs = {"before": [], "after": []}
    for block in range(a.blocks):
        order = ["before", "after"] if block % 2 == 0 else ["after", "before"]
        for side in order:
            r = one_run(sides[side], a.clients, a.rounds, a.idle_exit)
            runs[side].append(r)
            d = {k: r["later"][k] - r["idle"][k] for k in ("rss_kb", "anonymous_kb", "private_dirty_kb")}
            print(json.dumps({"block": block + 1, "side": side, "over_idle_10s": d, **r}), flush=True)
    summary = {}
    for side, rs in runs.items():
        summary[side] = {k: statistics.median(r["later"][k] - r["idle"][k] for r in rs)
                         for k in ("rss_kb", "anonymous_kb", "private_dirty_kb")}
        summary[side]["idle_rss_kb"] = statistics.median(r["idle"]["rss_kb"] for r in rs)
        summary[side]["pool_threads_10s"] = [r["later"]["pool_threads"] for r in rs]
    lower = sum(1 for b, a_ in zip(runs["before"], runs["after"])
                if a_["later"]["rss_kb"] - a_["idle"]["rss_kb"] < b["later"]["rss_kb"] - b["idle"]["rss_kb"])
    summary["blocks_after_lower_rss"] = "%d of %d" % (lower, a.blocks)
    print(json.dumps({"medians_10s_over_idle": summary}), flush=True)


if __name__ == "__main__":
    main()
