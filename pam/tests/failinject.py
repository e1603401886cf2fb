# SPDX-License-Identifier: Apache-2.0
"""pam_localauth.so under injected failures (docs/reliability.md, section 4).

pamtester under pam_wrapper with libfailinject.so (pam/tests/failinject.c) preloaded, against
the scripted daemon of integration.py. For each scenario the calls of each kind made during
pam_authenticate are counted once, then the run is repeated with the 1st, 2nd, ... Nth call of
that kind failing (allocation, poll, read/recv, write/send, socket/connect; with the kind's hard
errno, and with EINTR for poll, read and write). Every run must end without a crash or a
sanitizer-free abort, and must not return PAM_SUCCESS unless the daemon really said yes. The same at a terminal the module
owns (a finger, a typed password, Ctrl-C), with one more kind, term (opening the terminal, its
settings, the signal mask and signalfd), and there the terminal's settings must be as they were
unless a terminal call itself failed.

Usage: failinject.py --module SO --shim LIBFAILINJECT [--max-n N]
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import integration as it  # noqa: E402
import lawire  # noqa: E402
import privtmp  # noqa: E402
import testargs  # noqa: E402

KINDS = ("alloc", "poll", "read", "write", "socket")
TERM_KINDS = KINDS + ("term",)
EINTR = 4
LINE = re.compile(r"failinject: rc=(-?\d+) injected=(\d) alloc=(\d+) poll=(\d+) read=(\d+) "
                  r"write=(\d+) socket=(\d+) term=(\d+)")


def scenarios(ctx):
    """(name, service, answers, the PAM code without injection)."""
    yes = it.FakeDaemon(ctx, [it.event(lawire.EV_PLACE, "Place your finger"),
                              it.event(lawire.EV_RETRY, "Try again", hint=1),
                              it.result(0, "Authenticated")])
    no = it.FakeDaemon(ctx, [it.event(lawire.EV_PLACE, "Place your finger"),
                             it.event(lawire.EV_NOMATCH, "Not recognised", triesLeft=0),
                             it.result(-1, "Authentication failed")])
    passcode = it.FakeDaemon(ctx, [
        it.event(lawire.EV_PASSCODE_NEEDED, "Enter your passcode"),
        {"expect_passcode": "1234", "right": [it.result(0)["send"]],
         "wrong": [it.event(lawire.EV_PASSCODE_WRONG, "Wrong passcode")["send"],
                   it.result(-1, "Wrong passcode")["send"]]},
        {"recv": True}])
    return [
        ("finger matches", ctx.service("socket=%s" % yes.sock, "fi-yes"), [], 0),
        ("finger does not match", ctx.service("socket=%s" % no.sock, "fi-no"), [], 11),
        ("right passcode", ctx.service("socket=%s policy=owner" % passcode.sock, "fi-pass"),
         ["1234"], 0),
        ("wrong passcode", ctx.service("socket=%s policy=owner" % passcode.sock, "fi-pass"),
         ["9999"], 7),
    ]


def terminal_scenarios(ctx):
    """(name, service, actions, signals blocked, the PAM code without injection): at a
    terminal the module owns (integration.py's at_terminal). The daemon says no in the end,
    unless the scenario is a finger that matches."""
    def fake(*steps):
        return it.FakeDaemon(ctx, it.place_then(*steps)).sock

    prompt = it.TERM_PROMPT
    no = [{"sleep": 1}, it.result(-1, "Authentication failed")]
    return [
        ("terminal: finger", ctx.service("socket=%s" % fake({"sleep": 0.2}, it.result(0)),
                                         "fi-t-yes"), [("maybe", prompt)], (), 0),
        ("terminal: typed", ctx.service("socket=%s" % fake(*no), "fi-t-typed"),
         [("maybe", prompt), ("send", "secret\n")], (), 9),
        ("terminal: Ctrl-C", ctx.service("socket=%s" % fake(*no), "fi-t-int"),
         [("maybe", prompt), ("send", "\x03")], {signal.SIGINT, signal.SIGQUIT}, 9),
    ]


def run_at_terminal(ctx, args, service, actions, blocked, kind=None, n=0, errno=None):
    env = {}
    if kind:
        env.update(FAILINJECT_KIND=kind, FAILINJECT_N=str(n))
    if errno is not None:
        env["FAILINJECT_ERRNO"] = str(errno)
    res = ctx.at_terminal(service, "nobody", actions, blocked=blocked, env=env,
                          preload=args.shim)
    return res, LINE.search(res["out"])


def run(ctx, args, service, answers, kind=None, n=0, errno=None):
    env = dict(os.environ, PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=ctx.services,
               LD_PRELOAD="%s libpam_wrapper.so" % args.shim)
    for k in ("PAM_RHOST", "PAM_TTY", "FAILINJECT_KIND", "FAILINJECT_N", "FAILINJECT_ERRNO"):
        env.pop(k, None)
    if kind:
        env.update(FAILINJECT_KIND=kind, FAILINJECT_N=str(n))
    if errno is not None:
        env["FAILINJECT_ERRNO"] = str(errno)
    private, env = privtmp.wrap(env, ctx.root)  # pam_wrapper's /tmp/pam.X (privtmp.py)
    p = subprocess.run(private + ["pamtester", "-v", service, "nobody", "authenticate"], env=env,
                       input="".join(a + "\n" for a in answers), capture_output=True, text=True,
                       timeout=60)
    m = LINE.search(p.stderr)
    return p, m


def main():
    ap = testargs.module_arguments("--shim")
    ap.add_argument("--max-n", type=int, default=400)
    args = ap.parse_args()
    it.ARGS = argparse.Namespace(module=os.path.abspath(args.module), asan=False,
                                 driver="pamtester", bin="", k="", strerror=it.pam_strerrors())
    args.shim = os.path.abspath(args.shim)
    if os.getuid() != 0:
        print("run as root: the module believes only a daemon run by root")
        return 1
    ctx = it.Ctx()
    failures, runs, injected_runs = [], 0, 0
    outcomes = {}
    try:
        for name, service, answers, plain in scenarios(ctx):
            says_yes = plain == 0
            p, m = run(ctx, args, service, answers)
            if m is None or int(m.group(1)) != plain:
                failures.append("%s without injection: %s" % (name, p.stderr.strip()))
                continue
            counts = dict(zip(KINDS, (int(m.group(i)) for i in range(3, 8))))
            print("%-22s calls during pam_authenticate: %s" % (
                name, ", ".join("%s %d" % kv for kv in counts.items())))
            for kind in KINDS:
                modes = [None, EINTR] if kind in ("poll", "read", "write") else [None]
                for errno in modes:
                    for n in range(1, min(counts[kind], args.max_n) + 1):
                        p, m = run(ctx, args, service, answers, kind, n, errno)
                        runs += 1
                        what = "%s: %s call %d failing%s" % (
                            name, kind, n, " with EINTR" if errno else "")
                        if p.returncode < 0 or m is None:
                            failures.append("%s: crashed or never returned (exit %d) %s" % (
                                what, p.returncode, p.stderr[-300:]))
                            continue
                        rc = int(m.group(1))
                        injected_runs += int(m.group(2))
                        outcomes.setdefault(kind, {}).setdefault(rc, 0)
                        outcomes[kind][rc] += 1
                        if rc == 0 and not says_yes:
                            failures.append("%s: PAM_SUCCESS though the daemon said no" % what)
        for name, service, actions, blocked, plain in terminal_scenarios(ctx):
            res, m = run_at_terminal(ctx, args, service, actions, blocked)
            if m is None or int(m.group(1)) != plain or not res["kept"]:
                failures.append("%s without injection: %s" % (name, res["out"][-600:]))
                continue
            counts = dict(zip(TERM_KINDS, (int(m.group(i)) for i in range(3, 9))))
            print("%-22s calls during pam_authenticate: %s" % (
                name, ", ".join("%s %d" % kv for kv in counts.items())))
            for kind in TERM_KINDS:
                for n in range(1, min(counts[kind], args.max_n) + 1):
                    res, m = run_at_terminal(ctx, args, service, actions, blocked, kind, n)
                    runs += 1
                    what = "%s: %s call %d failing" % (name, kind, n)
                    if res["rc"] < 0 or m is None:
                        failures.append("%s: crashed or never returned (exit %d) %s" % (
                            what, res["rc"], res["out"][-300:]))
                        continue
                    rc = int(m.group(1))
                    injected_runs += int(m.group(2))
                    outcomes.setdefault(kind, {}).setdefault(rc, 0)
                    outcomes[kind][rc] += 1
                    if rc == 0 and plain != 0:
                        failures.append("%s: PAM_SUCCESS though the daemon said no" % what)
                    # A failing tcsetattr may leave echo off; nothing else may.
                    if kind != "term" and not res["kept"]:
                        failures.append("%s: the terminal's settings changed" % what)
    finally:
        ctx.close()
    print("%d runs with one call failing (%d injected); PAM codes by kind: %s" % (
        runs, injected_runs, {k: dict(sorted(v.items())) for k, v in outcomes.items()}))
    for f in failures:
        print("FAIL " + f)
    print("%d passed, %d failed" % (runs - len(failures), len(failures)))
    return 1 if failures or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
