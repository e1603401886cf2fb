/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's lines in the application's language: an EVENT's or RESULT's `phrase` field (an
 * identifier and its arguments, docs/protocol.md "Phrases") rendered through the catalogue with
 * the same msgids as Sources/LocalAuthProtocol/PhraseText.swift. Pure code apart from dgettext:
 * no allocation, bounded depth and output.
 */
#ifndef LOCALAUTH_PAM_PHRASES_H
#define LOCALAUTH_PAM_PHRASES_H

#include <stddef.h>
#include <stdint.h>

/* How the module words what depends on its stack: after too many fingers, the account's password
 * follows (a stack without policy=owner), not the localauth passcode. */
enum la_phrase_style { LA_PHRASE_DEFAULT = 0, LA_PHRASE_PASSWORD_FALLBACK = 1 };

/* Renders a `phrase` field's value into out (always NUL-terminated when cap > 0): 0, or -1 when
 * the value is malformed, names an identifier this module does not know, or has other arguments
 * than its identifier's — then the caller shows the English `message`. */
int la_phrase_render(const uint8_t *value, size_t len, enum la_phrase_style style, char *out,
                     size_t cap);

#endif
