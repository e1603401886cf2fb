/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module's decisions about its caller, as pure functions of facts gathered elsewhere, so
 * that every row of the rules in pam_localauth(8) is a unit test.
 */
#ifndef LOCALAUTH_PAM_RULES_H
#define LOCALAUTH_PAM_RULES_H

/* A session is remote when PAM_RHOST is set to anything at all. "localhost" too: sshd reports
 * loopback and tunnelled logins that way, and whoever touches the reader is not at the far end
 * of a connection. */
int la_is_remote(const char *rhost);

/* What the module may do with the caller's terminal (pam_localauth(8), THE TERMINAL). */
enum la_term_mode {
    LA_TERM_NONE,     /* no terminal of the caller's own: the conversation, as always */
    LA_TERM_OWN,      /* a person at this terminal: "Password or finger", read by the module */
    LA_TERM_SCRIPTED, /* the password comes from standard input: never wait for the reader */
    LA_TERM_OTHER,    /* a terminal the module must not take over: the conversation */
};

/* What the module found out, without changing anything. */
struct la_term_facts {
    int ctty;          /* the process has a controlling terminal */
    int pam_tty_names; /* PAM_TTY names that terminal (the application says the person is there) */
    int stdin_tty;     /* standard input is a terminal */
    int stdin_ctty;    /* ... and it is the controlling terminal */
    int foreground;    /* the process is in the terminal's foreground process group */
    int line_mode;     /* canonical input, echo and signal keys on: what a shell leaves */
};

enum la_term_mode la_term_decide(const struct la_term_facts *f);

/* Whether nothing may be shown: PAM_SILENT from a caller with no terminal in PAM_TTY. A caller
 * at a terminal is shown the finger prompt and its outcomes even under PAM_SILENT (sudo sets it
 * on every call): they are a question and its answer, not chatter. */
int la_quiet(int pam_silent, const char *pam_tty);

/* What pam_sm_authenticate left, for pam_sm_setcred and a password_used line, in this PAM
 * transaction (pam_set_data). */
enum la_finger_mark {
    LA_FINGER_NOT_ASKED, /* the module's authentication did not run in this handle */
    LA_FINGER_NOT_USED,  /* it ran and neither accepted a finger nor took a typed password */
    LA_FINGER_TYPED,     /* a password typed at its own prompt went on as PAM_AUTHTOK */
    LA_FINGER_ACCEPTED,  /* it accepted a finger (or the localauth passcode) */
    LA_FINGER_REPORTED,  /* the password's use has been reported already */
};

/* Whether pam_sm_setcred tells the daemon that the account's password was used
 * (docs/adr/0007-password-required.md). libpam has wiped PAM_AUTHTOK by then, so what counts is
 * what this transaction left: pam_unix's record that it accepted the password (its
 * "unix_setcred_return" data, unix_accepted), while the module's own authentication ran and
 * accepted no finger — whether the password was typed at the module's own prompt or asked by
 * pam_unix. Text typed at the module's prompt that pam_unix refused is not reported, even when
 * another module let the stack through; with another password module nothing is reported. Only
 * when the application establishes, reinitialises or refreshes credentials — which it does only
 * after pam_authenticate succeeded — and never for a remote session. */
int la_reports_at_setcred(int setcred_flags, enum la_finger_mark mark, int unix_accepted,
                          const char *rhost);

/* Whether a `password_used` line, placed after the password module, reports: pam_unix accepted
 * the password (unix_accepted: a line after `auth required pam_unix.so` runs also when pam_unix
 * refused it), PAM_AUTHTOK is not empty (still there during pam_authenticate), no finger was
 * accepted, nothing was reported yet, and the session is not remote. */
int la_reports_after_password(enum la_finger_mark mark, int unix_accepted, const char *authtok,
                              const char *rhost);

#endif
