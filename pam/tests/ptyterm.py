# SPDX-License-Identifier: Apache-2.0
"""A program in a pseudo-terminal of its own, for the tests that need a terminal but not a
shell (pamtester at a terminal under valgrind, through every documented stack): a new
session whose controlling terminal is the pty, standard input, output and error on it, in
the foreground. "{tty}" in the command is replaced by the terminal's name (pamtester -I
tty={tty} says the person is there)."""
import fcntl
import os
import select
import signal
import subprocess
import termios
import time


class Pty:
    def __init__(self, cmd, env=None, owner=None, blocked=(), stdin=None):
        """blocked: signals the program starts with blocked (as sudo blocks SIGINT and SIGQUIT
        while it authenticates); stdin: another standard input (the pty stays the
        controlling terminal)."""
        self.master, slave = os.openpty()
        self.name = os.ttyname(slave)
        if owner is not None:
            os.chown(self.name, owner, -1)

        self.settings = termios.tcgetattr(self.master)  # the terminal as the program gets it

        def controlling_terminal():
            # start_new_session made this process a session leader; the pty on fd 1 becomes
            # its controlling terminal, with this process group in the foreground.
            fcntl.ioctl(1, termios.TIOCSCTTY, 0)
            # As a shell at a terminal starts it: Ctrl-C and Ctrl-\ at their defaults and only
            # `blocked` blocked, whatever this test run inherited (a run started in the
            # background by a shell without job control has SIGINT and SIGQUIT ignored, and the
            # program would outlive the Ctrl-C the test sends).
            for number in (signal.SIGINT, signal.SIGQUIT):
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

        self.proc = subprocess.Popen([c.replace("{tty}", self.name) for c in cmd], env=env,
                                     stdin=slave if stdin is None else stdin, stdout=slave,
                                     stderr=slave, start_new_session=True,
                                     preexec_fn=controlling_terminal)
        os.close(slave)
        self.out = ""

    def read_until(self, cond, timeout=30.0):
        """Reads what the program writes until cond(all output so far) holds or the program
        is gone; returns the output."""
        deadline = time.monotonic() + timeout
        while not cond(self.out):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("not within %.0f s; the terminal shows:\n%s" % (
                    timeout, self.out[-1500:]))
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: the program closed its side
                data = b""
            if not data:
                break
            self.out += data.decode(errors="replace")
        return self.out

    def send(self, text):
        os.write(self.master, text.encode())

    def settings_kept(self):
        """Whether the terminal's settings are what the program started with (on Linux the
        master reports the pty's own settings)."""
        return termios.tcgetattr(self.master) == self.settings

    def finish(self, timeout=30.0):
        """Reads to the end and waits for the program; returns its exit status."""
        self.read_until(lambda _: False, timeout)  # until the program's side is closed
        return self.proc.wait(timeout=timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
