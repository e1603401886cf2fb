# SPDX-License-Identifier: Apache-2.0
"""A private /tmp for each process that loads pam_wrapper.

pam_wrapper (1.1.4, Debian 12) copies the service files into /tmp/pam.X, X one character chosen
from the caller's pid; it honours no TMPDIR. Two callers can pick the same X, and its check for a
stale directory reads the owner's pid truncated to 16 bits, so a caller may remove a live one's
directory: libpam then fails (PAM code 6 was seen while several test suites ran at once). So
every PAM caller of these tests runs in a private mount namespace whose /tmp is a fresh tmpfs,
with only the directories it needs from the real /tmp bound back in.
"""
import os

# Run by /usr/bin/python3 inside the namespace (sh would clear the signal mask a test sets for
# the command): cwd is the real /tmp when the tmpfs covers it, so "./name" still reaches what
# lies beneath (--no-canonicalize: mount would otherwise resolve it in the new tmpfs).
_SCRIPT = r"""
import os, subprocess, sys
args = sys.argv[1:]
split = args.index("--")
os.chdir("/tmp")
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp"], check=True)
for path in args[:split]:
    rel = os.path.relpath(path, "/tmp")
    os.makedirs("/tmp/" + rel, exist_ok=True)
    subprocess.run(["mount", "--no-canonicalize", "--bind", "./" + rel, "/tmp/" + rel], check=True)
os.chdir("/")
env = dict(os.environ)
if "PRIVTMP_LD_PRELOAD" in env:
    env["LD_PRELOAD"] = env.pop("PRIVTMP_LD_PRELOAD")
os.execvpe(args[split + 1], args[split + 1:], env)
"""


# The checkout, which may itself lie under /tmp (a clone made there, as CI may): the tests'
# scripts and the module are read from it inside the namespace.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wrap(env, *keep):
    """(argv prefix, environment) that run a command with a private /tmp, in which each
    directory of keep that lies under /tmp is bound back at its own path. pam_wrapper is
    preloaded into the command alone: unshare, python and mount would each make (and, by
    exec, leave) a /tmp/pam.X of their own. The checkout is always kept. Put the prefix right
    before the command. Without root (no mount namespace) nothing changes."""
    if os.geteuid() != 0:
        return [], env
    env = dict(env)
    if "LD_PRELOAD" in env:
        env["PRIVTMP_LD_PRELOAD"] = env.pop("LD_PRELOAD")
    tmp = os.path.realpath("/tmp")
    kept = []
    for path in (CHECKOUT, *keep):
        real = os.path.realpath(path)
        if real.startswith(tmp + "/"):
            kept.append("/tmp/" + os.path.relpath(real, tmp))
    return ["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", "-c", _SCRIPT,
            *kept, "--"], env
