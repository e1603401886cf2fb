/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: asks localauthd whether the owner of the account is present.
 *
 * Loaded into setuid and long-lived processes (sudo, su, login, gdm, screen lockers), so it
 * reads no environment, starts no thread, allocates nothing that outlives the call, never
 * blocks past its deadline and denies whatever it does not understand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define PAM_SM_AUTH
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "codes.h"
#include "messages.h"
#include "module.h"
#include "options.h"
#include "phrases.h"
#include "rules.h"
#include "terminal.h"
#include "wire.h"

#define LA_EXPORT __attribute__((visibility("default")))

static void warn_option(void *ctx, const char *arg, const char *why)
{
    pam_syslog((pam_handle_t *)ctx, LOG_WARNING, "ignoring argument \"%s\": %s", arg, why);
}

/* What pam_sm_authenticate leaves for pam_sm_setcred and a password_used line (pam_set_data:
 * one value per handle and name, kept until pam_end). The values' addresses are the marks. */
#define LA_DATA_FINGER "pam_localauth_finger"
/* pam_unix's record of its authentication's return value, for its own pam_sm_setcred
 * (Linux-PAM modules/pam_unix/pam_unix_auth.c): PAM_SUCCESS once it accepted the password. */
#define LA_DATA_UNIX "unix_setcred_return"
static const enum la_finger_mark marks[] = {LA_FINGER_NOT_ASKED, LA_FINGER_NOT_USED,
                                            LA_FINGER_TYPED, LA_FINGER_ACCEPTED,
                                            LA_FINGER_REPORTED};

static void mark_finger(pam_handle_t *pamh, enum la_finger_mark mark)
{
    if (pam_set_data(pamh, LA_DATA_FINGER, (void *)&marks[mark], NULL) != PAM_SUCCESS)
        pam_syslog(pamh, LOG_ERR, "cannot keep this authentication's outcome for pam_setcred");
}

/* The user this transaction's pam_sm_authenticate ran for: whose password the stack checked.
 * pam_setcred reports that user and not the PAM_USER of the moment, which the application may
 * have changed in between (sudo sets the target user, root, before pam_setcred). */
#define LA_DATA_USER "pam_localauth_user"

static void free_user(pam_handle_t *pamh, void *data, int error_status)
{
    (void)pamh;
    (void)error_status;
    free(data);
}

static void keep_user(pam_handle_t *pamh)
{
    const void *user = NULL;
    char *copy = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) == PAM_SUCCESS && user != NULL)
        copy = strdup(user);
    /* Without a copy nothing is left to report: the old value goes too (the strict side). */
    if (pam_set_data(pamh, LA_DATA_USER, copy, free_user) != PAM_SUCCESS) {
        free(copy);
        pam_syslog(pamh, LOG_ERR, "cannot keep this authentication's user for pam_setcred");
    }
}

static const char *authenticated_user(pam_handle_t *pamh)
{
    const void *data = NULL;
    return pam_get_data(pamh, LA_DATA_USER, &data) == PAM_SUCCESS ? data : NULL;
}

static enum la_finger_mark finger_mark(pam_handle_t *pamh)
{
    const void *data = NULL;
    if (pam_get_data(pamh, LA_DATA_FINGER, &data) != PAM_SUCCESS || data == NULL)
        return LA_FINGER_NOT_ASKED;
    return *(const enum la_finger_mark *)data;
}

static int unix_accepted(pam_handle_t *pamh)
{
    const void *data = NULL;
    return pam_get_data(pamh, LA_DATA_UNIX, &data) == PAM_SUCCESS && data != NULL &&
           *(const int *)data == PAM_SUCCESS;
}

/* Tells the daemon that user's password just succeeded (PASSWORD_USED), within the deadline;
 * returns the daemon's RESULT message, or why there is none, in why. 0: the daemon recorded it. */
static int report_password(struct session *s, const char *user, const char *service, char *why,
                           size_t cap)
{
    struct why w; /* for syslog: its English words */
    if (la_connect_daemon(s, &w) != 0) {
        snprintf(why, cap, "%s", w.log);
        return -1;
    }
    if (la_send_frame(s, la_encode_hello(&s->w, LA_CLIENT_NAME)) != 0 ||
        la_send_frame(s, la_encode_password_used(&s->w, user, service)) != 0) {
        la_refused_or_silent(s, &w);
        snprintf(why, cap, "%s", w.log);
        return -1;
    }
    if (la_read_reply(s, s->deadline) != 0 || s->reply.type != LA_MSG_WELCOME ||
        la_read_reply(s, s->deadline) != 0 || s->reply.type != LA_MSG_RESULT) {
        snprintf(why, cap, "%s",
                 s->reply.type == LA_MSG_ERROR ? s->reply.message : LA_WHY_NO_ANSWER);
        return -1;
    }
    snprintf(why, cap, "%s", s->reply.message);
    la_replace_controls(why);
    return s->reply.code == 0 ? 0 : -1;
}

/* Reports the use of user's password (pam_sm_setcred, or a password_used line), logs the
 * outcome, and marks the transaction so that it is reported once. */
static void report(pam_handle_t *pamh, const struct la_options *opt, const char *user)
{
    const void *service = NULL;
    if (user == NULL || !la_wire_text_fits(user))
        return;
    if (pam_get_item(pamh, PAM_SERVICE, &service) != PAM_SUCCESS || service == NULL ||
        !la_wire_text_fits(service))
        service = NULL;
    struct session s;
    char why[LA_WIRE_MAX_FIELD + 64], name[128];
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.opt = opt;
    s.fd = -1;
    s.term.fd = s.term.sig_fd = -1;
    s.deadline = la_now_ms() + LA_REPORT_MS;
    int rc = report_password(&s, user, service, why, sizeof why);
    snprintf(name, sizeof name, "%s", user);
    la_replace_controls(name);
    pam_syslog(pamh, rc == 0 ? LOG_INFO : LOG_NOTICE,
               rc == 0 ? LA_LOG_PASSWORD_REPORTED : LA_LOG_PASSWORD_NOT_REPORTED, name, why);
    if (s.fd >= 0)
        close(s.fd);
    explicit_bzero(&s, sizeof s);
    if (rc == 0)
        mark_finger(pamh, LA_FINGER_REPORTED);
}

/* `password_used`, a line after the password module: PAM_AUTHTOK is still there while the stack
 * runs (libpam wipes it when pam_authenticate returns), and pam_unix's verdict on it too.
 * PAM_IGNORE: it decides nothing. */
static int password_used_line(pam_handle_t *pamh, const struct la_options *opt)
{
    const void *authtok = NULL, *rhost = NULL, *user = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &authtok) != PAM_SUCCESS)
        authtok = NULL;
    if (pam_get_item(pamh, PAM_RHOST, &rhost) != PAM_SUCCESS)
        rhost = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS)
        user = NULL;
    if (la_reports_after_password(finger_mark(pamh), unix_accepted(pamh), authtok, rhost))
        report(pamh, opt, user);
    return PAM_IGNORE;
}

LA_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    /* The catalogue for the application's language (its setlocale). Binding our own text domain
     * changes nothing else in the process; the application keeps its locale. */
    bindtextdomain(LA_TEXT_DOMAIN, LA_LOCALEDIR);
    struct la_options opt;
    struct session s;
    la_options_parse(&opt, argc, argv, warn_option, pamh);
    if (opt.password_used)
        return password_used_line(pamh, &opt);
    mark_finger(pamh, LA_FINGER_NOT_USED);
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.opt = &opt;
    s.fd = -1;
    s.term.fd = s.term.sig_fd = -1;
    s.deadline = la_now_ms() + (int64_t)opt.timeout * 1000;

    int rc = la_run(&s, (flags & PAM_SILENT) != 0);
    la_show_pending(&s, 0); /* a last miss's line not shown yet (the daemon went away) */
    keep_user(pamh);
    if (rc == PAM_SUCCESS)
        mark_finger(pamh, LA_FINGER_ACCEPTED);
    else if (s.handed_on)
        mark_finger(pamh, LA_FINGER_TYPED);

    /* The one exit: closing the connection also cancels anything still running and frees
     * the reader; then the terminal and the signal mask go back to how the caller left them. */
    if (s.fd >= 0)
        close(s.fd);
    la_term_close(&s.term);
    explicit_bzero(&s, sizeof s);
    return rc;
}

/* After a password (not a finger) got the user through the stack, tells the daemon so, for the
 * "password required" rules (docs/adr/0007-password-required.md). Never fails the caller:
 * credentials are not the module's business, and a report that cannot be made only means the
 * password is asked for once more later. */
LA_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    const void *rhost = NULL;
    struct la_options opt;
    if (pam_get_item(pamh, PAM_RHOST, &rhost) != PAM_SUCCESS)
        rhost = NULL;
    la_options_parse(&opt, argc, argv, NULL, NULL); /* pam_sm_authenticate warned already */
    if (!opt.password_used &&
        la_reports_at_setcred(flags, finger_mark(pamh), unix_accepted(pamh), rhost))
        report(pamh, &opt, authenticated_user(pamh));
    return PAM_SUCCESS;
}
