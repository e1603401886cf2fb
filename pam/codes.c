/* SPDX-License-Identifier: Apache-2.0 */
#include "codes.h"

#include <security/_pam_types.h>

int la_result_to_pam(int64_t code, const struct la_outcome *seen)
{
    switch (code) {
    case LA_OK:
        return PAM_SUCCESS;
    case LA_AUTHENTICATION_FAILED:
        /* The daemon counts the fingers; its last noMatch tells us they are all used up. */
        return seen->tries_exhausted ? PAM_MAXTRIES : PAM_AUTH_ERR;
    case LA_USER_CANCEL:
    case LA_APP_CANCEL:
        /* A person (or the application) declined: not an outage, so the stack must not treat
         * it as "module unavailable". A conversation that failed says so precisely. */
        return seen->conv_failed ? PAM_CONV_ERR : PAM_AUTH_ERR;
    case LA_NOT_AUTHORIZED:
        /* The caller asked about an account it may not (an unprivileged process for another
         * user): a refusal, never "try something else quietly". */
        return PAM_AUTH_ERR;
    case LA_NOT_FOUND:
        return PAM_USER_UNKNOWN;
    case LA_USER_FALLBACK:    /* the person chose the password */
    case LA_SYSTEM_CANCEL:    /* the daemon gave up (shutdown, reader gone) */
    case LA_PASSCODE_NOT_SET: /* nothing this module can check for this account */
    case LA_BIOMETRY_NOT_AVAILABLE:
    case LA_BIOMETRY_NOT_ENROLLED:
    case LA_BIOMETRY_DISCONNECTED: /* the fingers are on a reader that is unplugged */
    case LA_BIOMETRY_LOCKOUT:      /* the password still works; the message says why */
    case LA_INVALID_CONTEXT:
    case LA_NOT_INTERACTIVE:
    case LA_INVALID_REQUEST:
    case LA_BUSY:
    case LA_INTERNAL_ERROR:
    case LA_NOT_SUPPORTED:
    case LA_TIMED_OUT:
        return PAM_AUTHINFO_UNAVAIL;
    default:
        return PAM_AUTH_ERR; /* deny what we do not understand */
    }
}

int la_result_is_shown(int64_t code)
{
    /* Results that follow no event the person already saw. "Not enrolled" stays silent so
     * that people without a fingerprint set up see only their password prompt; "not
     * available" is shown, because it says why the finger is skipped (no reader, the lid is
     * closed, a remote session), and so is "not interactive". */
    return code == LA_BIOMETRY_LOCKOUT || code == LA_TIMED_OUT || code == LA_BUSY ||
           code == LA_NOT_AUTHORIZED || code == LA_BIOMETRY_NOT_AVAILABLE ||
           code == LA_BIOMETRY_DISCONNECTED || code == LA_NOT_INTERACTIVE;
}

const char *la_result_name(int64_t code)
{
    switch (code) {
    case LA_OK:
        return "success";
    case LA_AUTHENTICATION_FAILED:
        return "authenticationFailed";
    case LA_USER_CANCEL:
        return "userCancel";
    case LA_USER_FALLBACK:
        return "userFallback";
    case LA_SYSTEM_CANCEL:
        return "systemCancel";
    case LA_PASSCODE_NOT_SET:
        return "passcodeNotSet";
    case LA_BIOMETRY_NOT_AVAILABLE:
        return "biometryNotAvailable";
    case LA_BIOMETRY_NOT_ENROLLED:
        return "biometryNotEnrolled";
    case LA_BIOMETRY_LOCKOUT:
        return "biometryLockout";
    case LA_BIOMETRY_DISCONNECTED:
        return "biometryDisconnected";
    case LA_APP_CANCEL:
        return "appCancel";
    case LA_INVALID_CONTEXT:
        return "invalidContext";
    case LA_NOT_INTERACTIVE:
        return "notInteractive";
    case LA_NOT_AUTHORIZED:
        return "notAuthorized";
    case LA_INVALID_REQUEST:
        return "invalidRequest";
    case LA_NOT_FOUND:
        return "notFound";
    case LA_BUSY:
        return "busy";
    case LA_ALREADY_ENROLLED:
        return "alreadyEnrolled";
    case LA_INTERNAL_ERROR:
        return "internalError";
    case LA_NOT_SUPPORTED:
        return "notSupported";
    case LA_TIMED_OUT:
        return "timedOut";
    default:
        return "unknown";
    }
}
