/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place where a daemon result becomes a PAM code (the table in pam_localauth(8) and
 * docs/adr/0010-pam-code-table.md). Pure, so every row is a unit test.
 */
#ifndef LOCALAUTH_PAM_CODES_H
#define LOCALAUTH_PAM_CODES_H

#include <stdint.h>

/* Result codes of docs/protocol.md (Apple's LAError values and the daemon's own). */
enum la_result {
    LA_OK = 0,
    LA_AUTHENTICATION_FAILED = -1,
    LA_USER_CANCEL = -2,
    LA_USER_FALLBACK = -3,
    LA_SYSTEM_CANCEL = -4,
    LA_PASSCODE_NOT_SET = -5,
    LA_BIOMETRY_NOT_AVAILABLE = -6,
    LA_BIOMETRY_NOT_ENROLLED = -7,
    LA_BIOMETRY_LOCKOUT = -8,
    LA_APP_CANCEL = -9,
    LA_INVALID_CONTEXT = -10,
    LA_BIOMETRY_DISCONNECTED = -13,
    LA_NOT_INTERACTIVE = -1004,
    LA_NOT_AUTHORIZED = -1100,
    LA_INVALID_REQUEST = -1101,
    LA_NOT_FOUND = -1102,
    LA_BUSY = -1103,
    LA_ALREADY_ENROLLED = -1104,
    LA_INTERNAL_ERROR = -1105,
    LA_NOT_SUPPORTED = -1106,
    LA_TIMED_OUT = -1107,
};

/* What the module saw during the request, beyond the result code. */
struct la_outcome {
    int tries_exhausted; /* the last noMatch event said triesLeft 0 */
    int conv_failed;     /* the conversation failed while the daemon waited for an answer */
};

/* The PAM code for a RESULT code; unknown codes deny (PAM_AUTH_ERR). */
int la_result_to_pam(int64_t code, const struct la_outcome *seen);

/* 1 when the RESULT's message is worth showing the person (PAM_ERROR_MSG). */
int la_result_is_shown(int64_t code);

/* The protocol's name for a result code, for logs; "unknown" otherwise. */
const char *la_result_name(int64_t code);

#endif
