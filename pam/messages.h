/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every line the module itself shows a person, in one place, marked for the catalogue (po/,
 * text domain "localauth"). They are shown in the language of the application that loaded the
 * module (its setlocale, as pam_fprintd does): la_text() looks them up with dgettext. What the
 * daemon says arrives in its frames (the English line and, from daemons that send it, the phrase
 * rendered here by phrases.c). Syslog lines stay English: LA_LOG_* and the administrator's error
 * lines beside the code that logs them are not marked.
 */
#ifndef LOCALAUTH_PAM_MESSAGES_H
#define LOCALAUTH_PAM_MESSAGES_H

#include <libintl.h>

#define LA_TEXT_DOMAIN "localauth"
/* Where the catalogues are: $(PREFIX)/share/locale, given by the Makefile. */
#ifndef LA_LOCALEDIR
#define LA_LOCALEDIR "/usr/local/share/locale"
#endif

/* Marks a line for xgettext; la_text() translates it where it is shown. */
#define N_(text) text

/* The line in the application's language (English when there is no catalogue for it). */
static inline __attribute__((format_arg(1))) const char *la_text(const char *msgid)
{
    return dgettext(LA_TEXT_DOMAIN, msgid);
}

/* TRANSLATORS: the one line at a terminal (sudo, su, login), for a typed password or a finger.
   %s is the user name. Keep the colon and the space after it. */
#define LA_TEXT_PASSWORD_OR_FINGER N_("Password or finger for %s: ")
/* TRANSLATORS: a screen locker's password question (password_first); keep the colon. */
#define LA_TEXT_PASSWORD N_("Password: ")
/* TRANSLATORS: asks for the localauth passcode (not the account password); keep the colon. */
#define LA_TEXT_PASSCODE N_("Passcode: ")
/* TRANSLATORS: sent only to a graphical caller, to learn whether it can show a message. */
#define LA_TEXT_PROBE N_("Checking for a fingerprint")
#define LA_TEXT_PASSCODE_INVALID N_("Passcode too long or not valid text")
#define LA_TEXT_PASSWORD_TOO_LONG N_("Password too long: at most 511 bytes")

/* Why the finger was not used: "Fingerprint not used: <why>" to the person (translated),
 * "fingerprint not used for <user>: <why>" in syslog (English). */
/* TRANSLATORS: %s is one of the reasons below ("a password was typed", …). */
#define LA_TEXT_NOT_USED N_("Fingerprint not used: %s")
#define LA_LOG_NOT_USED "fingerprint not used for %s: %s"
/* TRANSLATORS: %.100s is the remote host name. */
#define LA_WHY_REMOTE N_("remote session from %.100s") /* PAM_RHOST */
#define LA_WHY_TYPED N_("a password was typed")
#define LA_WHY_GIVEN N_("a password was already given")
#define LA_WHY_CANNOT_ASK N_("the application cannot ask for a password")
#define LA_WHY_NOT_INTERACTIVE N_("no terminal, and the application cannot show a message")
#define LA_WHY_STDIN N_("standard input is not a terminal, so the password is read from it")
#define LA_WHY_INTERRUPTED N_("interrupted")
#define LA_WHY_TERMINATED N_("terminated (SIGTERM)")
#define LA_WHY_TERMINAL_GONE N_("the terminal was closed")
/* TRANSLATORS: %zu is the name's length in bytes, %d the most allowed. */
#define LA_WHY_USER_TOO_LONG N_("the user name is too long (%zu bytes, at most %d)")
#define LA_WHY_USER_NOT_TEXT N_("the user name is not valid UTF-8")
#define LA_WHY_NOT_RUNNING N_("localauthd is not running")
/* TRANSLATORS: %s is the system's description of the error. */
#define LA_WHY_NO_ACCESS N_("cannot reach localauthd: %s") /* strerror */
#define LA_WHY_BUSY N_("localauthd is too busy to accept a connection")
/* TRANSLATORS: %s is the system's description of the error. */
#define LA_WHY_NO_SOCKET N_("cannot open a socket: %s") /* strerror */
/* TRANSLATORS: %u is a user id number. */
#define LA_WHY_UNTRUSTED N_("localauthd is not trusted: its socket is served by uid %u, not root")
#define LA_WHY_NO_CREDENTIALS N_("cannot tell who serves localauthd's socket")
#define LA_WHY_NO_ANSWER N_("localauthd does not answer")
/* TRANSLATORS: two protocol version numbers. */
#define LA_WHY_OTHER_VERSION N_("localauthd speaks protocol version %lld, not %d")
/* TRANSLATORS: %s is the daemon's reason. */
#define LA_WHY_REFUSED N_("localauthd refused the request: %s") /* the daemon's ERROR message */

/* syslog, from pam_sm_setcred: the account's password was used (never the password itself). */
#define LA_LOG_PASSWORD_REPORTED "password use of %s reported to localauthd: %s"
#define LA_LOG_PASSWORD_NOT_REPORTED "password use of %s not reported: %s"

#endif
