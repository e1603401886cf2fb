#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make test-boot: the booted-system tier (issue 25).

A copy of a minimal Debian 12 root (Tests/boot/root.sh, cached) is booted with systemd-nspawn,
systemd as PID 1; the packages `make deb` built are installed with apt as a person would, and
the journeys below run against the real systemd, systemd-logind, journald, dbus-daemon and
polkitd of that system: nothing is mocked. The person's terminal is the container's console (a
pseudo-terminal in a tmux server); what they see is printed from it. The test reader is
libfprint's virtual device, set by an `Environment=` drop-in (the shipped `ExecStart=` is never
replaced), touched through its control socket.

Journeys (issue 25, item 3): (a) install, socket, first request, hardening, a clean journal;
(b) a console login with a seat by password, enrolment, pam-auth-update, sudo and su by finger,
wrong fingers, Ctrl-C, another user's su, login, pkexec through pkttyagent, the audit records;
(e) dpkg -r and -P. A journey that cannot run fails; nothing is skipped.

Usage: tier.py --root CACHED_ROOT --deb dist/localauth_*.deb --compat dist/localauth-fprintd-compat_*.deb
       [--keep] [-k JOURNEY]   (as root). Exit status non-zero on any failure.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import BootFailure, Machine, has_line, lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
ALICE, ALICE_PW = "alice", "Alice-pass 4711"
BOB, BOB_PW = "bob", "Bob-pass 0815"
FINGER, STRANGER = "alice-right-index", "someone-else"
PROMPT = "Password or finger for %s: " % ALICE
SUDO_PROMPT = "[sudo] password for %s:" % ALICE
READER_DROPIN = "/etc/systemd/system/localauthd.service.d/test-reader.conf"
FIGURES = []
RESULTS = []


class Failed(Exception):
    pass


def figure(name, value, unit="s"):
    FIGURES.append((name, value, unit))
    print("  figure: %s: %.2f %s" % (name, value, unit), flush=True)


def check(ok, what, detail=""):
    RESULTS.append((ok, what))
    print("%s - %s" % ("ok" if ok else "not ok", what), flush=True)
    if not ok:
        if detail:
            print("  " + str(detail).replace("\n", "\n  "), flush=True)
        raise Failed(what)


def show(title, text):
    """What the person sees, printed from the real terminal."""
    print("  --- %s ---" % title)
    for l in text.rstrip().splitlines():
        print("  | " + l)
    print("  ---", flush=True)


# ---------------------------------------------------------------------------------------------
# The console


def prompt_back(m, mark, timeout=30):
    return m.wait_for(lambda s: s.rstrip().endswith("\n$"), "the shell prompt", since=mark, timeout=timeout)


def run_at_console(m, command, expect=None, what=None, timeout=30):
    """Types command (with `; echo rc=$?`) at the console's shell; waits for expect (default:
    the prompt back) and returns (mark, text since, seconds)."""
    mark = m.mark()
    t0 = time.monotonic()
    m.type_line(command + "; echo rc=$?")
    if expect is None:
        s, _ = prompt_back(m, mark, timeout)
    else:
        s, _ = m.wait_for(expect, what or expect, since=mark, timeout=timeout)
    return mark, s, time.monotonic() - t0


def rc_of(s):
    found = re.findall(r"^rc=(\d+)$", s, re.M)
    return int(found[-1]) if found else None


def console_login(m, user, password):
    mark = m.mark()
    m.type_line(user)
    m.wait_for("Password:", "the login's password prompt", since=mark)
    m.type_line(password)
    s, took = m.wait_for(lambda s: re.search(r"%s@\S+:~\$ *$" % user, s), "the login shell", since=mark)
    m.type_line("PS1='$ '")
    m.wait_for(lambda s: s.rstrip().endswith("\n$"), "the short prompt", since=mark)
    return s, took


def session_of(m, user):
    for l in m.out("loginctl list-sessions --no-legend").splitlines():
        f = l.split()
        if len(f) >= 3 and f[2] == user:
            props = m.out("loginctl show-session %s -p Seat -p Class -p Active -p TTY -p Type -p Leader" % f[0])
            return dict(p.split("=", 1) for p in props.split())
    return None


def evaluations(m, since_cursor=None):
    """The daemon's audit records of evaluations, read back from the journal (MESSAGE_ID and
    the LOCALAUTH_* fields)."""
    return [r for r in m.journal("-u", "localauthd.service", "LOCALAUTH_OPERATION=evaluate")
            if since_cursor is None or r.get("__CURSOR", "") > since_cursor]


# ---------------------------------------------------------------------------------------------
# Journeys


def setup_people(m):
    """Two people with passwords; alice may use sudo. The console gets the seat a VT login has
    (PLATFORM-NOTES.md: pam_env runs before pam_systemd)."""
    m.sh("useradd -m -s /bin/bash -G sudo %s && useradd -m -s /bin/bash %s" % (ALICE, BOB))
    m.sh("chpasswd", input="%s:%s\n%s:%s\n" % (ALICE, ALICE_PW, BOB, BOB_PW))
    with open(m.root + "/etc/security/pam_env.conf", "a") as f:
        f.write("XDG_SEAT DEFAULT=seat0\n")


def pam_snapshot(m):
    out = {}
    for d in ("/etc/pam.d",):
        for name in sorted(os.listdir(m.root + d)):
            with open(os.path.join(m.root + d, name), "rb") as f:
                out[d + "/" + name] = f.read()
    return out


def journey_a(m, args):
    """(a) apt installs the package; the socket listens; the first request starts the daemon
    under the shipped unit; systemd-analyze security; no warning in the journal."""
    m.pam_before = pam_snapshot(m)
    m.files_before = set(walk(m.root))
    os.makedirs(m.root + "/root/debs", exist_ok=True)
    for deb in (args.deb, args.compat):
        shutil.copy(deb, m.root + "/root/debs/")
    deb = os.path.basename(args.deb)
    t0 = time.monotonic()
    r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./%s" % deb, check=False)
    figure("apt-get install ./localauth.deb", time.monotonic() - t0)
    show("apt-get install -y ./%s (last lines)" % deb, "\n".join(r.stdout.splitlines()[-6:]) + r.stderr)
    check(r.returncode == 0, "apt-get install ./%s" % deb, r.stdout + r.stderr)
    check(m.out("systemctl is-enabled localauthd.socket", check=False).strip() == "enabled",
          "localauthd.socket is enabled")
    check(m.out("systemctl is-active localauthd.socket", check=False).strip() == "active"
          and m.sh("test -S /run/localauthd/socket", check=False).returncode == 0,
          "the socket listens on /run/localauthd/socket")
    check(m.out("systemctl is-active localauthd.service", check=False).strip() == "inactive",
          "the daemon is not running before the first request")
    t0 = time.monotonic()
    r = m.sh("localauthctl status", check=False, user=ALICE)
    figure("first request (localauthctl status, daemon started by the socket)", time.monotonic() - t0)
    show("localauthctl status (alice, first request)", r.stdout + r.stderr)
    check(r.returncode == 0, "the first request is answered (exit %d)" % r.returncode, r.stdout + r.stderr)
    show_unit = m.out("systemctl show localauthd.service -p ActiveState -p SubState -p MainPID "
                      "-p FragmentPath -p DropInPaths -p ExecStart -p NRestarts")
    props = dict(l.split("=", 1) for l in show_unit.splitlines() if "=" in l)
    check(props.get("ActiveState") == "active" and props.get("SubState") == "running",
          "the daemon runs under localauthd.service", show_unit)
    check(props.get("FragmentPath") == "/lib/systemd/system/localauthd.service"
          or props.get("FragmentPath") == "/usr/lib/systemd/system/localauthd.service",
          "the shipped unit file", show_unit)
    check(props.get("DropInPaths", "") == "" and props.get("NRestarts") == "0",
          "no drop-in, no restart", show_unit)
    # journald writes asynchronously: let the start's lines land.
    time.sleep(0.5)
    warnings = m.out("journalctl -b -q --no-pager -p warning -u localauthd.service -u localauthd.socket", check=False)
    check(warnings.strip() == "", "no journal line at warning or above from the install and a clean start", warnings)
    notices = m.out("journalctl -b -q --no-pager -p notice -o cat _SYSTEMD_UNIT=localauthd.service", check=False)
    show("the daemon's lines at notice or above", notices or "(none)")
    check(notices.strip() == "", "the daemon logs nothing at notice or above from a clean start", notices)
    r = m.sh("systemd-analyze security --no-pager localauthd.service", check=False)
    show("systemd-analyze security localauthd.service", "\n".join(
        l for l in r.stdout.splitlines() if not l.startswith("✓")))
    level = re.search(r"Overall exposure level for localauthd.service: ([0-9.]+) (\S+)", r.stdout)
    check(level is not None, "systemd-analyze security reports the unit", r.stdout + r.stderr)
    figure("systemd-analyze security exposure", float(level.group(1)), level.group(2))
    check(float(level.group(1)) <= 2.0, "exposure %s %s (at most 2.0, OK or better)" % (level.group(1), level.group(2)))
    # The test reader, by an Environment= drop-in: the shipped ExecStart= stays as it is.
    m.write(READER_DROPIN, "# make test-boot: libfprint's virtual device as the reader\n[Service]\n"
            "Environment=FP_VIRTUAL_DEVICE=/var/lib/localauthd/virtual-reader.socket\n")
    m.sh("systemctl daemon-reload && systemctl restart localauthd.service")
    r = m.sh("localauthctl devices", check=False)
    show("localauthctl devices (with the test reader)", r.stdout + r.stderr)
    check("Virtual device" in r.stdout, "the daemon sees the virtual reader", r.stdout + r.stderr)


def journey_b(m, args):
    """(b) a console login with a seat, by password; enrolment; pam-auth-update; sudo and su."""
    mark = m.mark()
    s, _ = m.wait_for(lambda s: s.rstrip().endswith("login:"), "the console's login prompt", timeout=60)
    s, took = console_login(m, ALICE, ALICE_PW)
    show("the console: alice logs in with her password", s)
    figure("console login by password", took)
    sess = session_of(m, ALICE)
    check(sess is not None and sess.get("Seat") == "seat0" and sess.get("Active") == "yes"
          and sess.get("Class") == "user", "logind: alice's console session is active on seat0", sess)
    m.alice_shell = int(sess["Leader"])

    # Enrolment: sudo asks for the password (the module is not in the stack yet).
    mark, s, _ = run_at_console(m, "sudo localauthctl enroll --user %s" % ALICE, SUDO_PROMPT)
    m.type_line(ALICE_PW)
    m.wait_for(lambda s: s.count(SUDO_PROMPT) == 1 and re.search(r"(?i)(touch|place|finger)", s.split(SUDO_PROMPT)[1]),
               "the enrolment asks for the finger", since=mark)
    t0 = time.monotonic()
    for _ in range(5):
        m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    figure("enrolment, five touches", time.monotonic() - t0)
    show("sudo localauthctl enroll --user alice", s)
    check(rc_of(s) == 0, "sudo localauthctl enroll --user alice enrols a finger", s)

    mark, s, _ = run_at_console(m, "sudo pam-auth-update --enable localauth")
    show("sudo pam-auth-update --enable localauth", s)
    check(rc_of(s) == 0 and "pam_localauth.so" in open(m.root + "/etc/pam.d/common-auth").read(),
          "pam-auth-update puts pam_localauth.so in common-auth", s)

    # After a boot the finger waits for the password (ADR 0007): alice logged in before the
    # module was in the stack, so her first sudo takes the password, and reports it.
    mark, s, took = run_at_console(m, "sudo -k; sudo whoami", SUDO_PROMPT, "sudo's password prompt")
    m.type_line(ALICE_PW)
    s, _ = prompt_back(m, mark)
    show("the first sudo after enabling: the password, as after every boot", s)
    check("Password required after restart" in s and PROMPT not in s and rc_of(s) == 0
          and has_line(s, r"^root$"), "after the boot: the reason in one line, the password gives root", s)

    mark, s, t_prompt = run_at_console(m, "sudo -k; sudo whoami", PROMPT, "the finger prompt")
    t0 = time.monotonic()
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    figure("sudo: Enter -> 'Password or finger'", t_prompt)
    figure("sudo: touch -> root", time.monotonic() - t0)
    show("sudo whoami, a finger", s)
    check(has_line(s, r"^root$") and rc_of(s) == 0 and SUDO_PROMPT not in s, "sudo: a finger gives root", s)

    mark, s, _ = run_at_console(m, "sudo -k; sudo whoami", PROMPT, "the finger prompt")
    for n in range(3):
        m.touch(STRANGER)
        m.wait_for(lambda s, n=n: s.count("ot recognised") >= n + 1, "miss %d said" % (n + 1), since=mark)
    m.wait_for(SUDO_PROMPT, "sudo's own password prompt after three misses", since=mark)
    m.type_line(ALICE_PW)
    s, _ = prompt_back(m, mark)
    show("sudo whoami, three wrong fingers, then the password", s)
    check(has_line(s, r"^root$") and rc_of(s) == 0, "sudo: wrong fingers, then the password gives root", s)

    cursor = last_cursor(m)
    mark, s, _ = run_at_console(m, "sudo -k; sudo whoami", PROMPT, "the finger prompt")
    t0 = time.monotonic()
    m.keys("C-c")
    m.wait_for(SUDO_PROMPT, "sudo's password prompt after Ctrl-C", since=mark, timeout=10)
    figure("sudo: Ctrl-C in the finger wait -> sudo's password prompt", time.monotonic() - t0)
    m.keys("C-c")
    s, _ = prompt_back(m, mark)
    show("sudo whoami, Ctrl-C, Ctrl-C", s)
    check(not has_line(s, r"^root$") and rc_of(s) == 1, "sudo: Ctrl-C ends the wait, a second ends sudo", s)
    recs = evaluations_after(m, cursor)
    check(len(recs) == 1 and recs[0].get("LOCALAUTH_RESULT") == "systemCancel",
          "the journal: the cancelled wait is one systemCancel record, no miss", recs)

    mark, s, _ = run_at_console(m, "su %s -c whoami" % ALICE, PROMPT, "su's finger prompt")
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("su alice -c whoami, a finger", s)
    check(has_line(s, r"^%s$" % ALICE) and rc_of(s) == 0 and "Password:" not in s, "su: a finger switches", s)

    cursor = last_cursor(m)
    mark, s, _ = run_at_console(m, "su %s -c whoami" % BOB, lambda s: "Password:" in s, "su's password prompt")
    m.keys("C-c")
    s, _ = prompt_back(m, mark)
    show("su bob -c whoami (alice at her console), Ctrl-C", s)
    check(PROMPT.replace(ALICE, BOB) not in s and not has_line(s, r"^%s$" % BOB),
          "su bob: no finger offered for another account", s)
    recs = evaluations_after(m, cursor)
    check(len(recs) == 1 and recs[0].get("LOCALAUTH_USER") == BOB and recs[0].get("LOCALAUTH_RESULT") != "success",
          "the journal: bob's su refused (%s)" % (recs[0].get("LOCALAUTH_RESULT") if recs else "no record"), recs)

    journey_pkexec(m)
    audit_read_back(m)
    journey_login(m)


def journey_pkexec(m):
    """pkexec through polkit's own text agent, registered for alice's shell from a second
    terminal in her session (a tmux inside the container, started from her login shell)."""
    mark, s, _ = run_at_console(m, "tmux new-session -d -s agent -x 150 -y 30 'pkttyagent --process %d'" % m.alice_shell)
    check(rc_of(s) == 0, "a second terminal in alice's session runs pkttyagent --process <her shell>", s)
    uid = int(m.out("id -u %s" % ALICE))

    def agent():
        return m.out("tmux -S /tmp/tmux-%d/default capture-pane -p -J -t agent" % uid, user=ALICE, check=False)
    time.sleep(0.5)
    mark, s, _ = run_at_console(m, "pkexec whoami")
    a, took = m.wait_for(lambda a: re.search(r"(?i)(finger|place|touch)", a), "the agent's finger message",
                         screen=agent, timeout=30)
    t0 = time.monotonic()
    m.touch(FINGER)
    s, _ = prompt_back(m, mark, timeout=30)
    figure("pkexec: touch -> root", time.monotonic() - t0)
    show("pkexec whoami (console)", s)
    show("pkttyagent (second terminal)", agent())
    check(has_line(s, r"^root$") and rc_of(s) == 0, "pkexec through pkttyagent and the polkit-1 stack: a finger gives root", s)
    m.sh("tmux -S /tmp/tmux-%d/default kill-server" % uid, user=ALICE, check=False)


def audit_read_back(m):
    recs = evaluations(m)
    ids = {r.get("MESSAGE_ID") for r in recs}
    summary = ["%s %s %s" % (r.get("LOCALAUTH_SERVICE", "-"), r.get("LOCALAUTH_USER"), r.get("LOCALAUTH_RESULT"))
               for r in recs]
    show("journalctl -u localauthd LOCALAUTH_OPERATION=evaluate (service user result)", "\n".join(summary))
    check(len(ids) == 1 and None not in ids, "the evaluation records carry one MESSAGE_ID", ids)
    services = {r.get("LOCALAUTH_SERVICE") for r in recs if r.get("LOCALAUTH_RESULT") == "success"}
    check({"sudo", "su", "polkit-1"} <= services, "the journal has a success from sudo, su and polkit-1", services)
    ids = {r.get("MESSAGE_ID") for r in m.journal("-u", "localauthd.service", "LOCALAUTH_OPERATION=enroll")}
    check(len(ids) == 1 and None not in ids, "the enrolment has its audit record", ids)


def journey_login(m):
    """/bin/login at the console with the README's login example (pam/examples/login): the
    console is not the virtual terminal in front, so the finger is not offered and the password
    logs in."""
    saved = open(m.root + "/etc/pam.d/login", "rb").read()
    shutil.copy(os.path.join(REPO, "pam/examples/login"), m.root + "/etc/pam.d/login")
    try:
        mark = m.mark()
        m.type_line("exit")
        m.wait_for(lambda s: s.rstrip().endswith("login:"), "the console's login prompt again", since=mark, timeout=30)
        mark = m.mark()
        m.type_line(ALICE)
        s, _ = m.wait_for("Password", "login's password prompt", since=mark)
        m.type_line(ALICE_PW)
        s, _ = m.wait_for(lambda s: re.search(r"%s@\S+:~\$ *$" % ALICE, s), "logged in", since=mark)
        show("/bin/login at the console with pam/examples/login", s)
        check(PROMPT not in s, "login at a console that is not the VT in front: no finger offered", s)
        m.type_line("PS1='$ '")
        m.wait_for(lambda s: s.rstrip().endswith("\n$"), "the short prompt", since=mark)
        sess = session_of(m, ALICE)
        m.alice_shell = int(sess["Leader"])
    finally:
        with open(m.root + "/etc/pam.d/login", "wb") as f:
            f.write(saved)


def last_cursor(m):
    recs = m.journal("-n", "1")
    return recs[-1]["__CURSOR"] if recs else ""


def evaluations_after(m, cursor):
    out = m.out("journalctl -o json --no-pager --after-cursor='%s' -u localauthd.service LOCALAUTH_OPERATION=evaluate" % cursor,
                check=False)
    import json
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def walk(root):
    skip = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/log/journal", "/var/cache", "/var/lib/apt/lists",
            "/home", "/root/debs", "/var/lib/systemd", "/var/tmp", "/var/log")
    for dirpath, dirnames, filenames in os.walk(root):
        rel = dirpath[len(root):] or "/"
        if rel.startswith(skip):
            dirnames[:] = []
            continue
        for n in filenames + dirnames:
            yield os.path.join(rel, n)


def journey_e(m, args):
    """(e) dpkg -r and dpkg -P: the PAM stack as before, nothing left the packages or the
    daemon made."""
    pkgs = "localauth-fprintd-compat localauth" if m.compat_installed else "localauth"
    r = m.sh("dpkg -r %s" % pkgs, check=False)
    show("dpkg -r %s" % pkgs, r.stdout + r.stderr)
    check(r.returncode == 0 and "Failed" not in r.stdout + r.stderr, "dpkg -r %s" % pkgs, r.stdout + r.stderr)
    check(pam_snapshot(m) == m.pam_before, "/etc/pam.d is as before the install after dpkg -r",
          diff_pam(m.pam_before, pam_snapshot(m)))
    check(m.out("systemctl is-active localauthd.socket localauthd.service", check=False).split() == ["inactive", "inactive"],
          "the socket and the daemon are stopped")
    r = m.sh("dpkg -P %s" % pkgs, check=False)
    show("dpkg -P %s" % pkgs, r.stdout + r.stderr)
    check(r.returncode == 0 and "Failed" not in r.stdout + r.stderr, "dpkg -P %s" % pkgs, r.stdout + r.stderr)
    # The tier's own drop-in is the tier's to remove.
    os.remove(m.root + READER_DROPIN)
    os.rmdir(os.path.dirname(m.root + READER_DROPIN))
    m.sh("systemctl daemon-reload")
    left = sorted(set(walk(m.root)) - m.files_before)
    left = [p for p in left if not p.startswith(("/var/lib/dpkg", "/etc/.pwd.lock", "/etc/passwd", "/etc/shadow",
                                                  "/etc/group", "/etc/gshadow", "/etc/subuid", "/etc/subgid",
                                                  "/var/lib/pam/", "/var/lib/sudo", "/var/lib/polkit-1",
                                                  "/etc/security/pam_env.conf"))]
    check(not left, "nothing is left that the packages or the daemon made", "\n".join(left))
    run_left = [p for p in ("/run/localauthd", "/var/lib/localauthd", "/var/lib/localauthd.key",
                            "/var/lib/private/localauthd") if m.exists(p)]
    check(not run_left, "no state, key or runtime directory is left", run_left)
    check(m.sh("grep -qx localauth /var/lib/pam/seen", check=False).returncode != 0, "the profile is unregistered")


def diff_pam(before, after):
    out = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            out.append("%s changed" % k)
    return "\n".join(out)


JOURNEYS = [("a", journey_a), ("b", journey_b), ("e", journey_e)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--deb", required=True)
    ap.add_argument("--compat", required=True)
    ap.add_argument("--keep", action="store_true", help="leave the machine's copy (and the machine) for a look")
    ap.add_argument("-k", dest="only", default="", help="journeys to run, e.g. abe (a always runs)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("test-boot: needs root (systemd-nspawn)", file=sys.stderr)
        return 1
    t_all = time.monotonic()
    base = os.path.join(REPO, ".build", "boot-run")
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="run-", dir=base)
    m = Machine(args.root, work)
    m.compat_installed = False
    figure("copy of the cached root", m.copy_s)
    failed = []
    try:
        try:
            took = m.boot()
        except BootFailure as e:
            print("not ok - the Debian 12 root boots with systemd as PID 1\n  %s" % e)
            return 1
        figure("boot (nspawn start -> is-system-running)", took)
        setup_people(m)
        for name, journey in JOURNEYS:
            if args.only and name not in args.only and name != "a":
                continue
            print("# journey %s: %s" % (name, journey.__doc__.strip().splitlines()[0]), flush=True)
            t0 = time.monotonic()
            try:
                journey(m, args)
            except Failed as e:
                failed.append("%s: %s" % (name, e))
            except Exception as e:
                traceback.print_exc()
                print("not ok - journey %s ended: %s" % (name, e), flush=True)
                failed.append("%s: %s" % (name, e))
            figure("journey %s" % name, time.monotonic() - t0)
            if name == "a" and failed:
                break  # nothing else can run without the package
    finally:
        if not args.keep:
            m.poweroff()
            m.remove()
        else:
            print("kept: %s (leader pid %s; tmux -S %s attach)" % (work, m.leader, m.sock))
    figure("the tier", time.monotonic() - t_all)
    passed = sum(1 for ok, _ in RESULTS if ok)
    print("%d checks passed, %d journeys failed%s" % (passed, len(failed), (": " + "; ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
