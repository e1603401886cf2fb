/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <string.h>

/* A whole decimal number in [min, max]: digits only, so "3x", "-1", " 3" and "" are refused,
 * and the range is checked while parsing, so no input can overflow. */
static int parse_int(const char *s, int min, int max, int *out)
{
    long v = 0;
    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
    }
    if (v < min)
        return -1;
    *out = (int)v;
    return 0;
}

/* The value after "name=" when arg starts with it, else NULL. */
static const char *value_of(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

int la_tty_names_terminal(const char *tty)
{
    if (tty == NULL)
        return 0;
    return strncmp(tty, "/dev/", 5) == 0 || strncmp(tty, "tty", 3) == 0 ||
           strncmp(tty, "pts/", 4) == 0 || strcmp(tty, "console") == 0 || tty[0] == ':';
}

/* One argument: NULL when applied, else why it was ignored. */
/* The reasons go to syslog, for the administrator (warn_option): English. */
static const char *apply(struct la_options *o, const char *arg)
{
    const char *v;
    if (strcmp(arg, "debug") == 0) {
        o->debug = 1;
    } else if (strcmp(arg, "password_first") == 0) {
        o->password_first = 1;
    } else if (strcmp(arg, "password_used") == 0) {
        o->password_used = 1;
    } else if ((v = value_of(arg, "socket")) != NULL) {
        size_t n = strlen(v);
        if (v[0] != '/')
            return "socket must be an absolute path"; /* English: syslog */
        if (n > LA_SOCKET_PATH_MAX)
            return "socket path longer than 107 bytes"; /* English: syslog */
        memcpy(o->socket, v, n + 1);
    } else if ((v = value_of(arg, "policy")) != NULL) {
        if (strcmp(v, "biometrics") == 0)
            o->policy = LA_POLICY_BIOMETRICS;
        else if (strcmp(v, "owner") == 0)
            o->policy = LA_POLICY_OWNER;
        else
            return "policy must be biometrics or owner"; /* English: syslog */
    } else if ((v = value_of(arg, "timeout")) != NULL) {
        if (parse_int(v, LA_TIMEOUT_MIN, LA_TIMEOUT_MAX, &o->timeout) != 0)
            return "timeout must be whole seconds, 1 to 300"; /* English: syslog */
    } else if ((v = value_of(arg, "tries")) != NULL) {
        if (parse_int(v, LA_TRIES_MIN, LA_TRIES_MAX, &o->tries) != 0)
            return "tries must be 1 to 5"; /* English: syslog */
    } else if ((v = value_of(arg, "reason")) != NULL) {
        size_t n = strlen(v);
        /* The daemon refuses a frame with a bad string: catch it here, where it can be said. */
        if (n == 0 || n > LA_WIRE_MAX_FIELD || !la_wire_utf8_valid((const uint8_t *)v, n))
            return "reason must be 1 to 1024 bytes of UTF-8"; /* English: syslog */
        memcpy(o->reason, v, n + 1);
        o->have_reason = 1;
    } else {
        return "unknown argument"; /* English: syslog */
    }
    return NULL;
}

int la_options_parse(struct la_options *o, int argc, const char **argv, la_options_warn_fn warn,
                     void *ctx)
{
    int ignored = 0;
    memset(o, 0, sizeof *o);
    memcpy(o->socket, LA_DEFAULT_SOCKET, sizeof LA_DEFAULT_SOCKET);
    o->policy = LA_POLICY_BIOMETRICS;
    o->timeout = LA_DEFAULT_TIMEOUT;
    o->tries = LA_DEFAULT_TRIES;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i] != NULL ? argv[i] : "";
        const char *why = apply(o, arg);
        if (why != NULL) {
            ignored++;
            if (warn != NULL)
                warn(ctx, arg, why);
        }
    }
    return ignored;
}
