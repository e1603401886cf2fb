#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What one pam_fprintd authentication costs through the fprintd D-Bus door (issue 29): figure 10 of
bench.py (pam_fprintd.so through bench_client, a matching finger) against one or two release
daemons behind the door and Debian's fprintd, each on a private bus with the real polkitd, blocks
alternating; then, untimed, the same runs with dbus-monitor (real-time priority) on each bus: every
message of one authentication with its time, each method's latency as the client sees it, and the
time between messages by who was working (the client, the bus daemon, polkitd, logind, the
fprintd server).

Usage: /usr/bin/python3 bench/door_cost.py --after DIR [--before DIR] [--runs 200] [--blocks 10]
       [--monitored 20] [--socket] [--priority] [--json FILE]
(as root; DIR holds a release localauthd; with --socket also localauthctl: figure 1's pam_localauth.so
through the socket of --after's daemon runs in the same blocks, for its prompt -> result). --priority runs every process of the three stacks at
nice -20 in autogroups of nice -20, so that other work on a shared machine takes less from them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench  # noqa: E402
import common  # noqa: E402
import stacks  # noqa: E402

# Who sends a message, by the unique or well-known name in the monitor's log.
METHODS = ("GetDevices", "ListEnrolledFingers", "Claim", "Get", "VerifyStart")


class Door(stacks.OursOverDBus):
    def __init__(self, b, tmp, name, bin_dir):
        super().__init__(b, tmp)
        self.name = name
        self.bin_dir = bin_dir

    def start(self):
        # OursOverDBus starts bench.args.bin's localauthd: this side's own.
        saved = self.bench.args.bin
        self.bench.args.bin = self.bin_dir
        try:
            super().start()
        finally:
            self.bench.args.bin = saved


def prioritise(pids):
    """nice -20, and the autogroup of each (its session) at nice -20: every stack's process is
    the leader of a session of its own (common.Processes), so the autogroup is its alone."""
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, -20)
            for task in os.listdir("/proc/%d/task" % pid):
                os.setpriority(os.PRIO_PROCESS, int(task), -20)
            with open("/proc/%d/autogroup" % pid, "w") as f:
                f.write("-20")
        except OSError:
            pass


def stack_pids(side):
    pids = [p.pid for p in side.bench.procs.procs]
    if getattr(side, "pid", None):
        pids.append(side.pid)
    return pids


TICK = os.sysconf("SC_CLK_TCK")
CPU = {}  # side name -> {process: seconds of CPU}, and "runs"


def processes(side):
    """The processes of a stack whose CPU time is counted: the server, the bus daemon, polkitd and
    (ours) python-dbusmock's logind."""
    named = {"server": getattr(side, "pid", None), "dbus-daemon": getattr(getattr(side, "dbus", None), "pid", None),
             "polkitd": getattr(getattr(side, "polkitd", None), "pid", None),
             "logind": getattr(getattr(getattr(side, "logind", None), "process", None), "pid", None)}
    return {k: v for k, v in named.items() if v}


def cpu_seconds(pid, descendants=False):
    """utime + stime of the process, and with `descendants` of its living descendants too
    (logind_mock.py runs dbusmock as a child; fprintd is the bus daemon's, counted apart)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    total = (int(fields[11]) + int(fields[12])) / TICK
    if not descendants:
        return total
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        tasks = []
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        total += sum(cpu_seconds(child, True) for child in children)
    return total


def runs(side, n):
    before = {k: cpu_seconds(p, k == "logind") for k, p in processes(side).items()}
    children = os.times()
    rows = side.client(n + 1, [(side.match, common.PRINT_ID)])[1:]
    after = os.times()
    used = CPU.setdefault(side.name, {"runs": 0})
    used["runs"] += n + 1
    used["client"] = used.get("client", 0) + (after.children_user + after.children_system
                                              - children.children_user - children.children_system)
    for k, p in processes(side).items():
        used[k] = used.get(k, 0) + cpu_seconds(p, k == "logind") - before[k]
    if any(r["rc"] != common.PAM_SUCCESS for r in rows):
        sys.exit("%s: a pam_fprintd run failed: %s" % (side.name, rows[0]))
    return rows


def monitored(side, n, path):
    """n runs with dbus-monitor --profile on the side's bus at real-time priority (it is woken at
    each message, so its timestamp is when the bus daemon routed it, within a few microseconds)."""
    with open(path, "w") as log:
        monitor = subprocess.Popen(["chrt", "-f", "90", "dbus-monitor", "--address", side.address, "--profile"],
                                   stdout=log, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            rows = runs(side, n)
        finally:
            time.sleep(0.3)
            monitor.terminate()
            monitor.wait()
    return rows, parse(path)


def parse(path):
    """The monitor's messages, one authentication per client connection (Hello to NameLost)."""
    messages = []
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) < 6:
            continue
        kind, t, serial, sender, dest = f[0], float(f[1]), f[2], f[3], f[4]
        member = f[7] if len(f) > 7 else ""
        reply_to = f[5] if kind in ("mr", "err") else None
        messages.append({"kind": kind, "t": t, "serial": serial, "sender": sender, "dest": dest,
                         "member": member, "reply_to": reply_to})
    # The client connections: those that call Hello and then VerifyStart.
    runs_ = []
    for i, m in enumerate(messages):
        if m["kind"] == "mc" and m["member"] == "Hello":
            client = None
            for j in range(i + 1, len(messages)):
                if messages[j]["kind"] == "mr" and messages[j]["reply_to"] == m["serial"] \
                        and messages[j]["sender"] == "org.freedesktop.DBus":
                    client = messages[j]["dest"]
                    break
            if client is None:
                continue
            end = next((j for j in range(i + 1, len(messages)) if messages[j]["member"] == "NameLost"
                        and messages[j]["dest"] == client), None)
            if end is None:
                continue
            window = messages[i:end + 1]
            if any(x["member"] == "VerifyStart" and x["sender"] == client for x in window):
                runs_.append((client, window))
    return runs_


def analyse(client, window):
    """Each method's latency (the client's call to its reply, as routed), the prompt and result, and
    the time between consecutive messages by who sent the later one."""
    calls = {}
    out = {"latency_us": {}, "by_sender_us": {}}
    t0 = window[0]["t"]
    names = {}
    for m in window:
        if m["kind"] == "mc":
            calls[(m["sender"], m["serial"])] = m
    prompt = next((m["t"] for m in window if m["member"] == "VerifyFingerSelected"), None)
    result = next((m["t"] for m in window if m["member"] == "VerifyStatus"), None)
    for m in window:
        if m["kind"] in ("mr", "err") and m["dest"] == client:
            call = calls.get((client, m["reply_to"]))
            if call and call["member"] in METHODS:
                out["latency_us"][call["member"]] = (m["t"] - call["t"]) * 1e6
    # Who the senders are: the client, the bus daemon, and the rest by what they answer.
    for m in window:
        if m["kind"] == "mc" and m["member"] == "CheckAuthorization":
            names[m["sender"]] = "server"
        if m["kind"] == "mc" and m["member"] == "GetConnectionUnixUser" and m["sender"] not in names:
            names.setdefault(m["sender"], "polkitd")
    for m in window:
        if m["kind"] == "mr" and calls.get((m["dest"], m["reply_to"]), {}).get("member") == "CheckAuthorization":
            names[m["sender"]] = "polkitd"
        if m["kind"] == "mc" and m["dest"] == "org.freedesktop.login1":
            names.setdefault(m["sender"], "server")
        if m["kind"] == "mr" and calls.get((m["dest"], m["reply_to"]), {}).get("dest") == "org.freedesktop.login1":
            names[m["sender"]] = "logind"
    names[client] = "client"
    names["org.freedesktop.DBus"] = "dbus-daemon"
    for phase, (a, b) in (("start_to_prompt", (t0, prompt)), ("prompt_to_result", (prompt, result))):
        by = {}
        if a is None or b is None:
            continue
        previous = a
        for m in window:
            if m["t"] <= a or m["t"] > b:
                continue
            who = names.get(m["sender"], "server" if m["sender"] not in names else m["sender"])
            if m["kind"] == "sig" and m["member"] in ("MethodCalled",):
                who = "logind"
            by[who] = by.get(who, 0) + (m["t"] - previous) * 1e6
            previous = m["t"]
        out["by_sender_us"][phase] = by
    # Each Device method of the client, in steps: the server's work before it asks polkit (for ours
    # the first call's lookup of the sender too; fprintd asks GetConnectionUnixUser), polkit's round
    # trip, and what follows until the reply (for VerifyStart: to logind's questions, their round
    # trip, and from logind's last answer to the reply).
    steps = out["steps_us"] = {}
    for m in window:
        if m["kind"] != "mc" or m["sender"] != client or m["member"] not in ("ListEnrolledFingers", "Claim",
                                                                             "VerifyStart"):
            continue
        reply = next((x for x in window if x["kind"] in ("mr", "err") and x["dest"] == client
                      and x["reply_to"] == m["serial"]), None)
        if reply is None:
            continue
        inside = [x for x in window if m["t"] <= x["t"] <= reply["t"]]
        check = next((x for x in inside if x["kind"] == "mc" and x["member"] == "CheckAuthorization"), None)
        if check is None:
            continue
        answer = next((x for x in inside if x["kind"] in ("mr", "err") and x["dest"] == check["sender"]
                       and x["reply_to"] == check["serial"]), None)
        if answer is None:
            continue
        step = {"before_polkit": check["t"] - m["t"], "polkit": answer["t"] - check["t"]}
        questions = [x for x in inside if x["kind"] == "mc" and x["dest"] == "org.freedesktop.login1"]
        if questions:
            asked = {(x["sender"], x["serial"]) for x in questions}
            answers = [x for x in inside if x["kind"] in ("mr", "err") and (x["dest"], x["reply_to"]) in asked]
            last = max(x["t"] for x in answers) if answers else questions[-1]["t"]
            step.update({"to_logind": questions[0]["t"] - answer["t"], "logind": last - questions[0]["t"],
                         "after_logind": reply["t"] - last})
        else:
            step["after_polkit"] = reply["t"] - answer["t"]
        steps[m["member"]] = {k: v * 1e6 for k, v in step.items()}
    out["hello_to_prompt_us"] = (prompt - t0) * 1e6 if prompt else None
    out["prompt_to_result_us"] = (result - prompt) * 1e6 if prompt and result else None
    out["messages"] = [("%.0f" % ((m["t"] - t0) * 1e6), m["kind"], names.get(m["sender"], m["sender"]),
                        names.get(m["dest"], m["dest"]), m["member"] or ("reply " + (m["reply_to"] or "")))
                       for m in window]
    return out


def median_of(dicts, key):
    values = [d[key] for d in dicts if d.get(key) is not None]
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--after", required=True)
    ap.add_argument("--before", default=None)
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests", "bench_client"))
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--monitored", type=int, default=20)
    ap.add_argument("--socket", action="store_true")
    ap.add_argument("--priority", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep-monitor", default=None, help="a directory to keep the monitors' logs in")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.after)
    b = bench.Bench.__new__(bench.Bench)
    b.args = args
    b.procs = common.Processes()
    b.tmp = tempfile.mkdtemp(prefix="la-door-cost-")
    os.chmod(b.tmp, 0o755)
    b.multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                                 text=True).stdout.strip() or "x86_64-linux-gnu"
    sides = []
    if args.before:
        sides.append(Door(b, os.path.join(b.tmp, "before"), "before", os.path.abspath(args.before)))
    sides.append(Door(b, os.path.join(b.tmp, "after"), "after", os.path.abspath(args.after)))
    theirs = stacks.Theirs(b, os.path.join(b.tmp, "fprintd"))
    sides.append(theirs)
    if args.socket:
        socket_side = stacks.Ours(b, os.path.join(b.tmp, "socket"))
        socket_side.name = "socket"
        sides.append(socket_side)
    results = {"load_before": os.getloadavg(), "priority": args.priority}
    try:
        for side in sides:
            side.start()
            side.enrol()
        if args.priority:
            prioritise(stack_pids(theirs) + [os.getpid()])
            # fprintd was started by D-Bus activation, in dbus-daemon's session.
            prioritise([theirs.pid] + [s.pid for s in sides if getattr(s, "pid", None)])
        per_block = args.runs // args.blocks
        rows = common.interleaved(sides, args.blocks, lambda s: runs(s, per_block))
        results["load_after_timing"] = os.getloadavg()
        for name, used in CPU.items():
            results.setdefault(name, {})["cpu_ms_per_run"] = {
                k: 1000 * v / used["runs"] for k, v in used.items() if k != "runs"}
        for side in sides:
            r = sum(rows[side.name], [])
            for key in ("total_ns", "prompt_ns", "result_ns", "eof_ns"):
                results.setdefault(side.name, {})[key] = common.stats([x[key] for x in r])
        if args.before:
            for key in ("total_ns", "prompt_ns", "result_ns"):
                pairs = [statistics.median(x[key] for x in a) - statistics.median(x[key] for x in b_)
                         for a, b_ in zip(rows["after"], rows["before"])]
                results.setdefault("paired_block_difference_ms", {})[key] = {
                    "median": statistics.median(pairs) / 1e6, "blocks": len(pairs),
                    "after_faster_in": sum(1 for d in pairs if d < 0)}
        for side in sides:
            if not isinstance(side, stacks.Theirs):
                continue
            log_path = os.path.join(args.keep_monitor or b.tmp, side.name + ".monitor")
            _, parsed = monitored(side, args.monitored, log_path)
            analysed = [analyse(c, w) for c, w in parsed]
            entry = results[side.name]["monitored"] = {"runs": len(analysed)}
            for method in METHODS:
                entry.setdefault("latency_us", {})[method] = median_of([a["latency_us"] for a in analysed], method)
            for phase in ("start_to_prompt", "prompt_to_result"):
                whos = sorted({w for a in analysed for w in a["by_sender_us"].get(phase, {})})
                entry.setdefault("by_sender_us", {})[phase] = {
                    w: statistics.median(a["by_sender_us"].get(phase, {}).get(w, 0) for a in analysed) for w in whos}
            for method in ("ListEnrolledFingers", "Claim", "VerifyStart"):
                keys = sorted({k for a in analysed for k in a["steps_us"].get(method, {})})
                entry.setdefault("steps_us", {})[method] = {
                    k: median_of([a["steps_us"].get(method, {}) for a in analysed], k) for k in keys}
            entry["hello_to_prompt_us"] = median_of(analysed, "hello_to_prompt_us")
            entry["prompt_to_result_us"] = median_of(analysed, "prompt_to_result_us")
            if analysed:
                by_total = sorted(analysed, key=lambda a: (a["hello_to_prompt_us"] or 0) + (a["prompt_to_result_us"] or 0))
                entry["one_run"] = by_total[len(by_total) // 2]["messages"]
    finally:
        b.procs.stop_all()
        subprocess.run(["rm", "-rf", b.tmp])
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
