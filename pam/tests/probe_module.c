/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A PAM module for the tests only: records what a host program shows a module when it calls
 * pam_authenticate (the flags, the PAM items, file descriptors 0-2, the controlling terminal
 * and its foreground process group, the signal mask and dispositions) as one JSON line
 * appended to the file named by its argument out=PATH, then returns PAM_IGNORE. This is how
 * pam/tests/terminal_test.py measures what the real sudo, su and login do, the facts that
 * pam_localauth's terminal rule (pam_localauth(8), "THE TERMINAL") rests on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define PAM_SM_AUTH
#include <security/pam_modules.h>

static void json_str(FILE *f, const char *key, const char *value)
{
    fprintf(f, "\"%s\": ", key);
    if (value == NULL) {
        fputs("null, ", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputs("\", ", f);
}

static const char *item(pam_handle_t *pamh, int type)
{
    const void *v = NULL;
    return pam_get_item(pamh, type, &v) == PAM_SUCCESS ? v : NULL;
}

static const char *fd_kind(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return "closed";
    if (S_ISCHR(st.st_mode))
        return isatty(fd) ? "tty" : "chr";
    if (S_ISFIFO(st.st_mode))
        return "pipe";
    if (S_ISSOCK(st.st_mode))
        return "socket";
    if (S_ISREG(st.st_mode))
        return "file";
    return "other";
}

static const char *disposition(int sig)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return "?";
    if (sa.sa_handler == SIG_DFL)
        return "default";
    if (sa.sa_handler == SIG_IGN)
        return "ignore";
    return "handler";
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    const char *out = NULL;
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "out=", 4) == 0)
            out = argv[i] + 4;
    if (out == NULL)
        return PAM_IGNORE;
    FILE *f = fopen(out, "ae");
    if (f == NULL)
        return PAM_IGNORE;
    fprintf(f, "{\"silent\": %s, ", flags & PAM_SILENT ? "true" : "false");
    json_str(f, "service", item(pamh, PAM_SERVICE));
    json_str(f, "user", item(pamh, PAM_USER));
    json_str(f, "tty", item(pamh, PAM_TTY));
    json_str(f, "rhost", item(pamh, PAM_RHOST));
    json_str(f, "ruser", item(pamh, PAM_RUSER));
    fprintf(f, "\"ruid\": %u, \"euid\": %u, ", (unsigned)getuid(), (unsigned)geteuid());
    for (int fd = 0; fd <= 2; fd++) {
        char key[8];
        snprintf(key, sizeof key, "fd%d", fd);
        json_str(f, key, fd_kind(fd));
    }
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    fprintf(f, "\"ctty\": %s, ", tty >= 0 ? "true" : "false");
    if (tty >= 0) {
        struct termios t;
        fprintf(f, "\"foreground\": %s, ", tcgetpgrp(tty) == getpgrp() ? "true" : "false");
        if (tcgetattr(tty, &t) == 0)
            fprintf(f, "\"echo\": %s, \"icanon\": %s, \"isig\": %s, ",
                    t.c_lflag & ECHO ? "true" : "false", t.c_lflag & ICANON ? "true" : "false",
                    t.c_lflag & ISIG ? "true" : "false");
        struct stat a, b;
        if (isatty(0) && fstat(0, &a) == 0 && fstat(tty, &b) == 0)
            fprintf(f, "\"fd0_is_ctty\": %s, ", a.st_rdev == b.st_rdev ? "true" : "false");
        close(tty);
    }
    sigset_t mask;
    sigprocmask(SIG_SETMASK, NULL, &mask);
    static const struct {
        int sig;
        const char *name;
    } sigs[] = {{SIGINT, "INT"},   {SIGQUIT, "QUIT"}, {SIGTERM, "TERM"}, {SIGHUP, "HUP"},
                {SIGTSTP, "TSTP"}, {SIGTTIN, "TTIN"}, {SIGTTOU, "TTOU"}};
    fputs("\"blocked\": [", f);
    for (size_t i = 0, n = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigismember(&mask, sigs[i].sig))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", sigs[i].name);
    fputs("], \"disposition\": {", f);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", sigs[i].name, disposition(sigs[i].sig));
    fputs("}}\n", f);
    fclose(f);
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_IGNORE;
}
