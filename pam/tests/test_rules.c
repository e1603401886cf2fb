/* SPDX-License-Identifier: Apache-2.0 */
/* The rules of pam_localauth(8) about the caller: remote sessions, the terminal, PAM_SILENT. */
#include "../rules.h"
#include "harness.h"

#include <security/pam_modules.h>
#include <stddef.h>

static void any_rhost_is_remote_localhost_included(void)
{
    const char *remote[] = {"localhost", "127.0.0.1", "::1", "far.example", "x"};
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++)
        CHECK(la_is_remote(remote[i]));
    CHECK(!la_is_remote(NULL));
    CHECK(!la_is_remote("")); /* login sets an empty PAM_RHOST on a console */
}

/* A person at a terminal, as sudo, su and login present it (measured: terminal_test.py). */
static const struct la_term_facts at_terminal = {
    .ctty = 1,
    .pam_tty_names = 1,
    .stdin_tty = 1,
    .stdin_ctty = 1,
    .foreground = 1,
    .line_mode = 1,
};

static void a_person_at_the_terminal_pam_tty_names_is_owned(void)
{
    CHECK(la_term_decide(&at_terminal) == LA_TERM_OWN);
}

static void no_controlling_terminal_or_pam_tty_elsewhere_is_the_conversation(void)
{
    struct la_term_facts f = at_terminal;
    f.ctty = 0; /* polkit's helper, gdm, cron, sudo -A from a desktop */
    CHECK(la_term_decide(&f) == LA_TERM_NONE);
    f = at_terminal;
    f.pam_tty_names = 0; /* a program started from a shell that does not say the person is there */
    CHECK(la_term_decide(&f) == LA_TERM_NONE);
    f.stdin_tty = 0; /* pkttyagent's helper: pipes, no PAM_TTY */
    CHECK(la_term_decide(&f) == LA_TERM_NONE);
}

static void standard_input_not_a_terminal_is_scripted(void)
{
    struct la_term_facts f = at_terminal;
    f.stdin_tty = f.stdin_ctty = 0; /* echo PW | sudo -S; cmd | sudo tee */
    CHECK(la_term_decide(&f) == LA_TERM_SCRIPTED);
    f.foreground = f.line_mode = 0; /* whatever else holds */
    CHECK(la_term_decide(&f) == LA_TERM_SCRIPTED);
}

static void a_terminal_not_the_modules_to_take_is_left_alone(void)
{
    struct la_term_facts f = at_terminal;
    f.stdin_ctty = 0; /* input from another terminal */
    CHECK(la_term_decide(&f) == LA_TERM_OTHER);
    f = at_terminal;
    f.foreground = 0; /* sudo cmd & */
    CHECK(la_term_decide(&f) == LA_TERM_OTHER);
    f = at_terminal;
    f.line_mode = 0; /* a full-screen program, raw mode */
    CHECK(la_term_decide(&f) == LA_TERM_OTHER);
}

static void pam_silent_is_quiet_only_without_a_terminal(void)
{
    CHECK(la_quiet(1, NULL));
    CHECK(la_quiet(1, ""));            /* sudo without a terminal */
    CHECK(la_quiet(1, "cron"));        /* cron */
    CHECK(!la_quiet(1, "/dev/pts/0")); /* sudo in a terminal: PAM_SILENT on every call */
    CHECK(!la_quiet(1, "tty1"));
    CHECK(!la_quiet(1, ":0"));
    CHECK(!la_quiet(0, NULL));
    CHECK(!la_quiet(0, "cron"));
}

static void a_password_that_got_the_stack_through_is_reported_at_setcred(void)
{
    /* typed at the module's own prompt (a screen locker, sudo's "Password or finger"), and
     * pam_unix accepted it */
    CHECK(la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_TYPED, 1, NULL));
    CHECK(
        la_reports_at_setcred(PAM_REFRESH_CRED | PAM_SILENT, LA_FINGER_TYPED, 1, "")); /* i3lock */
    /* asked by pam_unix after the module stepped aside (gdm-password, login) */
    CHECK(la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_NOT_USED, 1, NULL));
    CHECK(la_reports_at_setcred(PAM_REINITIALIZE_CRED, LA_FINGER_NOT_USED, 1, "")); /* GNOME */
}

static void a_finger_or_no_authentication_is_never_reported_at_setcred(void)
{
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_ACCEPTED, 1, NULL));
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_REPORTED, 1, NULL));
    /* cron and sshd's key logins establish credentials without pam_authenticate */
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_NOT_ASKED, 1, NULL));
    /* the module stepped aside and pam_unix did not accept anything: another method did */
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_NOT_USED, 0, NULL));
    CHECK(!la_reports_at_setcred(PAM_DELETE_CRED, LA_FINGER_TYPED, 1, NULL));
    CHECK(!la_reports_at_setcred(0, LA_FINGER_TYPED, 1, NULL));
}

static void a_typed_password_pam_unix_refused_is_never_reported_at_setcred(void)
{
    /* issue 26: typed at the module's prompt, refused by pam_unix, and a token or a
     * `sufficient` second method let the stack through; or another password module */
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_TYPED, 0, NULL));
    CHECK(!la_reports_at_setcred(PAM_REFRESH_CRED, LA_FINGER_TYPED, 0, ""));
}

static void a_password_line_after_the_password_module_reports_a_password_only(void)
{
    CHECK(la_reports_after_password(LA_FINGER_NOT_USED, 1, "pw", NULL));
    CHECK(la_reports_after_password(LA_FINGER_TYPED, 1, "pw", ""));
    CHECK(!la_reports_after_password(LA_FINGER_ACCEPTED, 1, "pw", NULL));
    CHECK(!la_reports_after_password(LA_FINGER_REPORTED, 1, "pw", NULL));
    CHECK(!la_reports_after_password(LA_FINGER_NOT_USED, 1, NULL, NULL));
    CHECK(!la_reports_after_password(LA_FINGER_NOT_USED, 1, "", NULL)); /* nullok: no password */
    /* a stack whose finger line is elsewhere, or none: pam_unix's verdict proves the password */
    CHECK(la_reports_after_password(LA_FINGER_NOT_ASKED, 1, "pw", NULL));
}

static void a_password_line_after_a_refusing_password_module_reports_nothing(void)
{
    /* issue 26: `auth required pam_unix.so` refused it and the stack went on to the line; or
     * the password module is not pam_unix */
    CHECK(!la_reports_after_password(LA_FINGER_NOT_USED, 0, "wrong", NULL));
    CHECK(!la_reports_after_password(LA_FINGER_TYPED, 0, "wrong", NULL));
    CHECK(!la_reports_after_password(LA_FINGER_NOT_ASKED, 0, "wrong", NULL));
}

static void a_password_typed_in_a_remote_session_is_never_reported(void)
{
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_TYPED, 1, "far.example"));
    CHECK(!la_reports_at_setcred(PAM_ESTABLISH_CRED, LA_FINGER_NOT_USED, 1, "localhost"));
    CHECK(!la_reports_after_password(LA_FINGER_NOT_USED, 1, "pw", "far.example"));
}

void test_rules(void)
{
    TEST(a_password_that_got_the_stack_through_is_reported_at_setcred);
    TEST(a_finger_or_no_authentication_is_never_reported_at_setcred);
    TEST(a_typed_password_pam_unix_refused_is_never_reported_at_setcred);
    TEST(a_password_line_after_the_password_module_reports_a_password_only);
    TEST(a_password_line_after_a_refusing_password_module_reports_nothing);
    TEST(a_password_typed_in_a_remote_session_is_never_reported);
    TEST(any_rhost_is_remote_localhost_included);
    TEST(a_person_at_the_terminal_pam_tty_names_is_owned);
    TEST(no_controlling_terminal_or_pam_tty_elsewhere_is_the_conversation);
    TEST(standard_input_not_a_terminal_is_scripted);
    TEST(a_terminal_not_the_modules_to_take_is_left_alone);
    TEST(pam_silent_is_quiet_only_without_a_terminal);
}
