# SPDX-License-Identifier: Apache-2.0
"""Every PAM line the project documents, through the real libpam (issue 14).

The lines are read from the documents themselves, so that a new or changed line is tested
without anyone remembering to: the fenced code blocks and `auth …` code spans naming
pam_localauth.so in README.md, pam/README.md, pam/examples/README.md and docs/*.md, the
.nf blocks of pam_localauth(8)'s EXAMPLES, every stack in pam/examples/, and the pam-configs
profile, enabled by the real pam-auth-update. Each is installed as written (the module named
without a path, no socket= added) as a service in the sandbox's /etc/pam.d (sandbox.py: a
private mount namespace; the daemon on its default socket; accounts with known passwords). A
snippet that has no password line of its own gets `@include common-auth`, and common-auth is
Debian 12's stock file (pam_unix without try_first_pass), the stand-in for the machine's.

Checks for every stack, the PAM client running as the account itself (as a screen locker
does; pam_rootok then steps aside):
  finger     lapamalice (finger enrolled) touches the reader when asked (Enter alone first if
             the module asks for a password first): PAM_SUCCESS.
  password   lapambob (nothing enrolled) gives the right password: PAM_SUCCESS, asked once,
             unless the module is required (fingerprint only: the stack refuses).
  wrong      lapambob gives a wrong password: refused.
  refused    lapamalice's fingers are all refused, then the password: PAM_SUCCESS, unless the
             line ends the stack on a refusal (default=die) or the module is required.
  terminal   pamtester at a terminal as lapamalice types the password at the module's prompt:
             authenticated, and no second password prompt (pam_unix try_first_pass).
And no documented line outside the pam-configs profile uses `end`, which is a pam-auth-update
word, not a PAM action.

Usage: stacks_test.py --module SO --bin DIR [-k TEXT]   (as root)
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptyterm  # noqa: E402
import sandbox  # noqa: E402
from sandbox import check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PYTHON = "/usr/bin/python3"
ALICE, ALICE_PW = "lapamalice", "Alice-pass 4711"
BOB, BOB_PW = "lapambob", "Bob-pass 0815"
PAM_SUCCESS = 0


def code_blocks(markdown):
    """(fenced code blocks, the text outside them) of a Markdown text."""
    blocks, outside, block = [], [], None
    for line in markdown.splitlines():
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                blocks.append(block)
                block = None
        elif block is not None:
            block.append(line)
        else:
            outside.append(line)
    return blocks, "\n".join(outside)


PAM_LINE = re.compile(r"\bauth\s+(\[[^\]]*\]|\S+)\s+(\S*pam_\w+\.so)([^'\"]*)")


def pam_line(text):
    """The PAM line in text ("auth ...", or inside echo '...'), its module named as the
    documents tell a person to name it; None when there is none."""
    m = PAM_LINE.search(text)
    if m is None:
        return None
    module = m.group(2)
    if module.endswith("/pam_localauth.so"):
        module = "pam_localauth.so"  # "/lib/$(gcc -print-multiarch)/security/…" in a shell line
    return ("auth %s %s%s" % (m.group(1), module, m.group(3).rstrip(" \\"))).strip()


def man_examples(path):
    """The .nf blocks of the EXAMPLES section, continuation lines kept as written."""
    text = open(path).read()
    section = text[text.index(".SH EXAMPLES"):]
    section = section[:section.index("\n.SH ", 1)]
    stacks = []
    for block in re.findall(r"\n\.nf\n(.*?)\n\.fi", section, re.S):
        lines = block.replace("\\e", "\\").replace("\\-", "-").splitlines()
        stacks.append([l for l in lines if l.strip()])
    return stacks


def documented_stacks():
    """[(where, [lines], complete)]: complete stacks are installed as they are."""
    stacks = []
    for path in ["README.md", "pam/README.md", "pam/examples/README.md"] + sorted(
            os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md"))):
        blocks, outside = code_blocks(open(os.path.join(REPO, path)).read())
        for i, block in enumerate(blocks):
            lines = []
            for l in block:  # a shell block may show one line twice (two ways to install it)
                if pam_line(l) and pam_line(l) not in lines:
                    lines.append(pam_line(l))
            if any("pam_localauth.so" in l for l in lines):
                stacks.append(("%s, code block %d" % (path, i + 1), lines, False))
        for span in re.findall(r"`([^`\n]+)`", outside):
            if span.startswith("auth") and "pam_localauth.so" in span:
                stacks.append(("%s: `%s`" % (path, span), [span], False))
    for i, lines in enumerate(man_examples(os.path.join(REPO, "pam", "pam_localauth.8"))):
        stacks.append(("pam_localauth(8) EXAMPLES %d" % (i + 1), lines, False))
    for path in sorted(glob.glob(os.path.join(REPO, "pam", "examples", "*"))):
        if not path.endswith(".md"):
            stacks.append(("pam/examples/" + os.path.basename(path),
                           open(path).read().splitlines(), True))
    return stacks


def module_line(lines):
    """The module's line (continuations joined) and its control ("required", "[...]")."""
    joined = "\n".join(lines).replace("\\\n", " ")
    for line in joined.splitlines():
        m = re.match(r"\s*auth\s+(\[[^\]]*\]|\S+)\s+\S*pam_localauth\.so", line)
        if m:
            return line, m.group(1)
    raise AssertionError("no pam_localauth line in %s" % lines)


def fingerprint_only(control):
    return control in ("required", "requisite")


def service_text(lines, complete):
    """The stack as written. A snippet that leaves the password to what follows gets the
    stand-in common-auth; a fingerprint-only line (required) is a stack by itself."""
    text = "\n".join(lines) + "\n"
    _, control = module_line(lines)
    if not complete and not fingerprint_only(control) and not any(
            "pam_unix.so" in l or "@include" in l for l in lines):
        text += "@include common-auth\n"
    return text


class World:
    def __init__(self, args):
        self.args = args
        self.m = sandbox.Machine(args.module, args.bin, {ALICE: ALICE_PW, BOB: BOB_PW})
        self.machines_common_auth = open("/etc/pam.d/common-auth").read()
        with open("/etc/pam.d/common-auth", "w") as f:
            f.write(sandbox.STOCK_COMMON_AUTH)
        self.m.start_daemon()
        self.m.enroll(ALICE)

    def converse(self, service, user, answers, touches=()):
        """pam_authenticate as the account itself, answers for the questions in order; the
        reader is touched with the next of touches whenever the daemon asks for a finger."""
        uid = self.m.uids[user]
        spec = {"answers": list(answers), "stream": True}
        p = subprocess.Popen(["setpriv", "--reuid", str(uid), "--regid", str(uid),
                              "--init-groups", "--", PYTHON, os.path.join(HERE, "pamconv.py"),
                              service, user, "0", json.dumps(spec)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, cwd="/")
        touches, touched, result = list(touches), 0, None
        for line in p.stdout:
            if line.startswith("MSG "):
                text = line[4:].strip()
                if touches and (("Place your" in text and touched == 0) or "left)" in text):
                    self.m.touch(touches.pop(0))
                    touched += 1
            elif line.strip():
                result = json.loads(line)
        err = p.stderr.read()
        check(p.wait(timeout=sandbox.WAIT_S) == 0 and result is not None,
              "pamconv: %s" % err)
        return result

    def at_terminal(self, service):
        """pamtester at a terminal as lapamalice types the password at the first prompt;
        returns (authenticated, the terminal's text)."""
        uid = self.m.uids[ALICE]
        term = ptyterm.Pty(["setpriv", "--reuid", str(uid), "--regid", str(uid),
                            "--init-groups", "--", "pamtester", "-I", "tty={tty}", service,
                            ALICE, "authenticate"], owner=uid,
                           env={"PATH": "/usr/bin:/bin", "LANG": "C"})
        try:
            term.read_until(lambda s: re.search(r"(Password or finger for \S+|Password): $", s))
            term.send(ALICE_PW + "\n")
            term.finish()
        finally:
            term.close()
        return "successfully authenticated" in term.out, term.out

    def close(self):
        self.m.close()


def check_stack(w, where, lines, complete, n):
    service = "la-doc-%d" % n
    w.m.write_pam(service, service_text(lines, complete))
    line, control = module_line(lines)
    required = fingerprint_only(control)
    dies = "default=die" in control or required
    password_first = "password_first" in line
    tries = int(re.search(r"\btries=(\d)", line).group(1)) if "tries=" in line else 3
    problems = []

    def expect(what, res, ok, prompts=None):
        good = (res["code"] == PAM_SUCCESS) == ok
        if prompts is not None and ok and len(res["prompts"]) != prompts:
            good = False
        if not good:
            problems.append("%s: code %d, expected %s; prompts %s; messages %s" % (
                what, res["code"], "success" if ok else "a refusal", res["prompts"],
                res["info"] + res["errors"]))

    expect("finger", w.converse(service, ALICE, [""] if password_first else [], ["finger-1"]),
           True)
    expect("password", w.converse(service, BOB, [BOB_PW]), not required, prompts=1)
    expect("wrong password", w.converse(service, BOB, ["not the password"] * 3), False)
    if not password_first:
        expect("password after %d refused fingers" % tries,
               w.converse(service, ALICE, [ALICE_PW], ["finger-2"] * tries), not dies)
        w.m.ctl("lockout", "reset", "--user", ALICE)
    if not required:
        ok, out = w.at_terminal(service)
        asked = len(re.findall(r"(Password or finger for \S+|Password): ", out))
        if not ok or asked != 1:
            problems.append("at a terminal, the password typed at the first prompt: %s, "
                            "asked %d times:\n%s" % ("authenticated" if ok else "refused",
                                                     asked, out))
    check(not problems, "\n    ".join(problems))


def case_no_end_outside_profiles(_w):
    """`end` is pam-auth-update's word; in /etc/pam.d libpam rejects the line."""
    bad = [(where, l) for where, lines, _ in documented_stacks() for l in lines
           if re.search(r"\[[^\]]*=end\b", l)]
    check(not bad, "documented lines with end: %s" % bad)
    profile = open(os.path.join(REPO, "pam", "pam-configs", "localauth")).read()
    check("success=end" in profile, "the profile still uses end where it belongs")


def case_profile(w):
    """pam/pam-configs/localauth through the real pam-auth-update: common-auth gets the
    module before pam_unix, pam_unix gets try_first_pass, and the stack passes the checks."""
    w.m.pam_auth_update_root()
    # As pam-auth-update left it: a common-auth changed by hand is not overwritten.
    with open("/etc/pam.d/common-auth", "w") as f:
        f.write(w.machines_common_auth)
    r = subprocess.run(["pam-auth-update", "--enable", "localauth"], capture_output=True,
                       text=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                       timeout=60)
    check(r.returncode == 0, "pam-auth-update: %s%s" % (r.stdout, r.stderr))
    auth = [l for l in open("/etc/pam.d/common-auth") if l.startswith("auth")]
    print("       common-auth: %s" % " | ".join(" ".join(l.split()) for l in auth))
    check("pam_localauth.so" in auth[0] and "end" not in auth[0], "first: %s" % auth)
    check(any("pam_unix.so" in l and "try_first_pass" in l for l in auth), str(auth))
    try:
        # Its auth lines as pam-auth-update wrote them, as a service of their own.
        check_stack(w, "profile", [l.rstrip("\n") for l in auth], True, 999)
    finally:
        with open("/etc/pam.d/common-auth", "w") as f:
            f.write(sandbox.STOCK_COMMON_AUTH)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("-k", default="", help="only the stacks whose name contains this")
    args = ap.parse_args()
    args.module, args.bin = os.path.abspath(args.module), os.path.abspath(args.bin)
    if os.getuid() != 0:
        print("run as root: the private /etc and the daemon need it")
        return 1
    sandbox.enter("LA_STACKS_NAMESPACE")
    for tool in ("pamtester", "pam-auth-update", "setpriv", "stdbuf"):
        if shutil.which(tool) is None:
            print("FAIL %s is not installed (scripts/ensure-deps.sh installs it)" % tool)
            print("0 passed, 1 failed")
            return 1
    cases = [("no documented line uses end outside a pam-configs profile",
              case_no_end_outside_profiles)]
    for n, (where, lines, complete) in enumerate(documented_stacks()):
        cases.append((where, lambda w, a=(where, lines, complete, n): check_stack(w, *a)))
    cases.append(("pam/pam-configs/localauth through pam-auth-update", case_profile))
    passed, failed = sandbox.run_cases(lambda: World(args), cases, args.k)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
