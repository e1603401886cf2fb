/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the module: the catalogue's English templates (msgids) that phrases.c renders,
 * looked up by key. Each lookup returns NULL for a key it does not know.
 */
#ifndef LOCALAUTH_PAM_CATALOGUE_H
#define LOCALAUTH_PAM_CATALOGUE_H

#include <stddef.h>

/* A phrase without arguments, by its identifier ("fingerNotRecognised"). */
const char *la_simple_line(const char *id);
/* placeFinger's sentence for a finger ("left-thumb"; "" for any finger). */
const char *la_finger_line(const char *finger);
/* A finger's name on its own. */
const char *la_finger_name(const char *finger);
/* cancelled's line for an error code ("-2"). */
const char *la_cancel_line(const char *code);
/* retry's hint number n. */
const char *la_hint_line(long long n);

/* A plural line for n, filled with n. */
void la_plural(char *out, size_t cap, const char *line, long long n);
/* "45 seconds", "15 minutes", "1 hour": rounded up, as Phrase.duration. */
void la_duration(long long ms, char *out, size_t cap);

#endif
