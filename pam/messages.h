/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every line the module itself shows a person, and the syslog line that says why the finger
 * was not used, in one place, so that they can be catalogued and translated together. (What the
 * daemon says arrives in its frames and is passed on as it is; the administrator's error lines
 * in syslog stay beside the code that logs them.) Lines with a %s take the argument named
 * beside them.
 */
#ifndef LOCALAUTH_PAM_MESSAGES_H
#define LOCALAUTH_PAM_MESSAGES_H

/* The one line at a terminal the module owns: the user name. */
#define LA_TEXT_PASSWORD_OR_FINGER "Password or finger for %s: "
/* password_first's question (lockers ignore it; a greeter shows it as the label). */
#define LA_TEXT_PASSWORD "Password: "
/* policy=owner, when the daemon wants the localauthd passcode. */
#define LA_TEXT_PASSCODE "Passcode: "
/* Sent only to a caller without a terminal, to learn whether it can show a message at all. */
#define LA_TEXT_PROBE "Checking for a fingerprint"
#define LA_TEXT_PASSCODE_INVALID "Passcode too long or not valid text"
#define LA_TEXT_PASSWORD_TOO_LONG "Password too long: at most 511 bytes"

/* Why the finger was not used: "Fingerprint not used: <why>" to the person, "fingerprint not
 * used for <user>: <why>" in syslog. */
#define LA_TEXT_NOT_USED "Fingerprint not used: %s"
#define LA_LOG_NOT_USED "fingerprint not used for %s: %s"
#define LA_WHY_REMOTE "remote session from %.100s" /* PAM_RHOST */
#define LA_WHY_TYPED "a password was typed"
#define LA_WHY_GIVEN "a password was already given"
#define LA_WHY_CANNOT_ASK "the application cannot ask for a password"
#define LA_WHY_NOT_INTERACTIVE "no terminal, and the application cannot show a message"
#define LA_WHY_STDIN "standard input is not a terminal, so the password is read from it"
#define LA_WHY_INTERRUPTED "interrupted"
#define LA_WHY_TERMINATED "terminated (SIGTERM)"
#define LA_WHY_TERMINAL_GONE "the terminal was closed"
#define LA_WHY_USER_TOO_LONG "the user name is too long (%zu bytes, at most %d)"
#define LA_WHY_USER_NOT_TEXT "the user name is not valid UTF-8"
#define LA_WHY_NOT_RUNNING "localauthd is not running"
#define LA_WHY_NO_ACCESS "cannot reach localauthd: %s" /* strerror */
#define LA_WHY_BUSY "localauthd is too busy to accept a connection"
#define LA_WHY_NO_SOCKET "cannot open a socket: %s" /* strerror */
#define LA_WHY_UNTRUSTED "localauthd is not trusted: its socket is served by uid %u, not root"
#define LA_WHY_NO_CREDENTIALS "cannot tell who serves localauthd's socket"
#define LA_WHY_NO_ANSWER "localauthd does not answer"
#define LA_WHY_OTHER_VERSION "localauthd speaks protocol version %lld, not %d"
#define LA_WHY_REFUSED "localauthd refused the request: %s" /* the daemon's ERROR message */

/* syslog, from pam_sm_setcred: the account's password was used (never the password itself). */
#define LA_LOG_PASSWORD_REPORTED "password use of %s reported to localauthd: %s"
#define LA_LOG_PASSWORD_NOT_REPORTED "password use of %s not reported: %s"

#endif
