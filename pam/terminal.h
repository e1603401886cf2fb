/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The caller's terminal, when the module may own it (pam_localauth(8), THE TERMINAL): one
 * prompt that takes a typed password or a finger, echo off while it is up, the signal keys
 * watched without a thread, and everything put back as it was on every way out.
 *
 * Owning means: the module's own descriptor on /dev/tty (non-blocking, close-on-exec);
 * SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGTSTP blocked and reported by a signalfd, so that a
 * poll() sees Ctrl-C, Ctrl-\, a kill, the terminal closing and Ctrl-Z at once; echo off
 * (canonical input stays on, so the kernel edits the line). la_term_close() restores the
 * terminal settings, closes both descriptors and restores the caller's signal mask, in that
 * order, so that a signal the caller does not block (su's Ctrl-C) ends it with its terminal
 * already sane.
 */
#ifndef LOCALAUTH_PAM_TERMINAL_H
#define LOCALAUTH_PAM_TERMINAL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

#include "rules.h"

/* What ended a wait on the terminal. */
enum la_term_event {
    LA_TERM_NOTHING,
    LA_TERM_LINE,      /* a line was typed (possibly empty: Enter alone) */
    LA_TERM_INTERRUPT, /* SIGINT or SIGQUIT (Ctrl-C, Ctrl-\) */
    LA_TERM_TERMINATE, /* SIGTERM */
    LA_TERM_HANGUP,    /* SIGHUP, or the terminal reports a hangup or an error */
};

struct la_term {
    enum la_term_mode mode;
    int fd;               /* the module's own descriptor on the controlling terminal, or -1 */
    int sig_fd;           /* signalfd for the watched signals, or -1 */
    sigset_t watched;     /* what sig_fd reports */
    sigset_t host_mask;   /* the caller's signal mask, put back by la_term_close */
    int mask_changed;     /* the module blocked signals */
    int interrupted_by;   /* the signal that ended the wait, or 0 */
    struct termios saved; /* the settings the caller left */
    int echo_off;         /* the module's settings are in force */
    int reading;          /* the prompt is up: a typed line is the answer */
    int mid_line;         /* the cursor is not at the start of a line */
    int64_t deadline;     /* CLOCK_MONOTONIC ms: writes never wait past it */
    char prompt[192];
};

/* Looks at the caller's terminal without changing anything and decides the mode; for
 * LA_TERM_OWN it keeps a descriptor on it. pam_tty is PAM_TTY (may be NULL). */
enum la_term_mode la_term_open(struct la_term *t, const char *pam_tty, int64_t deadline);

/* LA_TERM_OWN: blocks the watched signals and opens the signalfd. On failure the terminal is
 * not owned (mode LA_TERM_OTHER) and nothing is changed. */
int la_term_watch(struct la_term *t);

/* Puts up the prompt (echo off). 0, or -1 when the terminal cannot be set (then the module
 * carries on without it). */
int la_term_prompt(struct la_term *t, const char *prompt);

/* Stops taking typed input (Enter alone: the finger only); echo stays off. */
void la_term_stop_reading(struct la_term *t);

/* One line for the person; a live prompt is shown again under it. */
void la_term_say(struct la_term *t, const char *line);

/* Adds the terminal's and the signalfd's descriptors to fds (room for 2); returns how many. */
int la_term_pollfds(const struct la_term *t, struct pollfd *fds);

/* After poll(): what happened on the descriptors la_term_pollfds added. A typed line is
 * copied into line (NUL-terminated, newline dropped; the caller wipes it) when it fits in
 * cap - 1 bytes; a longer one is discarded and reported with *len = cap. */
enum la_term_event la_term_check(struct la_term *t, const struct pollfd *fds, int n, char *line,
                                 size_t cap, size_t *len);

/* Ends the prompt line; discard drops whatever was typed at the prompt and not sent (a finger
 * won). Nothing typed before the prompt came up is dropped. */
void la_term_end_prompt(struct la_term *t, int discard);

/* Puts everything back: terminal settings, descriptors, then the signal mask. A watched
 * signal that ended the wait is left to the caller if the caller did not block it (it is
 * delivered now, as the caller arranged: su ends), and taken if the caller blocks it (sudo
 * would otherwise refuse to run the command after a correct password). */
void la_term_close(struct la_term *t);

#endif
