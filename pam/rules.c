/* SPDX-License-Identifier: Apache-2.0 */
#include "rules.h"

#include "options.h"

#include <security/pam_modules.h>

int la_is_remote(const char *rhost)
{
    return rhost != 0 && rhost[0] != '\0';
}

enum la_term_mode la_term_decide(const struct la_term_facts *f)
{
    /* Only a terminal the application names as the person's is the person's: a polkit helper
     * or a graphical program started from a shell has the shell's terminal but does not set
     * PAM_TTY to it, and its person looks at a dialog. */
    if (!f->ctty || !f->pam_tty_names)
        return LA_TERM_NONE;
    /* sudo -S, su in a pipe: the password arrives on standard input, not from the keyboard. */
    if (!f->stdin_tty)
        return LA_TERM_SCRIPTED;
    /* Input redirected from another terminal, a background job, a full-screen program: not
     * the module's to take. */
    if (!f->stdin_ctty || !f->foreground || !f->line_mode)
        return LA_TERM_OTHER;
    return LA_TERM_OWN;
}

int la_reports_at_setcred(int setcred_flags, enum la_finger_mark mark, int unix_accepted,
                          const char *rhost)
{
    int grants = PAM_ESTABLISH_CRED | PAM_REINITIALIZE_CRED | PAM_REFRESH_CRED;
    if ((setcred_flags & grants) == 0 || la_is_remote(rhost))
        return 0;
    /* Typed at the module's prompt or asked by pam_unix: either way only pam_unix's verdict
     * says it was the password. Another module (a token, a second method) may have let the stack
     * through after pam_unix refused what was typed. */
    return unix_accepted && (mark == LA_FINGER_TYPED || mark == LA_FINGER_NOT_USED);
}

int la_reports_after_password(enum la_finger_mark mark, int unix_accepted, const char *authtok,
                              const char *rhost)
{
    /* A line after `auth required pam_unix.so` runs also when pam_unix refused the password. */
    return unix_accepted && mark != LA_FINGER_ACCEPTED && mark != LA_FINGER_REPORTED &&
           authtok != 0 && authtok[0] != '\0' && !la_is_remote(rhost);
}

int la_quiet(int pam_silent, const char *pam_tty)
{
    return pam_silent && !la_tty_names_terminal(pam_tty);
}
