/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include "terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The controlling terminal's device number (TIOCGDEV), or 0. */
static dev_t ctty_device(int fd)
{
    unsigned int v = 0;
    if (ioctl(fd, TIOCGDEV, &v) != 0)
        return 0;
    /* The kernel's new_encode_dev: minor low byte, major, then the minor's high bits. */
    return makedev((v & 0xfff00u) >> 8, (v & 0xffu) | ((v >> 12) & 0xfff00u));
}

/* Whether PAM_TTY ("/dev/pts/3", "pts/3", "tty1") is the terminal with device dev. Only
 * stat(), never open(): the name comes from the application. */
static int names_device(const char *pam_tty, dev_t dev)
{
    char path[128];
    struct stat st;
    if (pam_tty == NULL || pam_tty[0] == '\0' || dev == 0)
        return 0;
    int n = snprintf(path, sizeof path, "%s%s", pam_tty[0] == '/' ? "" : "/dev/", pam_tty);
    if (n < 0 || (size_t)n >= sizeof path || stat(path, &st) != 0)
        return 0;
    return S_ISCHR(st.st_mode) && st.st_rdev == dev;
}

enum la_term_mode la_term_open(struct la_term *t, const char *pam_tty, int64_t deadline)
{
    struct la_term_facts f;
    struct stat st;
    memset(t, 0, sizeof *t);
    memset(&f, 0, sizeof f);
    t->fd = t->sig_fd = -1;
    t->deadline = deadline;
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        dev_t dev = ctty_device(fd);
        f.ctty = dev != 0;
        f.pam_tty_names = names_device(pam_tty, dev);
        f.stdin_tty = isatty(STDIN_FILENO);
        f.stdin_ctty = f.stdin_tty && fstat(STDIN_FILENO, &st) == 0 && st.st_rdev == dev;
        f.foreground = tcgetpgrp(fd) == getpgrp();
        f.line_mode = tcgetattr(fd, &t->saved) == 0 &&
                      (t->saved.c_lflag & (ICANON | ECHO | ISIG)) == (ICANON | ECHO | ISIG);
    }
    t->mode = la_term_decide(&f);
    if (t->mode == LA_TERM_OWN)
        t->fd = fd;
    else if (fd >= 0)
        close(fd);
    return t->mode;
}

int la_term_watch(struct la_term *t)
{
    static const int signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP};
    if (t->mode != LA_TERM_OWN)
        return -1;
    sigemptyset(&t->watched);
    if (sigprocmask(SIG_SETMASK, NULL, &t->host_mask) != 0)
        goto fail;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        /* A Ctrl-Z the caller defers stays deferred; the rest are the module's to see. */
        if (signals[i] != SIGTSTP || !sigismember(&t->host_mask, SIGTSTP))
            sigaddset(&t->watched, signals[i]);
    if (sigprocmask(SIG_BLOCK, &t->watched, NULL) != 0)
        goto fail;
    t->mask_changed = 1;
    t->sig_fd = signalfd(-1, &t->watched, SFD_NONBLOCK | SFD_CLOEXEC);
    if (t->sig_fd < 0) {
        sigprocmask(SIG_SETMASK, &t->host_mask, NULL);
        t->mask_changed = 0;
        goto fail;
    }
    return 0;
fail:
    close(t->fd);
    t->fd = -1;
    t->mode = LA_TERM_OTHER;
    return -1;
}

static void write_all(struct la_term *t, const char *s, size_t len)
{
    while (len > 0 && t->fd >= 0) {
        ssize_t n = write(t->fd, s, len);
        if (n > 0) {
            s += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        /* Output stopped (Ctrl-S) or a full buffer: wait, but never past the deadline. */
        int64_t left = t->deadline - now_ms();
        struct pollfd p = {.fd = t->fd, .events = POLLOUT};
        if (n == 0 || errno != EAGAIN || left <= 0 || poll(&p, 1, (int)left) <= 0)
            return;
    }
}

static void put(struct la_term *t, const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return;
    write_all(t, s, n);
    t->mid_line = s[n - 1] != '\n';
}

static int set_echo(struct la_term *t, int off)
{
    struct termios now = t->saved;
    if (off)
        now.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    /* TCSANOW: TCSADRAIN would wait for output that Ctrl-S may hold back for ever. */
    if (tcsetattr(t->fd, TCSANOW, off ? &now : &t->saved) != 0)
        return -1;
    t->echo_off = off;
    return 0;
}

int la_term_prompt(struct la_term *t, const char *prompt)
{
    if (t->mode != LA_TERM_OWN || (!t->echo_off && set_echo(t, 1) != 0))
        return -1;
    if (prompt != t->prompt)
        snprintf(t->prompt, sizeof t->prompt, "%s", prompt);
    if (t->mid_line)
        put(t, "\n");
    put(t, t->prompt);
    t->reading = 1;
    return 0;
}

void la_term_stop_reading(struct la_term *t)
{
    t->reading = 0;
}

void la_term_say(struct la_term *t, const char *line)
{
    if (t->fd < 0)
        return;
    if (t->mid_line)
        put(t, "\n");
    put(t, line);
    put(t, "\n");
    if (t->reading)
        put(t, t->prompt);
}

int la_term_pollfds(const struct la_term *t, struct pollfd *fds)
{
    int n = 0;
    if (t->fd >= 0)
        /* Not reading: events 0 still reports a hangup. */
        fds[n++] = (struct pollfd){.fd = t->fd, .events = t->reading ? POLLIN : 0};
    if (t->sig_fd >= 0)
        fds[n++] = (struct pollfd){.fd = t->sig_fd, .events = POLLIN};
    return n;
}

/* Ctrl-Z: the terminal as the caller left it, the process stopped as the caller arranged
 * (sudo and su: the default action), and on `fg` the prompt again — if the terminal is still
 * ours to take; otherwise the finger is waited for without it. */
static void suspend(struct la_term *t)
{
    sigset_t tstp;
    int was_reading = t->reading;
    if (t->echo_off)
        set_echo(t, 0);
    if (t->mid_line)
        put(t, "\n");
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &tstp, NULL); /* stops here until SIGCONT */
    sigprocmask(SIG_BLOCK, &tstp, NULL);
    struct termios now;
    if (tcgetpgrp(t->fd) != getpgrp() || tcgetattr(t->fd, &now) != 0 ||
        (now.c_lflag & (ICANON | ECHO | ISIG)) != (ICANON | ECHO | ISIG)) {
        t->reading = 0;
        close(t->fd);
        t->fd = -1;
        return;
    }
    t->saved = now;
    if (was_reading)
        la_term_prompt(t, t->prompt);
}

enum la_term_event la_term_check(struct la_term *t, const struct pollfd *fds, int n, char *line,
                                 size_t cap, size_t *len)
{
    for (int i = 0; i < n; i++) {
        if (fds[i].fd == t->sig_fd && fds[i].revents != 0) {
            sigset_t pending;
            if (sigpending(&pending) != 0)
                return LA_TERM_NOTHING;
            static const struct {
                int sig;
                enum la_term_event ev;
            } order[] = {{SIGHUP, LA_TERM_HANGUP},
                         {SIGTERM, LA_TERM_TERMINATE},
                         {SIGINT, LA_TERM_INTERRUPT},
                         {SIGQUIT, LA_TERM_INTERRUPT}};
            for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
                if (sigismember(&t->watched, order[k].sig) && sigismember(&pending, order[k].sig)) {
                    t->interrupted_by = order[k].sig;
                    return order[k].ev;
                }
            if (sigismember(&t->watched, SIGTSTP) && sigismember(&pending, SIGTSTP))
                suspend(t);
            return LA_TERM_NOTHING;
        }
        if (fds[i].fd != t->fd || fds[i].revents == 0)
            continue;
        if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))
            return LA_TERM_HANGUP;
        /* Canonical input: POLLIN means a whole line (or end of file, Ctrl-D) is there. */
        size_t got = 0;
        int too_long = 0;
        for (;;) {
            char c;
            ssize_t r = read(t->fd, &c, 1);
            if (r == 0)
                break; /* Ctrl-D: the line so far */
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && errno == EAGAIN)
                break;
            if (r < 0)
                return LA_TERM_HANGUP;
            if (c == '\n')
                break;
            if (got + 1 < cap)
                line[got++] = c;
            else
                too_long = 1;
        }
        line[got] = '\0';
        *len = too_long ? cap : got;
        t->mid_line = 0; /* the person's Enter moved the cursor; echo is off, so say it */
        put(t, "\n");
        return LA_TERM_LINE;
    }
    return LA_TERM_NOTHING;
}

void la_term_end_prompt(struct la_term *t, int discard)
{
    t->reading = 0;
    if (t->fd < 0)
        return;
    /* Only what was typed at the module's prompt: keys typed before it came up (a person
     * without a finger typing ahead for the password prompt) are not the module's. */
    if (discard && t->echo_off)
        tcflush(t->fd, TCIFLUSH);
    if (t->mid_line)
        put(t, "\n");
}

void la_term_close(struct la_term *t)
{
    if (t->fd >= 0) {
        la_term_end_prompt(t, 0);
        if (t->echo_off)
            set_echo(t, 0);
        close(t->fd);
        t->fd = -1;
    }
    if (t->sig_fd >= 0) {
        close(t->sig_fd);
        t->sig_fd = -1;
    }
    if (t->mask_changed) {
        /* The Ctrl-C that ended the wait, if the caller blocks it: taken here, or it would
         * reach the caller later, at a moment the caller did not expect (sudo marks it and
         * then declines to run the command that the password just authorised). */
        int sig = t->interrupted_by;
        if ((sig == SIGINT || sig == SIGQUIT) && sigismember(&t->host_mask, sig)) {
            sigset_t one;
            struct timespec zero = {0, 0};
            sigemptyset(&one);
            sigaddset(&one, sig);
            while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
        sigprocmask(SIG_SETMASK, &t->host_mask, NULL);
        t->mask_changed = 0;
    }
}
