# SPDX-License-Identifier: Apache-2.0
"""pam_localauth.so under valgrind memcheck (docs/reliability.md, section 4).

pamtester under pam_wrapper, run by valgrind --leak-check=full, against the scripted daemon of
integration.py: every way an authentication can end (finger matches, does not match, passcode
right, wrong, cancelled, a failing conversation, no daemon, a daemon that sends garbage, dies or
stalls past the timeout, a locked-out reply), and at a terminal the module owns (a finger, a
typed password, Ctrl-C, Enter alone, a password too long, a miss under the prompt), where the
terminal's settings must also be as they were. Each run must report 0 errors and 0 bytes
definitely, indirectly or possibly lost. No suppression file is used: libpam, pam_wrapper and
pamtester free everything themselves, so nothing needs hiding (--supp adds one if a future
libpam needs it; it must then say why and never name the module).

Usage: memcheck.py --module SO [--supp FILE]
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



def scenarios(ctx):
    """(name, service, stdin answers, PAM code pamtester must report)."""
    def fake(steps, **script):
        return it.FakeDaemon(ctx, steps, **script).sock

    place = it.event(lawire.EV_PLACE, "Place your finger")
    passcode = [it.event(lawire.EV_PASSCODE_NEEDED, "Enter your passcode"),
                {"expect_passcode": "1234", "right": [it.result(0)["send"]],
                 "wrong": [it.event(lawire.EV_PASSCODE_WRONG, "Wrong passcode")["send"],
                           it.result(-1, "Wrong passcode")["send"]]},
                {"recv": True}]
    cancel = [it.event(lawire.EV_PASSCODE_NEEDED, "Enter your passcode"), {"recv": True},
              it.result(-2, "Cancelled")]
    return [
        ("finger matches", "socket=%s" % fake([place, it.result(0, "Authenticated")]), [], 0),
        ("finger does not match", "socket=%s" % fake([
            place, it.event(lawire.EV_NOMATCH, "Not recognised", triesLeft=0),
            it.result(-1, "Authentication failed")]), [], 11),
        ("passcode right", "socket=%s policy=owner" % fake(passcode), ["1234"], 0),
        ("passcode wrong", "socket=%s policy=owner" % fake(passcode), ["9999"], 7),
        ("passcode left empty", "socket=%s policy=owner" % fake(cancel), [""], 7),
        ("conversation fails", "socket=%s policy=owner" % fake(cancel), None, 19),
        ("no daemon", "socket=%s/nothing-here" % ctx.root, [], 9),
        ("garbage frame", "socket=%s" % fake([{"send": "deadbeefdeadbeef"}, {"sleep": 5}]),
         [], 9),
        ("daemon closes mid-frame", "socket=%s" % fake([{"send": "0000002080"},
                                                         {"close": True}]), [], 9),
        ("daemon stalls past timeout=1", "socket=%s timeout=1" % fake([{"sleep": 5}]), [], 9),
        ("lockout message", "socket=%s debug" % fake([
            it.event(lawire.EV_LOCKED, "Fingerprint locked"),
            it.result(-8, "Biometry is locked out")]), [], 9),
    ]


def terminal_scenarios(ctx):
    """(name, service, actions, signals blocked, PAM code): pamtester at a terminal of its own
    (integration.py's at_terminal), the module owning it."""
    def fake(*steps):
        return it.FakeDaemon(ctx, it.place_then(*steps)).sock

    prompt = it.TERM_PROMPT
    yes = it.result(0, "Authenticated")
    return [
        ("terminal: a finger", "socket=%s" % fake({"sleep": 0.5}, yes),
         [("wait", prompt)], (), 0),
        ("terminal: a typed password", "socket=%s" % fake({"sleep": 10}, yes),
         [("wait", prompt), ("send", "typed secret\n")], (), 9),
        ("terminal: Ctrl-C the caller blocks", "socket=%s" % fake({"sleep": 10}, yes),
         [("wait", prompt), ("send", "\x03")], {signal.SIGINT, signal.SIGQUIT}, 9),
        ("terminal: Enter alone, a finger", "socket=%s" % fake({"sleep": 1.5}, yes),
         [("wait", prompt), ("send", "\n")], (), 0),
        ("terminal: too long, a finger", "socket=%s" % fake({"sleep": 1.5}, yes),
         [("wait", prompt), ("send", "x" * 600 + "\n")], (), 0),
        ("terminal: a miss under the prompt", "socket=%s" % fake(
            it.event(lawire.EV_NOMATCH, "Not recognised (2 tries left)", triesLeft=2),
            {"sleep": 0.5}, yes), [("wait", "tries left")], (), 0),
    ]


def valgrind(log, supp):
    return ["valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=all",
            "--errors-for-leak-kinds=definite,indirect,possible", "--error-exitcode=99",
            "--log-file=%s" % log] + (["--suppressions=%s" % supp] if supp else [])


def verdict_problems(report, code, want, returncode):
    errors = re.search(r"ERROR SUMMARY: (\d+) errors", report)
    lost = {kind: int(n.replace(",", "")) for kind, n in re.findall(
        r"(definitely|indirectly|possibly) lost: ([\d,]+) bytes", report)}
    problems = []
    if errors is None or int(errors.group(1)) != 0:
        problems.append("errors: %s" % (errors.group(1) if errors else "no summary"))
    if any(lost.values()):
        problems.append("lost: %s" % lost)
    if code != want:
        problems.append("PAM code %s, expected %d" % (code, want))
    if returncode == 99:
        problems.append("valgrind reported errors")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--supp", default=None)
    args = ap.parse_args()
    it.ARGS = argparse.Namespace(module=os.path.abspath(args.module), asan=False,
                                 driver="pamtester", bin="", k="")
    if os.getuid() != 0:
        print("run as root: the module believes only a daemon run by root")
        return 1
    strerror = it.pam_strerrors()
    it.ARGS.strerror = strerror
    ctx = it.Ctx()
    passed, failures = 0, []
    try:
        for i, (name, module_args, answers, want) in enumerate(scenarios(ctx)):
            service = ctx.service(module_args, "mc-%d" % i)
            log = ctx.path("valgrind-%d.log" % i)
            env = dict(os.environ, PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=ctx.services,
                       LD_PRELOAD="libpam_wrapper.so")
            for k in ("PAM_RHOST", "PAM_TTY"):
                env.pop(k, None)
            cmd = valgrind(log, args.supp) + ["pamtester", "-v", service, "nobody",
                                              "authenticate"]
            # None: stdin closed at once, so the conversation's read fails.
            private, env = privtmp.wrap(env, ctx.root)  # pam_wrapper's /tmp/pam.X (privtmp.py)
            p = subprocess.run(private + cmd, env=env, capture_output=True, text=True, timeout=120,
                               input=None if answers is None else
                               "".join(a + "\n" for a in answers),
                               stdin=subprocess.DEVNULL if answers is None else None)
            report = open(log).read()
            verdict = [ln[len("pamtester: "):] for ln in (p.stdout + "\n" + p.stderr).replace("Passcode: ", "").splitlines()
                       if ln.startswith("pamtester: ")]
            code = 0 if "successfully authenticated" in verdict else next(
                (strerror[v] for v in verdict if v in strerror), None)
            problems = verdict_problems(report, code, want, p.returncode)
            suppressed = re.search(r"suppressed: ([\d,]+) bytes in ([\d,]+) blocks", report)
            if problems:
                failures.append("%s: %s\n%s%s%s" % (name, "; ".join(problems), p.stdout, p.stderr,
                                                     report[-3000:]))
                print("FAIL %s: %s" % (name, "; ".join(problems)))
            else:
                passed += 1
                print("ok   %-30s 0 errors, 0 bytes lost (suppressed: %s bytes in %s blocks)" % (
                    name, *(suppressed.groups() if suppressed else ("0", "0"))))
            sys.stdout.flush()
        for i, (name, module_args, actions, blocked, want) in enumerate(
                terminal_scenarios(ctx)):
            service = ctx.service(module_args, "mc-term-%d" % i)
            log = ctx.path("valgrind-term-%d.log" % i)
            res = ctx.at_terminal(service, "nobody", actions, blocked=blocked,
                                  wrap=valgrind(log, args.supp), timeout=60)
            report = open(log).read()
            problems = verdict_problems(report, res["code"], want, res["rc"])
            if not res["kept"]:
                problems.append("the terminal's settings changed")
            if problems:
                failures.append("%s: %s\n%s%s" % (name, "; ".join(problems), res["out"],
                                                   report[-3000:]))
                print("FAIL %s: %s" % (name, "; ".join(problems)))
            else:
                passed += 1
                print("ok   %-30s 0 errors, 0 bytes lost, terminal as it was" % name)
            sys.stdout.flush()
    finally:
        ctx.close()
    for f in failures:
        print(f)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
