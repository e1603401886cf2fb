/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the module: a template (a msgid, translated or not) filled with string arguments,
 * the one formatter phrases.c and catalogue.c share. Pure code: no allocation, bounded output.
 */
#ifndef LOCALAUTH_PAM_FILL_H
#define LOCALAUTH_PAM_FILL_H

#include <stddef.h>

/* printf's %s, %lld (any length modifier, d/i/u), %.Ns, positional %N$s and %% over string
 * arguments, into out (cut at cap, never past a UTF-8 character's start). Other conversions are
 * copied as written; one without an argument becomes empty. Never reads past args[nargs]. */
void la_fill(char *out, size_t cap, const char *tmpl, const char *const *args, int nargs);

#endif
