#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make test-boot: the booted-system tier (issue 25).

The cached minimal Debian 12 root (Tests/boot/root.sh) is booted under an overlay with
systemd-nspawn, systemd as PID 1; the packages `make deb` built are installed with apt as a person
would, and the journeys below run against the real systemd, systemd-logind, journald, dbus-daemon
and polkitd of that system: nothing is mocked. The person's terminal is the container's console (a
pseudo-terminal in a tmux server); what they see is printed from it. The test reader is libfprint's
virtual device, set by a configuration drop-in (`virtual-reader = yes` in /etc/localauthd.conf.d;
the shipped unit is never changed), touched with root's `localauthctl simulate touch`.

Journeys (issue 25, items 3 and 4): (a) install, socket, first request, hardening, a clean
journal; (b) a console login with a seat by password, enrolment, pam-auth-update, sudo and su by
finger, wrong fingers, Ctrl-C, another user's su, pkexec through pkttyagent, the audit records,
/bin/login; (l, after b) sd-login's files against logind's bus: the same session for each caller,
what the daemon asks logind per pam_authenticate, the boot id it records; (c) idle exit, restart
during a verify, kill -9, the watchdog, a reboot (the password after it); (d) the
fprintd-compat package with Debian's fprintd tools and polkitd; (s, after b) the ssh agent as a user
service of alice's user manager; (4) GDM's fingerprint service and a
locker's stack through the real libpam, from the user's and from a greeter-class session; (e)
dpkg -r and -P; (f) an upgrade over an earlier package's state, and a newer format refused. A
journey that cannot run fails; nothing is skipped. docs/reliability.md section 8 lists each check.

Usage: tier.py --root CACHED_ROOT --deb dist/localauth_*.deb --compat dist/localauth-fprintd-compat_*.deb
       [--keep] [-k JOURNEYS]   (as root). Exit status non-zero on any failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import BootFailure, Machine, has_line  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
ALICE, ALICE_PW = "alice", "Alice-pass 4711"
BOB, BOB_PW = "bob", "Bob-pass 0815"
FINGER, STRANGER = "alice-right-index", "someone-else"
PROMPT = "Password or finger for %s: " % ALICE
SUDO_PROMPT = "[sudo] password for %s:" % ALICE
READER_DROPIN = "/etc/localauthd.conf.d/test-reader.conf"
FIGURES = []
RESULTS = []


class Failed(Exception):
    pass


def figure(name, value, unit="s"):
    FIGURES.append((name, value, unit))
    print("  figure: %s: %.2f %s" % (name, value, unit), flush=True)


def check(ok, what, detail="", fatal=True):
    """fatal=False: the journey goes on (what follows does not depend on it), failed all the same."""
    RESULTS.append((ok, what))
    print("%s - %s" % ("ok" if ok else "not ok", what), flush=True)
    if not ok:
        if detail:
            print("  " + str(detail).replace("\n", "\n  "), flush=True)
        if fatal:
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
    found = re.findall(r"rc=(\d+)$", s, re.M)  # at a line's end: output without a newline comes before
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
    m.packages_before = installed_packages(m)
    os.makedirs(m.root + "/root/debs", exist_ok=True)
    for deb in (args.deb, args.compat):
        shutil.copy(deb, m.root + "/root/debs/")
    deb = os.path.basename(args.deb)
    t0 = time.monotonic()
    r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./%s" % deb, check=False)
    figure("apt-get install ./localauth.deb", time.monotonic() - t0)
    show("apt-get install -y ./%s (last lines)" % deb, "\n".join(r.stdout.splitlines()[-6:]) + r.stderr)
    check(r.returncode == 0, "apt-get install ./%s" % deb, r.stdout + r.stderr)
    control = open(os.path.join(REPO, "packaging/deb/control.in")).read()
    recommends = re.search(r"^Recommends: (.*)$", control, re.M).group(1).replace(" ", "").split(",")
    missing = [p for p in recommends if m.sh("dpkg-query -W -f='${Status}' %s | grep -q 'ok installed'" % p,
                                              check=False).returncode != 0]
    check(not missing, "apt pulled in what the package recommends (%s)" % ", ".join(recommends), missing)
    # No TPM in the container: sealing to one fails, but for want of the device, no longer for want
    # of the libraries ("TPM2 support not installed", issue 25).
    r = m.sh("echo x | systemd-creds encrypt --with-key=tpm2 --name=t - -", check=False)
    show("systemd-creds encrypt --with-key=tpm2 (no TPM in the container)", r.stdout + r.stderr)
    check(r.returncode != 0 and "not installed" not in r.stderr and re.search(r"TCTI|tpmrm0", r.stderr),
          "systemd-creds has the TPM2 libraries (it fails only for want of a TPM here)", r.stdout + r.stderr)
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
    if not m.can("CAP_NET_ADMIN"):
        # systemd sets up PrivateNetwork='s loopback device with CAP_NET_ADMIN, which this
        # container does not have (nspawn's bounding set here): the machine's, not the unit's.
        loopback = "Failed to configure loopback network device, ignoring: Operation not permitted"
        show("warnings of the container's own (no CAP_NET_ADMIN in it), not counted",
             "\n".join(l for l in warnings.splitlines() if loopback in l) or "(none)")
        warnings = "\n".join(l for l in warnings.splitlines() if loopback not in l)
    check(warnings.strip() == "", "no journal line at warning or above from the install and a clean start", warnings,
          fatal=False)
    notices = m.out("journalctl -b -q --no-pager -p notice -o cat _SYSTEMD_UNIT=localauthd.service", check=False)
    show("the daemon's lines at notice or above", notices or "(none)")
    others = [l for l in notices.splitlines()
              if not (not m.can("CAP_NET_ADMIN") and "Failed to configure loopback network device" in l)]
    # The unit's LimitNICE= lets the runtime's threads raise their priority a little; systemd in
    # this container cannot raise the limit past its own hard limit (it has no CAP_SYS_RESOURCE),
    # and then the runtime's notice is the container's, not the unit's.
    wanted = int(unit(m, "LimitNICE").get("LimitNICE") or 0)
    got = nice_limit(m, "/proc/%s/limits" % unit(m, "MainPID")["MainPID"])
    ceiling = nice_limit(m, "/proc/1/limits", hard=True)
    if wanted and got < wanted and ceiling < wanted and not m.can("CAP_SYS_RESOURCE"):
        priority = [l for l in others if l.startswith("Failed to set thread priority for worker thread")]
        show("not counted: LimitNICE=%d cannot be applied in this container (PID 1's hard limit %d, no "
             "CAP_SYS_RESOURCE); the daemon got %d" % (wanted, ceiling, got), "\n".join(priority) or "(none)")
        others = [l for l in others if l not in priority]
    check(not others, "a clean start logs nothing at notice or above", "\n".join(others), fatal=False)
    r = m.sh("systemd-analyze security --no-pager localauthd.service", check=False)
    show("systemd-analyze security localauthd.service", "\n".join(
        l for l in r.stdout.splitlines() if not l.startswith("✓")))
    level = re.search(r"Overall exposure level for localauthd.service: ([0-9.]+) (\S+)", r.stdout)
    check(level is not None, "systemd-analyze security reports the unit", r.stdout + r.stderr)
    figure("systemd-analyze security exposure", float(level.group(1)), level.group(2))
    check(float(level.group(1)) <= 2.0, "exposure %s %s (at most 2.0, OK or better)" % (level.group(1), level.group(2)))
    # The test reader, by a configuration drop-in: the shipped unit stays as it is.
    m.write(READER_DROPIN, "# make test-boot: libfprint's virtual device as the reader\nvirtual-reader = yes\n")
    m.sh("systemctl restart localauthd.service")
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

    # The password typed at the module's prompt goes to pam_unix; the module reports its use
    # (ADR 0007: from then on, after every boot the finger waits for the password).
    mark, s, took = run_at_console(m, "sudo -k; sudo whoami", PROMPT, "the finger prompt")
    m.type_line(ALICE_PW)
    s, _ = prompt_back(m, mark)
    show("the first sudo with the module: the password typed at its prompt", s)
    check(has_line(s, r"^root$") and rc_of(s) == 0 and SUDO_PROMPT not in s,
          "sudo: the password typed at 'Password or finger' gives root, asked once", s)
    used = m.journal("-u", "localauthd.service", "LOCALAUTH_OPERATION=passwordUsed")
    check(used and used[-1].get("LOCALAUTH_USER") == ALICE and used[-1].get("LOCALAUTH_RESULT") == "success",
          "the journal: sudo's stack reported alice's password", [(r.get("LOCALAUTH_USER"), r.get("LOCALAUTH_RESULT")) for r in used])

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
    m.wait_for(SUDO_PROMPT, "sudo's password prompt after Ctrl-C", since=mark, timeout=30)
    figure("sudo: Ctrl-C in the finger wait -> sudo's password prompt", time.monotonic() - t0)
    m.keys("C-c")
    s, _ = prompt_back(m, mark)
    show("sudo whoami, Ctrl-C, Ctrl-C", s)
    check(not has_line(s, r"^root$") and rc_of(s) == 1, "sudo: Ctrl-C ends the wait, a second ends sudo", s)
    # (A record of the sudo before may land after the cursor: journald stores a moment late.)
    recs = [r.get("LOCALAUTH_RESULT") for r in evaluations_after(
        m, cursor, lambda recs: any(r.get("LOCALAUTH_RESULT") == "systemCancel" for r in recs))]
    check(recs and recs[-1] == "systemCancel" and recs.count("systemCancel") == 1,
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
    recs = [r for r in evaluations_after(m, cursor, lambda recs: any(r.get("LOCALAUTH_USER") == BOB for r in recs))
            if r.get("LOCALAUTH_USER") == BOB]
    check(len(recs) == 1 and recs[0].get("LOCALAUTH_RESULT") != "success",
          "the journal: bob's su refused (%s)" % (recs[0].get("LOCALAUTH_RESULT") if recs else "no record"),
          [(r.get("LOCALAUTH_RESULT"), r.get("MESSAGE")) for r in recs])

    journey_pkexec(m)
    audit_read_back(m)
    journey_login(m)


def readme_agent_line():
    """The README's command that turns the ssh agent on (the socket unit and the environment.d
    line), as one line: the block's lines from `systemctl --user enable` to the end of the block."""
    text = open(os.path.join(REPO, "README.md")).read()
    block = text.split("## ssh keys behind a finger", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith("systemctl --user enable")][0]
    return " ".join(l.strip() for l in lines[start:])


def journey_ssh(m, args):
    """(s) The ssh agent as a user service: after (b), alice's console login has started her user
    manager; the README's line enables localauth-ssh-agent.socket and its environment.d file; the
    first ssh-add starts the agent by socket activation; ssh-keygen -Y sign is signed after her finger,
    the daemon naming the program through the pidfd the agent passed; bob cannot connect."""
    uid = int(m.out("id -u %s" % ALICE))
    sock = "/run/user/%d/localauth/ssh-agent" % uid
    run_at_console(m, "export SYSTEMD_PAGER=cat")  # systemctl's output straight to the console
    line = readme_agent_line()
    show("the README's line, typed at alice's console", line)
    mark, s, _ = run_at_console(m, line)
    check(rc_of(s) == 0, "the README's systemctl --user / environment.d line runs at alice's console", s)
    mark, s, _ = run_at_console(m, "systemctl --user is-active localauth-ssh-agent.socket; "
                                   "systemctl --user show -p FragmentPath localauth-ssh-agent.socket")
    show("the user unit", s)
    check(has_line(s, r"^active$") and "/lib/systemd/user/localauth-ssh-agent.socket" in s,
          "her user manager listens on the installed localauth-ssh-agent.socket", s)
    mode = m.out("stat -c '%%a %%U' %s %s" % (os.path.dirname(sock), sock), check=False).split("\n")
    check(mode[:2] == ["700 %s" % ALICE, "600 %s" % ALICE], "the socket is 0600 in a 0700 directory of hers", mode)
    def user_systemctl(args):  # alice's user manager, through its private socket
        return m.out("XDG_RUNTIME_DIR=/run/user/%d systemctl --user %s" % (uid, args), user=ALICE, check=False).strip()
    check(user_systemctl("is-active localauth-ssh-agent.service") != "active",
          "the agent is not running before the first client", fatal=False)
    # environment.d is read by the user manager when it starts or reloads: its services get the variable.
    mark, s, _ = run_at_console(m, "systemctl --user daemon-reload && systemctl --user show-environment | grep SSH_AUTH_SOCK")
    show("systemctl --user show-environment after the README's environment.d file", s)
    check(has_line(s, r"^SSH_AUTH_SOCK=%s$" % re.escape(sock)),
          "environment.d gives the user manager SSH_AUTH_SOCK=%s" % sock, s)

    mark, s, _ = run_at_console(m, "localauthctl ssh-key create laptop > ~/laptop.pub; cat ~/laptop.pub")
    key = [l for l in s.splitlines() if l.startswith("ecdsa-sha2-nistp256 ")]
    check(rc_of(s) == 0 and key and key[0].endswith(" localauth:laptop"), "localauthctl ssh-key create laptop", s)
    t0 = time.monotonic()
    mark, s, _ = run_at_console(m, "SSH_AUTH_SOCK=%s ssh-add -L" % sock)
    figure("ssh-add -L, the agent started by its socket", time.monotonic() - t0)
    show("ssh-add -L through the socket-activated agent", s)
    check(rc_of(s) == 0 and key[0] in s, "ssh-add -L through the socket lists the key", s)
    check(user_systemctl("is-active localauth-ssh-agent.service") == "active",
          "the socket started localauth-ssh-agent.service")

    def agent_log():
        return m.out("journalctl -b -o cat --no-pager _SYSTEMD_USER_UNIT=localauth-ssh-agent.service", check=False)
    before = agent_log().count("Place your")
    m.sh("cd && echo 'a commit' > msg && echo '%s %s' > allowed_signers" % (ALICE, key[0]), user=ALICE)
    mark = m.mark()
    t0 = time.monotonic()
    m.type_line("SSH_AUTH_SOCK=%s ssh-keygen -Y sign -f ~/laptop.pub -n git ~/msg; echo rc=$?" % sock)
    t = time.monotonic()
    while agent_log().count("Place your") <= before:
        if time.monotonic() - t > 30:
            check(False, "the agent's log shows the daemon's finger prompt", agent_log()[-1500:])
        time.sleep(0.1)
    figure("ssh-keygen -Y sign: Enter -> the daemon's prompt on the agent's log", time.monotonic() - t0)
    t0 = time.monotonic()
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    figure("ssh-keygen -Y sign: touch -> signed", time.monotonic() - t0)
    show("ssh-keygen -Y sign through the agent, a finger", s)
    check(rc_of(s) == 0 and m.exists("/home/%s/msg.sig" % ALICE), "ssh-keygen -Y sign: signed after the finger", s)
    log = agent_log()
    show("journalctl _SYSTEMD_USER_UNIT=localauth-ssh-agent.service (last lines)", "\n".join(log.splitlines()[-6:]))
    # The shipped unit keeps CAP_SYS_PTRACE (ADR 0012): the daemon reads both executables itself,
    # the requester's through the pidfd the agent passed (docs/security.md).
    check("(/usr/bin/ssh-keygen via /usr/bin/localauthctl for %s, "
          "asking to release ssh-key:laptop)" % ALICE in log,
          "the prompt names ssh-keygen, read by the daemon through the pidfd the agent passed, via the agent",
          log[-1500:])
    r = m.sh("cd && ssh-keygen -Y verify -f allowed_signers -I %s -n git -s msg.sig < msg" % ALICE, user=ALICE,
             check=False)
    check(r.returncode == 0 and "Good" in r.stdout + r.stderr, "ssh-keygen -Y verify: a good signature",
          r.stdout + r.stderr)

    r = m.sh("SSH_AUTH_SOCK=%s ssh-add -L" % sock, user=BOB, check=False)
    show("bob: ssh-add -L on alice's agent socket", r.stdout + r.stderr)
    check(r.returncode != 0 and "ecdsa" not in r.stdout, "bob cannot connect to alice's agent", r.stdout + r.stderr)

    mark, s, _ = run_at_console(m, "localauthctl ssh-key delete laptop && systemctl --user disable --now "
                                   "localauth-ssh-agent.socket localauth-ssh-agent.service && "
                                   "rm ~/.config/environment.d/60-localauth-ssh.conf && systemctl --user daemon-reload")
    check(rc_of(s) == 0, "the key deleted, the agent turned off again", s, fatal=False)


TIER_LIB = "/usr/local/lib/localauth-tier"
LOGIN1 = "org.freedesktop.login1"
# What the daemon asks logind about a caller's session; `Get` alone is the lid (`LidClosed`).
SESSION_QUESTIONS = ("GetSessionByPID", "GetAll", "ListSessions")


def touch_when_listening(m, finger, timeout=60):
    """A finger once the reader waits for one (root's `localauthctl simulate touch` fails before)."""
    deadline = time.monotonic() + timeout
    while m.sh("localauthctl simulate touch %s --quiet" % finger, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise AssertionError("localauthctl simulate touch %s: the reader never listened" % finger)
        time.sleep(0.1)


def daemon_bus_names(m):
    """The daemon's unique names on the system bus (busctl list: NAME PID ...)."""
    pid = unit(m, "MainPID")["MainPID"]
    return {l.split()[0] for l in m.out("busctl list --unique --no-legend", check=False).splitlines()
            if len(l.split()) > 1 and l.split()[1] == pid}


def login1_calls(m, body):
    """The method calls the daemon sent to logind while body() ran (dbus-monitor inside, as root):
    a list of members in the order sent."""
    m.sh("rm -f /root/login1.log /root/login1.pid")
    mon = subprocess.Popen(m.argv("echo $$ > /root/login1.pid; exec stdbuf -oL dbus-monitor --system --profile "
                                  "\"type='method_call',destination='%s'\" > /root/login1.log 2>&1" % LOGIN1),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def pings():
        try:
            with open(m.root + "/root/login1.log") as f:
                return sum(1 for l in f if l.rstrip("\n").endswith("\tPing"))
        except OSError:
            return 0

    def ping_seen(what, ping_again):
        """Pings logind (root's busctl: a call the monitor's match takes, from no name of the daemon's)
        until the monitor has written a ping it had not: it writes calls in the bus's order, so every
        call routed before is in its log then. Before, sleeps of 0.3 s stood for this."""
        seen = pings()
        deadline = time.monotonic() + 30
        while True:
            m.sh("busctl call %s /org/freedesktop/login1 org.freedesktop.DBus.Peer Ping" % LOGIN1, check=False)
            for _ in range(10 if ping_again else 1500):
                if pings() > seen:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError("dbus-monitor never logged logind's ping (%s)" % what)
                time.sleep(0.02)

    names = daemon_bus_names(m)
    try:
        # The monitor takes calls once it is one (BecomeMonitor): a ping sent before is not logged,
        # so pings go on until one is.
        ping_seen("the monitor's start", ping_again=True)
        body()
        ping_seen("the calls during the journey", ping_again=False)
    finally:
        m.sh("kill $(cat /root/login1.pid)", check=False)
        mon.wait(timeout=10)
    calls = []
    for line in open(m.root + "/root/login1.log").read().splitlines():
        f = line.split("\t")
        if len(f) >= 8 and f[0] == "mc" and f[4] == LOGIN1 and f[3] in names:
            calls.append(f[7])
    m.sh("rm -f /root/login1.log /root/login1.pid")
    return calls, names


def views(m, uid, pids, runs=0):
    """localauth-bench logind (Sources/localauth-bench/LogindViews.swift) inside, as root: each
    pid's session from sd-login's files and from logind over the bus, uid's seats both ways."""
    import json
    r = m.sh("%s/localauth-bench logind %d %d %s" % (TIER_LIB, max(runs, 1), uid, " ".join(map(str, pids))),
             check=False, timeout=300)
    check(r.returncode == 0, "localauth-bench logind runs in the booted system", r.stdout + r.stderr)
    return json.loads(r.stdout)


def same_place(p):
    """The files' view equals logind's: the same session (id, uid, class, seat, active, remote), or
    no session for both and the files then count as logind's answer."""
    if p["bus"] == "none":
        return p["files"] is None and p["files_logind_present"]
    return p["bus"] != "unknown" and p["files"] == p["bus"] and p["files_logind_present"]


def compare_views(m, v, who, loginctl=None):
    for p in v["places"]:
        check(same_place(p), "%s: sd-login's files place it as logind's bus does (%s)" % (
            who[p["pid"]], "no session" if p["bus"] == "none" else p["bus"]), p, fatal=False)
        want = (loginctl or {}).get(p["pid"])
        if want is not None and p["files"] is not None:
            check(p["files"] == want, "%s: and as loginctl shows it" % who[p["pid"]], (p["files"], want), fatal=False)
    u = v["user"]
    check(u["files_has_local_session"] == u["bus_has_local_session"]
          and u["files_active_on_a_seat"] == u["bus_active_on_a_seat"],
          "uid %d: a local session / one active on a seat: the files say %s / %s, the bus %s / %s" % (
              u["uid"], u["files_has_local_session"], u["files_active_on_a_seat"], u["bus_has_local_session"],
              u["bus_active_on_a_seat"]), u, fatal=False)


def loginctl_session(m, sid):
    """A session as loginctl shows it, in the shape localauth-bench prints."""
    out = m.out("loginctl show-session %s -p Id -p User -p Class -p Seat -p Active -p Remote" % sid)
    p = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    return {"id": p["Id"], "uid": int(p["User"]), "class": p["Class"], "seat": p["Seat"] or None,
            "active": p["Active"] == "yes", "remote": p["Remote"] == "yes"}


def session_id_of(m, user):
    return [l.split()[0] for l in m.out("loginctl list-sessions --no-legend").splitlines() if l.split()[2] == user][0]


def journey_logind(m, args):
    """(l, after b) logind's answers from sd-login's files: for alice's console session, a session
    of bob's in front, alice's user manager and a system service, the daemon's code reads the same
    session (id, uid, class, seat, active, remote) from the files as logind gives over the bus;
    what the daemon asks logind per pam_authenticate (dbus-monitor), in a session and outside one;
    the files' read against a bus round trip; the boot id the daemon records is the machine's."""
    import statistics
    os.makedirs(m.root + TIER_LIB, exist_ok=True)
    shutil.copy(args.bench, m.root + TIER_LIB + "/localauth-bench")
    uid, bob_uid = int(m.out("id -u %s" % ALICE)), int(m.out("id -u %s" % BOB))
    sess = session_of(m, ALICE)
    check(sess is not None and sess.get("Active") == "yes", "alice's console session is in front", sess)
    mark, s, _ = run_at_console(m, "echo shell=$$")
    shell = int(re.findall(r"^shell=(\d+)$", s, re.M)[-1])
    m.sh("systemd-run --quiet --unit=tier-nosession sleep 600")
    service = int(m.out("systemctl show -p MainPID --value tier-nosession").strip())
    manager = int(m.out("systemctl show -p MainPID --value user@%d.service" % uid).strip())
    who = {shell: "alice's shell at the console", service: "a system service's process",
           manager: "alice's user manager (a process of hers in no session)"}
    v = views(m, uid, [shell, service, manager], runs=500)
    show("localauth-bench logind: the files' and the bus's views", json.dumps(
        {"places": v["places"], "user": v["user"]}, indent=1))
    compare_views(m, v, who, {shell: loginctl_session(m, session_id_of(m, ALICE))})
    t = v["timing_ns"]
    for key, label in (("files", "sd-login's files: a caller's session (view of alice's shell)"),
                       ("bus_session", "logind over the bus: GetSessionByPID + the session's GetAll"),
                       ("bus_lid", "logind over the bus: LidClosed alone"),
                       ("files_none", "sd-login's files: no session (a system service's process)"),
                       ("bus_none", "logind over the bus: GetSessionByPID for it (NoSessionForPID)"),
                       ("boot_id_own", "the boot id from its own /proc (open, read, close)"),
                       ("boot_id_pid1", "the boot id as PID 1 sees it (/proc/1/root/proc/...)")):
        xs = sorted(t[key])
        figure("%s, median of %d (p95 %.1f us)" % (label, len(xs), xs[int(0.95 * (len(xs) - 1))] / 1000),
               statistics.median(xs) / 1000, "us")

    # What the daemon asks logind per pam_authenticate through the socket.
    m.write("/etc/pam.d/tier-logind", "auth required pam_localauth.so timeout=10\n")
    runs = 3

    def at_console():
        for _ in range(runs):
            mark, s, _ = run_at_console(m, "pamtester tier-logind %s authenticate" % ALICE,
                                        lambda s: re.search(r"(?i)(place|touch)", s), "the finger prompt")
            touch_when_listening(m, FINGER)
            s, _ = prompt_back(m, mark)
            check(rc_of(s) == 0 and "successfully authenticated" in s, "pamtester at alice's console: a finger", s)

    def from_service(expect_ok):
        def body():
            for i in range(runs):
                p = subprocess.Popen(m.argv("systemd-run --quiet --wait --pipe --collect -p User=%s "
                                            "pamtester tier-logind %s authenticate" % (ALICE, ALICE)),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
                if expect_ok:
                    touch_when_listening(m, FINGER)
                out, _ = p.communicate(timeout=30)
                check((p.returncode == 0) == expect_ok, "pamtester as alice in a system service (no session): %s" % (
                    "a finger" if expect_ok else "refused, alice not in front"), out)
        return body

    counts = {}
    for phase, body in (("in alice's console session", at_console),
                        ("in no session (a service of alice's), alice in front", from_service(True))):
        calls, names = login1_calls(m, body)
        counts[phase] = calls
        show("calls from the daemon (%s) to logind, %d pam_authenticate %s" % (", ".join(sorted(names)), runs, phase),
             "\n".join(calls) or "(none)")

    # bob's session in front on seat0 (a seat without VTs: the newest session is the active one).
    m.sh("setsid su -s /bin/sh -c 'exec sleep 600' %s </dev/null >/dev/null 2>&1 &" % BOB)
    deadline = time.monotonic() + 30  # a bound on a hang: logind and su in their own time
    while time.monotonic() < deadline:
        bob = session_of(m, BOB)
        if bob and bob.get("Active") == "yes" and m.sh("pgrep -u %s -x sleep" % BOB, check=False).returncode == 0:
            break
        time.sleep(0.1)
    check(bob is not None and bob.get("Active") == "yes" and session_of(m, ALICE).get("Active") == "no",
          "logind: bob's session is in front on seat0, alice's behind it", (bob, session_of(m, ALICE)))
    bob_sleep = int(m.out("pgrep -u %s -x sleep" % BOB).split()[0])
    who[bob_sleep] = "bob's session's process (in front)"
    who[shell] = "alice's shell (her session behind bob's)"
    v = views(m, uid, [shell, bob_sleep, service])
    show("the views with bob in front", json.dumps({"places": v["places"], "user": v["user"]}, indent=1))
    compare_views(m, v, who, {shell: loginctl_session(m, session_id_of(m, ALICE)),
                              bob_sleep: loginctl_session(m, session_id_of(m, BOB))})
    calls, _ = login1_calls(m, from_service(False))
    counts["in no session (a service of alice's), alice not in front"] = calls
    show("calls from the daemon to logind, %d pam_authenticate in no session, alice not in front" % runs,
         "\n".join(calls) or "(none)")
    m.sh("pkill -u %s -x sleep" % BOB, check=False)
    m.sh("loginctl activate %s" % session_id_of(m, ALICE))
    check(session_of(m, ALICE).get("Active") == "yes", "alice's session is in front again")
    m.sh("systemctl stop tier-nosession", check=False)
    os.remove(m.root + "/etc/pam.d/tier-logind")
    shutil.rmtree(m.root + TIER_LIB)
    for phase, calls in counts.items():
        asked = [c for c in calls if c in SESSION_QUESTIONS]
        figure("logind questions per pam_authenticate %s (%s)" % (phase, ", ".join(sorted(set(calls))) or "none"),
               len(calls) / runs, "")
        check(not asked, "%s: the daemon asks logind nothing about sessions (sd-login's files answer): %d questions"
              % (phase, len(asked)), calls, fatal=False)

    # The boot id the daemon records is the machine's (systemd-nspawn gives the container one of its
    # own), not the host kernel's.
    container = m.out("cat /proc/sys/kernel/random/boot_id").strip().replace("-", "")
    host = open("/proc/sys/kernel/random/boot_id").read().strip().replace("-", "")
    record = open(m.root + "/var/lib/localauthd/users/%s/password" % ALICE).read()
    recorded = re.search(r"^password=(\w+) ", record, re.M)
    show("alice's password-use record; the container's boot id %s, the host kernel's %s" % (container, host), record)
    check(container != host and recorded is not None and recorded.group(1) == container,
          "the daemon records alice's password under the booted system's boot id, not the host kernel's",
          record, fatal=False)

    # DESIGN.md: a boot id mounted over the daemon's own path is the boot id, even under systemd
    # (a unit's BindReadOnlyPaths=, as tests replace it): PID 1's view must not hide it.
    dropin = "/etc/systemd/system/localauthd.service.d/tier-boot-id.conf"
    m.write("/etc/tier-boot-id", "0badc0de-0000-4000-8000-000000000001\n")
    m.write(dropin, "[Service]\nBindReadOnlyPaths=/etc/tier-boot-id:/proc/sys/kernel/random/boot_id\n")
    m.sh("systemctl daemon-reload && systemctl restart localauthd.service")
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    show("localauthctl status --user alice with another boot id bound over the unit's own", r.stdout + r.stderr)
    check("Password required after restart" in r.stdout,
          "a boot id bound over the daemon's own /proc path is its boot (\"Password required after restart\")",
          r.stdout + r.stderr, fatal=False)
    os.remove(m.root + dropin)
    os.remove(m.root + "/etc/tier-boot-id")
    m.sh("systemctl daemon-reload && systemctl restart localauthd.service")
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    check("Password required after restart" not in r.stdout,
          "without it, the booted system's boot id again: alice's password stands", r.stdout + r.stderr, fatal=False)


def journey_pkexec(m):
    """pkexec through polkit's own text agent, registered for alice's shell from a second
    terminal in her session (a tmux inside the container, started from her login shell)."""
    def registered():
        return [l for l in m.out("journalctl -b -q --no-pager -o cat -g 'Registered Authentication Agent'",
                                 check=False).splitlines() if "pkttyagent" in l]
    before = len(registered())
    mark, s, _ = run_at_console(m, 'tmux new-session -d -s agent -x 150 -y 30 "pkttyagent --process $$"')
    check(rc_of(s) == 0, "a second terminal in alice's session runs pkttyagent --process <her shell>", s)
    uid = int(m.out("id -u %s" % ALICE))

    def agent():
        return m.out("tmux -S /tmp/tmux-%d/default capture-pane -p -J -t agent" % uid, user=ALICE, check=False)
    # pkexec finds no agent until polkitd has registered this one: its journal line says so
    # (before, a 0.5 s sleep stood for it).
    m.wait_for(lambda a: len(a.splitlines()) > before, "polkitd's \"Registered Authentication Agent\" for pkttyagent",
               screen=lambda: "\n".join(registered()), timeout=30)
    mark, s, _ = run_at_console(m, "pkexec whoami", lambda s: True)
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
    # The examples turn the module on per service instead of the profile (pam/examples/README.md):
    # with both, common-auth runs it a second time.
    m.sh("pam-auth-update --disable localauth")
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
        check(PROMPT not in s and "not from the terminal in front" in s,
              "login at a console that is not the VT in front: no finger offered, the reason shown", s)
        check(s.count("Fingerprint not available") == 1, "login: the reason in one line", s, fatal=False)
        m.type_line("PS1='$ '")
        m.wait_for(lambda s: s.rstrip().endswith("\n$"), "the short prompt", since=mark)
    finally:
        with open(m.root + "/etc/pam.d/login", "wb") as f:
            f.write(saved)
        m.sh("pam-auth-update --enable localauth")


def read_until(proc, text, timeout):
    """What proc wrote until text appeared (or it ended, or timeout)."""
    import select
    out, fd, t0 = "", proc.stdout.fileno(), time.monotonic()
    while text not in out and time.monotonic() - t0 < timeout:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096).decode(errors="replace")
            if not chunk:
                break
            out += chunk
    return out


def last_cursor(m):
    recs = m.journal("-n", "1")
    return recs[-1]["__CURSOR"] if recs else ""


def evaluations_after(m, cursor, until=lambda recs: len(recs) >= 1, timeout=30):
    """The evaluation records after cursor; waits (journald stores them a moment after the
    daemon sent them) until until(records) holds, or timeout (a bound on a hang only: the caller
    checks what it got)."""
    import json
    t0 = time.monotonic()
    while True:
        # Every entry after the cursor, filtered here: journalctl 252 with --after-cursor and a
        # match skips the first matching entry when the cursor's own entry does not match.
        out = m.out("journalctl -o json --no-pager --after-cursor='%s'" % cursor, check=False)
        recs = [r for r in (json.loads(l) for l in out.splitlines() if l.startswith("{"))
                if r.get("_SYSTEMD_UNIT") == "localauthd.service" and r.get("LOCALAUTH_OPERATION") == "evaluate"]
        if until(recs) or time.monotonic() - t0 > timeout:
            return recs
        time.sleep(0.1)


def walk(root):
    skip = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/log/journal", "/var/cache", "/var/lib/apt/lists",
            "/home", "/root/debs", "/var/lib/systemd", "/root/.", "/var/tmp", "/var/log")
    for dirpath, dirnames, filenames in os.walk(root):
        rel = dirpath[len(root):] or "/"
        if rel.startswith(skip):
            dirnames[:] = []
            continue
        for n in filenames + dirnames:
            path = os.path.join(rel, n)
            if not path.startswith(skip):
                yield path


def nice_limit(m, path, hard=False):
    """RLIMIT_NICE (as the kernel keeps it, 0-40) from a /proc/PID/limits inside."""
    for l in m.out("cat %s" % path, check=False).splitlines():
        if l.startswith("Max nice priority"):
            return int(l.split()[4 if hard else 3])
    return 0


def unit(m, *props):
    out = m.out("systemctl show localauthd.service " + " ".join("-p " + p for p in props))
    return dict(l.split("=", 1) for l in out.splitlines() if "=" in l)


def wait_unit(m, cond, what, timeout=20):
    t0 = time.monotonic()
    while True:
        u = unit(m, "ActiveState", "SubState", "MainPID", "NRestarts", "Result")
        if cond(u):
            return u, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            check(False, what, u)
        time.sleep(0.1)


def journey_c(m, args):
    """(c) idle exit and re-activation; systemctl restart during a verify; kill -9; the watchdog."""
    # systemd allows a unit 5 starts in 10 s (StartLimitBurst=, StartLimitIntervalSec=): this
    # journey starts it 5 times in a few seconds, so the starts of journeys a and b leave first.
    time.sleep(10)
    m.write("/etc/localauthd.conf.d/test-idle.conf", "idle-exit-seconds = 2\n")
    m.sh("systemctl restart localauthd.service")
    before = unit(m, "MainPID", "NRestarts")
    u, took = wait_unit(m, lambda u: u["ActiveState"] == "inactive", "the daemon exits when idle", timeout=30)
    check(u["Result"] == "success" and u["NRestarts"] == before["NRestarts"],
          "idle exit after %.1f s: a clean stop, not a failure or a restart" % took, u)
    check(m.out("systemctl is-active localauthd.socket", check=False).strip() == "active",
          "the socket stays while the daemon is away")
    t0 = time.monotonic()
    r = m.sh("localauthctl status", user=ALICE, check=False)
    figure("re-activation after idle exit (localauthctl status)", time.monotonic() - t0)
    u = unit(m, "ActiveState", "MainPID")
    check(r.returncode == 0 and u["ActiveState"] == "active" and u["MainPID"] != before["MainPID"],
          "the next request starts it again and is answered", (r.stdout, r.stderr, u))
    os.remove(m.root + "/etc/localauthd.conf.d/test-idle.conf")
    m.sh("systemctl stop localauthd.service")

    # systemctl restart while a verify waits for the finger: the client is told, nothing hangs.
    mark, s, _ = run_at_console(m, "localauthctl verify", lambda s: re.search(r"(?i)(finger|touch|place)", s),
                                "verify waits for the finger")
    pid = unit(m, "MainPID")["MainPID"]
    t0 = time.monotonic()
    m.sh("systemctl restart localauthd.service")
    s, _ = prompt_back(m, mark, timeout=15)
    figure("systemctl restart during a verify -> the client's answer", time.monotonic() - t0)
    show("localauthctl verify, then systemctl restart localauthd", s)
    check(rc_of(s) is not None, "systemctl restart during a verify: nothing hangs", s)
    check(rc_of(s) == 1 and re.search(r"(?i)cancel", s), "the waiting verify is told it was cancelled (exit 1)", s, fatal=False)
    deadline = time.monotonic() + 30  # journald stores the stopped daemon's last record a moment later
    while time.monotonic() < deadline:
        recs = [r for r in evaluations(m) if r.get("_PID") == pid]
        if recs and recs[-1].get("LOCALAUTH_RESULT") == "systemCancel":
            break
        time.sleep(0.1)
    check(recs and recs[-1].get("LOCALAUTH_RESULT") == "systemCancel", "the journal: systemCancel from the stopped daemon",
          [(r.get("LOCALAUTH_SERVICE"), r.get("LOCALAUTH_RESULT")) for r in recs], fatal=False)
    mark, s, _ = run_at_console(m, "localauthctl verify", lambda s: re.search(r"(?i)(finger|touch|place)", s),
                                "verify waits for the finger")
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    check(rc_of(s) == 0, "the restarted daemon takes the finger", s)

    # kill -9: systemd starts it again (Restart=on-failure); the socket survives.
    u0 = unit(m, "MainPID", "NRestarts")
    t0 = time.monotonic()
    m.sh("kill -9 %s" % u0["MainPID"])
    u, took = wait_unit(m, lambda u: u["ActiveState"] == "active" and u["MainPID"] not in ("0", u0["MainPID"]),
                        "systemd starts the daemon again after kill -9")
    figure("kill -9 -> running again", took)
    check(int(u["NRestarts"]) == int(u0["NRestarts"]) + 1, "kill -9: one restart by systemd", u)
    check(m.out("systemctl is-active localauthd.socket", check=False).strip() == "active"
          and m.sh("localauthctl status", user=ALICE, check=False).returncode == 0,
          "kill -9: the socket survives and answers")

    # The watchdog: a release build has no hook that stalls the event loop, so the whole process
    # is stopped (SIGSTOP): no ping for WatchdogSec (30 s), systemd aborts it and starts it again.
    u0 = unit(m, "MainPID", "NRestarts")
    t0 = time.monotonic()
    m.sh("kill -STOP %s" % u0["MainPID"])
    u, took = wait_unit(m, lambda u: u["ActiveState"] == "active" and u["MainPID"] not in ("0", u0["MainPID"]),
                        "the watchdog ends a daemon that stopped answering", timeout=60)
    figure("SIGSTOP -> restarted by the watchdog", took)
    wd = m.out("journalctl -b -q --no-pager -u localauthd.service -g 'atchdog'", check=False)
    show("the journal on the watchdog", wd)
    check("Watchdog timeout" in wd and 25 < took < 50, "the watchdog fired after %.0f s and systemd restarted the daemon" % took, wd)

    # A daemon that cannot start (a bad value in the configuration) says why to whoever asks, and
    # the socket survives however often they ask (issue 25, item 2).
    m.write("/etc/localauthd.conf.d/test-bad.conf", "finger-attempts = many\n")
    m.sh("systemctl restart localauthd.service", check=False)
    answers = [m.sh("localauthctl status", user=ALICE, check=False) for _ in range(8)]
    show("localauthctl status with 'finger-attempts = many' (the first of 8)", answers[0].stdout + answers[0].stderr)
    check(all(a.returncode != 0 and "finger-attempts" in a.stdout + a.stderr for a in answers),
          "a daemon that cannot start: each of 8 requests is told why (the file's bad line)",
          [(a.returncode, a.stdout + a.stderr) for a in answers])
    check(m.out("systemctl is-active localauthd.socket", check=False).strip() == "active"
          and m.sh("test -S /run/localauthd/socket", check=False).returncode == 0,
          "the socket survives the failed starts")
    mark, s, _ = run_at_console(m, "sudo -k; sudo whoami", SUDO_PROMPT, "sudo's own password prompt")
    m.type_line(ALICE_PW)
    s, _ = prompt_back(m, mark)
    show("sudo whoami while the daemon cannot start", s)
    check(has_line(s, r"^root$") and "finger-attempts" in s,
          "sudo says why there is no finger and the password gives root", s)
    os.remove(m.root + "/etc/localauthd.conf.d/test-bad.conf")
    m.sh("systemctl restart localauthd.service")
    check(m.sh("localauthctl status", user=ALICE, check=False).returncode == 0, "fixed, the daemon serves again")

    # A reboot: the finger and the counters are where they were; the console login takes the
    # password (the console is not the virtual terminal in front), and reports it; then sudo
    # takes the finger.
    took = m.reboot()
    figure("reboot (poweroff, boot again)", took)
    # A boot for the daemon too: it reads the boot id PID 1 sees (systemd-nspawn's for the
    # container), not its own procfs's (the host kernel's, under ProtectProc=); so the finger
    # waits for the password (ADR 0007).
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    show("localauthctl status --user alice after the reboot, before any password", r.stdout + r.stderr)
    check("Password required after restart" in r.stdout,
          "after the reboot the finger waits for the password (\"Password required after restart\")",
          r.stdout + r.stderr, fatal=False)
    m.wait_for(lambda s: s.rstrip().endswith("login:"), "the console's login prompt after the reboot", since=m.mark() - 200, timeout=60)
    mark = m.mark()
    s, _ = console_login(m, ALICE, ALICE_PW)
    show("the console after the reboot: alice logs in", s)
    check(PROMPT not in s, "after a reboot the console login asks the password, no finger", s)
    mark, s, _ = run_at_console(m, "sudo -k; sudo whoami", PROMPT, "the finger prompt")
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("sudo whoami after the reboot and the login by password, a finger", s)
    check(has_line(s, r"^root$") and rc_of(s) == 0, "after the reboot and the password: sudo takes the finger", s)


def journey_d(m, args):
    """(d) the fprintd-compatible package: D-Bus activation, Debian's fprintd-list and
    fprintd-verify with the real polkitd and logind; the mode survives a local unit drop-in."""
    compat = os.path.basename(args.compat)
    r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./%s" % compat, check=False)
    show("apt-get install -y ./%s (last lines)" % compat, "\n".join(r.stdout.splitlines()[-4:]) + r.stderr)
    check(r.returncode == 0 and "Failed" not in r.stdout + r.stderr, "apt-get install ./%s" % compat, r.stdout + r.stderr)
    m.compat_installed = True
    m.sh("systemctl stop localauthd.service")
    mark, s, took = run_at_console(m, "fprintd-list %s" % ALICE)
    show("fprintd-list alice (Debian's tool, at alice's console)", s)
    check(rc_of(s) == 0 and "right-index-finger" in s, "fprintd-list: the bus starts localauthd and it lists alice's finger", s)
    figure("fprintd-list with D-Bus activation", took)
    act = m.out("journalctl -b -q --no-pager -u dbus.service -g net.reactivated.Fprint", check=False)
    check("Activating via systemd" in act and "localauthd.service" in act, "dbus-daemon activated localauthd.service", act)
    mark, s, _ = run_at_console(m, "fprintd-verify", "Verify started", "fprintd-verify waits")
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("fprintd-verify (alice), a finger", s)
    check(rc_of(s) == 0 and "verify-match" in s, "fprintd-verify: polkitd allows alice's active session, the finger matches", s)
    r = m.sh("fprintd-list %s" % ALICE, user=BOB, check=False)
    show("fprintd-list alice, run by bob outside any session", r.stdout + r.stderr)
    check(r.returncode != 0 and "right-index-finger" not in r.stdout and "may act only for its own account" in r.stdout + r.stderr,
          "another user's fingers: refused (the daemon's own rule, before polkit)", r.stdout + r.stderr)
    r = m.sh("fprintd-list %s" % BOB, user=BOB, check=False)
    show("fprintd-list bob, run by bob outside any session", r.stdout + r.stderr)
    check(r.returncode != 0 and re.search(r"(?i)not authori[sz]ed", r.stdout + r.stderr)
          and "may act only" not in r.stdout + r.stderr,
          "bob's own fingers from outside any session: polkitd refuses (no active session)", r.stdout + r.stderr)
    # A local drop-in that replaces ExecStart= (issue 25: it dropped --fprintd-compat) keeps the
    # mode, which the configuration sets now.
    m.write("/etc/systemd/system/localauthd.service.d/local.conf",
            "[Service]\nExecStart=\nExecStart=/usr/sbin/localauthd\n")
    m.sh("systemctl daemon-reload && systemctl stop localauthd.service")
    mark, s, took = run_at_console(m, "fprintd-list %s" % ALICE)
    check(rc_of(s) == 0 and "right-index-finger" in s and took < 10,
          "with a local ExecStart= drop-in the bus still starts the fprintd mode (%.1f s)" % took, s)
    os.remove(m.root + "/etc/systemd/system/localauthd.service.d/local.conf")
    os.rmdir(m.root + "/etc/systemd/system/localauthd.service.d")
    m.sh("systemctl daemon-reload && systemctl restart localauthd.service")


def journey_desktop(m, args):
    """(item 4) GDM's fingerprint service after the switch: Debian's gdm-fingerprint stack names
    pam_fprintd.so, which leaves with libpam-fprintd; pam/examples/gdm-fingerprint in its place
    takes the finger through the real libpam in the user's session (the lock screen's case)."""
    gdm = "/usr/local/share/boot-tier/gdm3/gdm-fingerprint"
    m.sh("cp %s /etc/pam.d/gdm-fingerprint" % gdm)
    check(not m.exists("/usr/lib/x86_64-linux-gnu/security/pam_fprintd.so"), "pam_fprintd.so is not installed (libpam-fprintd went with fprintd)")
    r = m.sh("pamtester gdm-fingerprint %s authenticate" % ALICE, check=False, input="\n")
    show("pamtester gdm-fingerprint alice authenticate (Debian's gdm3 stack)", r.stdout + r.stderr)
    check(r.returncode != 0, "Debian's gdm-fingerprint fails after the switch: its pam_fprintd.so is gone", r.stdout + r.stderr)
    shutil.copy(os.path.join(REPO, "pam/examples/gdm-fingerprint"), m.root + "/etc/pam.d/gdm-fingerprint")
    mark, s, _ = run_at_console(m, "sudo -k; sudo pamtester gdm-fingerprint %s authenticate" % ALICE, PROMPT, "sudo's finger prompt")
    m.touch(FINGER)
    m.wait_for(lambda s: s.count(PROMPT) >= 1 and re.search(r"(?i)(finger|place)", s.split(PROMPT, 1)[1]),
               "gdm-fingerprint asks for the finger", since=mark)
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("sudo pamtester gdm-fingerprint alice authenticate (pam/examples/gdm-fingerprint), in alice's session", s)
    check(rc_of(s) == 0 and "successfully authenticated" in s,
          "pam/examples/gdm-fingerprint: a finger authenticates alice from her own session", s)

    # A locker's stack (pam/examples/swaylock, password_first), run by alice in her session as a
    # locker runs: Enter alone asks for the finger.
    shutil.copy(os.path.join(REPO, "pam/examples/swaylock"), m.root + "/etc/pam.d/swaylock")
    mark, s, _ = run_at_console(m, "pamtester swaylock %s authenticate" % ALICE, lambda s: re.search(r"(?i)password.*: *$", s),
                                "the locker stack's first question")
    m.keys("Enter")
    m.wait_for(lambda s: re.search(r"(?i)place", s), "the locker stack asks for the finger", since=mark)
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("pamtester swaylock alice authenticate (pam/examples/swaylock, as alice): Enter, a finger", s)
    check(rc_of(s) == 0 and "successfully authenticated" in s, "the locker's stack: Enter, then a finger unlocks", s)
    os.remove(m.root + "/etc/pam.d/swaylock")

    # The login screen: a greeter-class session in front on seat0 (as GDM's greeter has), and
    # root's worker in it (pam/examples/gdm-fingerprint for the name typed there, alice).
    m.sh("useradd --system -M -s /usr/sbin/nologin greeter")
    m.sh("XDG_SESSION_CLASS=greeter setsid su -s /bin/sh -c 'exec sleep 600' greeter </dev/null >/dev/null 2>&1 &")
    greeter = None
    deadline = time.monotonic() + 30  # a bound on a hang: logind and su in their own time
    while time.monotonic() < deadline:
        # The session exists once su opened it; its process (su's child) a moment later.
        greeter = session_of(m, "greeter")
        if greeter and m.sh("pgrep -u greeter -x sleep", check=False).returncode == 0:
            break
        time.sleep(0.1)
    check(greeter is not None and greeter.get("Class") == "greeter" and greeter.get("Active") == "yes"
          and greeter.get("Seat") == "seat0", "logind: a greeter-class session is in front on seat0", greeter)
    # The session's own process (su's child; su itself was started from outside the container's
    # cgroups, and its path reads as "/.." from in there).
    scope = [l for l in m.out("cat /proc/$(pgrep -u greeter -x sleep)/cgroup").splitlines()
             if l.startswith("0::")][0].split("::", 1)[1].strip()
    check(scope.endswith(".scope"), "the greeter session's scope: %s" % scope)
    worker = subprocess.Popen(
        ["nsenter", "-t", str(m.leader), "-a", "-r", "-w", "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "sh", "-c",
         "for h in systemd unified; do [ -d /sys/fs/cgroup/$h%s ] && echo $$ > /sys/fs/cgroup/$h%s/cgroup.procs; done; "
         "grep -q session- /proc/$$/cgroup || { echo not in the greeter session: $(cat /proc/$$/cgroup); exit 9; }; "
         "exec stdbuf -o0 -e0 pamtester gdm-fingerprint %s authenticate" % (scope, scope, ALICE)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cursor = last_cursor(m)
    out = read_until(worker, "Place", 20)
    m.touch(FINGER)
    rest, _ = worker.communicate(timeout=30)
    out += rest
    show("pamtester gdm-fingerprint alice authenticate, root in the greeter's session", out)
    recs = evaluations_after(m, cursor, lambda recs: any(r.get("LOCALAUTH_RESULT") == "success" for r in recs))
    check(worker.returncode == 0 and "successfully authenticated" in out and recs
          and recs[-1].get("LOCALAUTH_RESULT") == "success",
          "pam/examples/gdm-fingerprint from a greeter-class session: alice's finger logs her in", (out, recs))
    m.sh("pkill -u greeter sleep", check=False)
    sess = [l.split()[0] for l in m.out("loginctl list-sessions --no-legend").splitlines() if " %s " % ALICE in l]
    m.sh("loginctl activate %s" % sess[0])
    check(session_of(m, ALICE).get("Active") == "yes", "alice's session is in front again")
    os.remove(m.root + "/etc/pam.d/gdm-fingerprint")


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
    left = sorted(set(walk(m.root)) - m.files_before)
    left = [p for p in left if not p.startswith(("/var/lib/dpkg", "/etc/.pwd.lock", "/etc/passwd", "/etc/shadow",
                                                  "/etc/group", "/etc/gshadow", "/etc/subuid", "/etc/subgid",
                                                  "/var/lib/pam/", "/var/lib/sudo", "/var/lib/polkit-1",
                                                  "/etc/security/pam_env.conf"))]
    # What apt pulled in for the Recommends (the TPM libraries, tpm-udev, udev) stays installed,
    # as apt leaves it (systemd suggests those libraries, so autoremove keeps them): their files
    # are theirs, and so is what their maintainer scripts made.
    added = sorted(set(installed_packages(m)) - set(m.packages_before))
    def names(p):
        """Where dpkg knows p: merged /usr (dpkg lists /lib/…, /bin/…), and an init script's
        rc?.d links (update-rc.d's) by the script."""
        rc = re.match(r"/etc/rc[0-6S]\.d/[SK]\d\d(.+)$", p)
        if rc:
            return ["/etc/init.d/" + rc.group(1)]
        for usr, top in (("/usr/lib/", "/lib/"), ("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
            if p.startswith(usr):
                return [p, top + p[len(usr):]]
        return [p]
    owners = {}
    queried = sorted({n for p in left for n in names(p)})
    for line in m.out("dpkg-query -S %s 2>/dev/null" % " ".join("'%s'" % n for n in queried), check=False).splitlines():
        pkgs_of, _, path = line.partition(": ")
        owners[path] = [o.split(":")[0] for o in pkgs_of.split(", ")]
    theirs = [p for p in left if any(o in added for n in names(p) for o in owners.get(n, []))
              or (p == "/var/lib/tpm" and "tpm-udev" in added)  # the tss account's home
              or (p == "/usr/lib/udev/hwdb.bin" and "udev" in added)]  # udev's postinst builds it
    show("left by the packages apt added for the Recommends, which stay installed (%s)" % ", ".join(added),
         "%d paths" % len(theirs))
    left = [p for p in left if p not in theirs]
    check(not left, "nothing is left that the packages or the daemon made", "\n".join(left))
    run_left = [p for p in ("/run/localauthd", "/var/lib/localauthd", "/var/lib/localauthd.key",
                            "/var/lib/private/localauthd") if m.exists(p)]
    check(not run_left, "no state, key or runtime directory is left", run_left)
    check(m.sh("grep -qx localauth /var/lib/pam/seen", check=False).returncode != 0, "the profile is unregistered")


FIXTURE = os.path.join(REPO, "Tests/Fixtures/state/localauthd-0.1.0.tar")


def put_fixture(m, user_state_header=None):
    """The fixture's state directory and key in place, the key where version 0.1.0 kept it
    (/var/lib/localauthd.key, beside the state directory). user_state_header: alice's record
    rewritten with this version line (and its checksum made right again)."""
    import tarfile
    import zlib
    with tarfile.open(FIXTURE) as t:
        t.extractall(m.root, numeric_owner=True)
    os.rename(m.root + "/var/lib/localauthd-key/sealing.key", m.root + "/var/lib/localauthd.key")
    os.rmdir(m.root + "/var/lib/localauthd-key")
    if user_state_header:
        path = m.root + "/var/lib/localauthd/users/alice/state"
        body = open(path, "rb").read().split(b"\n")
        body = b"\n".join([user_state_header.encode()] + body[1:-2]) + b"\n"
        with open(path, "wb") as f:
            f.write(body + b"crc32=%08x\n" % (zlib.crc32(body) & 0xffffffff))


def journey_f(m, args):
    """(f) an upgrade over a state directory an earlier package wrote (Tests/Fixtures/state:
    alice's finger, two failed fingers, a passcode, a right; the key where 0.1.0 kept it); and a
    state from a newer format, refused and never rewritten."""
    import hashlib
    put_fixture(m)
    deb = os.path.basename(args.deb)
    r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./%s" % deb, check=False)
    check(r.returncode == 0, "apt-get install over the earlier state", r.stdout + r.stderr)
    check(m.exists("/var/lib/localauthd-key/sealing.key") and not m.exists("/var/lib/localauthd.key"),
          "postinst moved the sealing key from /var/lib/localauthd.key into /var/lib/localauthd-key")
    state = open(m.root + "/var/lib/localauthd/users/alice/state").read()
    m.write(READER_DROPIN, "virtual-reader = yes\n")
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    show("localauthctl status --user alice, after the upgrade", r.stdout + r.stderr)
    check(r.returncode == 0 and "fingers enrolled: 1" in r.stdout and "passcode set: yes" in r.stdout,
          "the finger and the passcode survive", r.stdout + r.stderr)
    state = open(m.root + "/var/lib/localauthd/users/alice/state").read()
    check("fingerFailures=2" in state, "the failed-finger count survives (2)", state)
    r = m.sh("localauthctl right show com.example.vault", user=ALICE, check=False)
    check(r.returncode == 0 and "public key" in r.stdout, "the right survives", r.stdout + r.stderr)
    # The fixture's password-use record is of another boot (the machine's boot id, which the
    # daemon reads as PID 1 sees it): the finger waits for the password.
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    check("Password required after restart" in r.stdout,
          "the earlier state's last password is of another boot: the finger waits for the password",
          r.stdout + r.stderr, fatal=False)
    # The finger itself: the password first, through a stack with the module (the profile, which
    # the purge in (e) took out, selected again), which reports it; then the finger releases the
    # right's secret.
    m.sh("pam-auth-update --enable localauth")
    mark, s, _ = run_at_console(m, "sudo -k; sudo whoami", lambda s: re.search(r"(Password or finger|password) for %s" % ALICE, s),
                                "a password prompt")
    m.type_line(ALICE_PW)
    s, _ = prompt_back(m, mark)
    check(has_line(s, r"^root$"), "sudo by password after the upgrade", s)
    mark, s, _ = run_at_console(m, "localauthctl right secret com.example.vault", lambda s: "Place" in s, "the finger prompt")
    m.touch(FINGER)
    s, _ = prompt_back(m, mark)
    show("localauthctl right secret com.example.vault, a finger", s)
    check(rc_of(s) == 0 and "vault secret 42" in s, "the earlier finger releases the earlier right's secret", s)
    m.sh("systemctl stop localauthd.service && dpkg -P localauth")

    # A newer format than this daemon knows: refused with a reason, never rewritten.
    put_fixture(m, user_state_header="localauthd-user-state 2")
    before = hashlib.sha256(open(m.root + "/var/lib/localauthd/users/alice/state", "rb").read()).hexdigest()
    r = m.sh("cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./%s" % deb, check=False)
    check(r.returncode == 0, "apt-get install over a newer state", r.stdout + r.stderr)
    m.write(READER_DROPIN, "virtual-reader = yes\n")
    r = m.sh("localauthctl status --user %s" % ALICE, check=False)
    mark, s, _ = run_at_console(m, "localauthctl verify", lambda s: "rc=" in s, "verify's answer")
    s, _ = prompt_back(m, mark)
    show("a state record of version 2: localauthctl status --user alice (root), then alice's verify", r.stdout + r.stderr + "\n" + s)
    notices = m.out("journalctl -b -q --no-pager -o cat -u localauthd.service -g 'users/alice/state'", check=False)
    show("the journal about it", notices)
    after = hashlib.sha256(open(m.root + "/var/lib/localauthd/users/alice/state", "rb").read()).hexdigest()
    check(rc_of(s) != 0 and "record version 2, newer than this localauthd's 1" in (r.stdout + r.stderr + s + notices),
          "a newer record is refused, and the reason says a newer version wrote it", (r.stdout, r.stderr, s, notices))
    check(before == after, "the newer record is never rewritten")
    m.sh("systemctl stop localauthd.service && dpkg -P localauth")
    os.remove(m.root + READER_DROPIN)
    os.rmdir(os.path.dirname(m.root + READER_DROPIN))


def installed_packages(m):
    return m.out("dpkg-query -W -f='${Package} ${db:Status-Status}\\n' | awk '$2 == \"installed\" {print $1}'"
                 ).split()


def diff_pam(before, after):
    out = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            out.append("%s changed" % k)
    return "\n".join(out)


JOURNEYS = [("a", journey_a), ("b", journey_b), ("l", journey_logind), ("s", journey_ssh), ("c", journey_c), ("d", journey_d), ("4", journey_desktop),
            ("e", journey_e), ("f", journey_f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--deb", required=True)
    ap.add_argument("--compat", required=True)
    ap.add_argument("--bench", default=os.path.join(REPO, ".build", "release", "localauth-bench"),
                    help="localauth-bench (release, as make bench links it): journey l's two views of a caller")
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
    figure("the cached root %s" % ("under an overlay" if m.overlay else "copied"), m.copy_s)
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
    bad = [what for ok, what in RESULTS if not ok]
    print("%d checks passed, %d failed; journeys that did not finish: %s" % (
        passed, len(bad), "; ".join(failed) or "none"))
    for what in bad:
        print("  failed: " + what)
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
