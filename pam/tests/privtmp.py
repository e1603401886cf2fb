# SPDX-License-Identifier: Apache-2.0
"""A private /tmp for the processes that load pam_wrapper.

pam_wrapper (1.1.4, Debian 12) copies the service files into /tmp/pam.X, X one character chosen
from the caller's pid; it honours no TMPDIR. Two callers can pick the same X, and its check for a
stale directory reads the owner's pid truncated to 16 bits, so a caller may remove a live one's
directory: libpam then fails (PAM code 6 was seen while several test suites ran at once). So
PAM callers run in a private mount namespace whose /tmp is a fresh tmpfs, with only the
directories they need from the real /tmp bound back in. Two uses of the one mechanism:
  - wrap(): each PAM caller of a test on its own (integration, death, hostile, failinject,
    memcheck), so that callers of the same run cannot meet either;
  - run as a program, `privtmp.py COMMAND...`: a whole test run (pam.mk's PAM_PRIVATE_TMP; the
    locker test's i3lock and its X server share the run's /tmp), the working directory bound
    back and kept. Inside such a run, or without root, the command runs as it is.
"""
import os
import sys

# Run by /usr/bin/python3 inside the namespace (sh would clear the signal mask a test sets for
# the command): cwd is the real /tmp when the tmpfs covers it, so "./name" still reaches what
# lies beneath (--no-canonicalize: mount would otherwise resolve it in the new tmpfs).
# Arguments: tmpfs options, the directory to run in, the directories to bind back, "--", the
# command.
_SCRIPT = r"""
import os, subprocess, sys
args = sys.argv[1:]
split = args.index("--")
os.chdir("/tmp")
subprocess.run(["mount", "-t", "tmpfs", "-o", args[0], "tmpfs", "/tmp"], check=True)
for path in args[2:split]:
    rel = os.path.relpath(path, "/tmp")
    os.makedirs("/tmp/" + rel, exist_ok=True)
    subprocess.run(["mount", "--no-canonicalize", "--bind", "./" + rel, "/tmp/" + rel], check=True)
os.chdir(args[1])
env = dict(os.environ)
if "PRIVTMP_LD_PRELOAD" in env:
    env["LD_PRELOAD"] = env.pop("PRIVTMP_LD_PRELOAD")
os.execvpe(args[split + 1], args[split + 1:], env)
"""


# The checkout, which may itself lie under /tmp (a clone made there, as CI may): the tests'
# scripts and the module are read from it inside the namespace.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _prefix(env, options, cwd, keep):
    """(argv prefix, environment): the namespace, its tmpfs mounted with options, each
    directory of keep (and the checkout) that lies under /tmp bound back, the command run in
    cwd. LD_PRELOAD reaches the command alone: unshare, python and mount would each make (and,
    by exec, leave) a /tmp/pam.X of their own."""
    env = dict(env)
    if "LD_PRELOAD" in env:
        env["PRIVTMP_LD_PRELOAD"] = env.pop("LD_PRELOAD")
    tmp = os.path.realpath("/tmp")
    kept = []
    for path in (CHECKOUT, *keep):
        real = os.path.realpath(path)
        under = "/tmp/" + os.path.relpath(real, tmp)
        if real.startswith(tmp + "/") and under not in kept:
            kept.append(under)
    return ["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", "-c", _SCRIPT,
            options, cwd, *kept, "--"], env


def wrap(env, *keep):
    """(argv prefix, environment) that run a command with a private /tmp, in which each
    directory of keep that lies under /tmp is bound back at its own path; the command runs in
    /. pam_wrapper is preloaded into the command alone. The checkout is always kept. Put the
    prefix right before the command. Without root (no mount namespace) nothing changes."""
    if os.geteuid() != 0:
        return [], env
    return _prefix(env, "mode=1777", "/", keep)


def main(command):
    """A whole run: command with a private /tmp of at most 512 MiB, in the working directory
    (bound back when it lies under /tmp), LA_PRIVATE_TMP=1 marking that it is inside one."""
    if os.geteuid() != 0 or os.environ.get("LA_PRIVATE_TMP"):
        os.execvp(command[0], command)
    cwd = os.getcwd()
    prefix, env = _prefix(dict(os.environ, LA_PRIVATE_TMP="1"), "mode=1777,size=512m", cwd,
                          [cwd])
    os.execvpe(prefix[0], prefix + command, env)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: privtmp.py COMMAND [ARG...]")
    main(sys.argv[1:])
