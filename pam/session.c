/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pam_localauth: what every part of one call uses: the clock, debug lines to syslog, and a
 * reason formatted for syslog and for the person. The bottom of the module's own files: calls
 * none of them.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include <security/pam_ext.h>

#include "messages.h"
#include "module.h"

int64_t la_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void la_debug(const struct session *s, const char *fmt, ...)
{
    if (!s->opt->debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    pam_vsyslog(s->pamh, LOG_DEBUG, fmt, ap);
    va_end(ap);
}

/* Formats a reason (a msgid of messages.h) twice: as it is for syslog, and translated. */
void la_why_format(struct why *w, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    vsnprintf(w->log, sizeof w->log, fmt, ap);
    vsnprintf(w->shown, sizeof w->shown, la_text(fmt), aq);
    va_end(aq);
    va_end(ap);
}
