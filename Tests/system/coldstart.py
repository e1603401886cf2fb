#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Cold start under socket activation: systemd-socket-activate holds the socket, the first
`localauthctl devices` starts localauthd (virtual reader) and waits for the answer. Prints the
median of N runs, and the same request against the warm daemon (the client's own cost)."""
import os, statistics, subprocess, sys, tempfile, time

bindir = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
cold, warm = [], []
for _ in range(runs):
    d = tempfile.mkdtemp(prefix="la-cold-")
    sock = d + "/socket"
    act = subprocess.Popen(["systemd-socket-activate", "-l", sock, bindir + "/localauthd", "--socket", sock,
                            "--state-dir", d + "/state", "--virtual-reader"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(sock):
        time.sleep(0.001)
    env = {"LOCALAUTHD_SOCKET": sock}
    for sample in (cold, warm):
        t = time.monotonic()
        subprocess.run([bindir + "/localauthctl", "devices"], env=env, check=True, stdout=subprocess.DEVNULL)
        sample.append((time.monotonic() - t) * 1000)
    act.terminate(); act.wait()
    subprocess.run(["rm", "-rf", d])
print(f"cold start (first request to answer), median of {runs}: {statistics.median(cold):.1f} ms "
      f"(min {min(cold):.1f}, max {max(cold):.1f}); same request warm: {statistics.median(warm):.1f} ms")
