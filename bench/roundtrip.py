#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Round trips through the socket, on one connection to a daemon this script starts with
--virtual-reader: CAN_EVALUATE (canEvaluatePolicy) to its RESULT, and EVALUATE (policy 1) with an
instant virtual scan queued beforehand to its RESULT. Prints min/median/p95/max.
Usage: bench/roundtrip.py BIN_DIR [EVALUATE_RUNS [CAN_EVALUATE_RUNS]]"""
import os, socket, statistics, struct, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pam", "tests"))
import lawire as w  # noqa: E402

bindir = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
can_runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
tmp = tempfile.mkdtemp(prefix="la-bench-")
sock_path = tmp + "/socket"
daemon = subprocess.Popen([bindir + "/localauthd", "--socket", sock_path, "--state-dir", tmp + "/state",
                           "--virtual-reader", "--linger-ms", "-1"], stderr=subprocess.DEVNULL,
                          env={"PATH": "/usr/bin:/bin"})
try:
    for _ in range(200):
        if os.path.exists(sock_path):
            break
        time.sleep(0.02)
    env = dict(os.environ, LOCALAUTHD_SOCKET=sock_path)
    enrol = subprocess.Popen([bindir + "/localauthctl", "enroll", "--user", "bench", "-q"], env=env)
    for _ in range(5):
        subprocess.run([bindir + "/localauthctl", "simulate", "touch", "bench-1", "-q"], env=env, check=True)
    assert enrol.wait() == 0, "enrolment failed"

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(w.encode(w.HELLO, version=1, peer="bench"))
    assert w.read_frame(s)[0] == w.WELCOME

    def field(tag, raw):
        return struct.pack(">HH", tag, len(raw)) + raw

    def request(frame):
        s.sendall(frame)
        while True:
            t, f = w.read_frame(s)
            if t == w.RESULT:
                return f

    body = struct.pack(">H", 0x0009) + field(25, b"touch") + field(26, b"bench-1")
    simulate = struct.pack(">I", len(body)) + body
    evaluate = w.encode(w.EVALUATE, policy=1, user="bench", service="bench", tries=1)
    def report(name, samples):
        samples.sort()
        p95 = samples[int(len(samples) * 0.95) - 1]
        print("%-40s n=%-5d min %.3f ms  median %.3f ms  p95 %.3f ms  max %.3f ms"
              % (name, len(samples), samples[0], statistics.median(samples), p95, samples[-1]))

    can_evaluate = w.encode(0x0003, policy=1, user="bench")
    samples = []
    for _ in range(can_runs):
        t0 = time.perf_counter()
        result = request(can_evaluate)
        samples.append((time.perf_counter() - t0) * 1000)
        assert result["code"] == 0, result
    report("canEvaluatePolicy (CAN_EVALUATE)", samples)

    samples = []
    for _ in range(runs):
        assert request(simulate)["code"] == 0
        t0 = time.perf_counter()
        result = request(evaluate)
        samples.append((time.perf_counter() - t0) * 1000)
        assert result["code"] == 0, result
    report("evaluatePolicy, matching finger (EVALUATE)", samples)
finally:
    daemon.terminate()
    daemon.wait()
