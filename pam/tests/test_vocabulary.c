/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C codec's vocabulary against Tests/Fixtures/protocol/vocabulary.txt, the table the Swift
 * and Python codecs read too (docs/adr/0009-wire-protocol.md). Every constant of wire.h and
 * codes.h that names a message type, tag, event, policy, flag or result must be listed below and
 * carry the fixture's value; every result in the fixture must have its name in la_result_name.
 */
#include "../codes.h"
#include "../wire.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

struct row {
    const char *kind, *name, *identifier;
    long long value;
};

#define ROW(kind, name, constant)                                                                  \
    {                                                                                              \
        kind, name, #constant, (long long)(constant)                                               \
    }

static const struct row rows[] = {
    ROW("message", "HELLO", LA_MSG_HELLO),
    ROW("message", "STATUS", LA_MSG_STATUS),
    ROW("message", "CAN_EVALUATE", LA_MSG_CAN_EVALUATE),
    ROW("message", "EVALUATE", LA_MSG_EVALUATE),
    ROW("message", "CANCEL", LA_MSG_CANCEL),
    ROW("message", "PASSCODE", LA_MSG_PASSCODE),
    ROW("message", "FALLBACK", LA_MSG_FALLBACK),
    ROW("message", "PASSWORD_USED", LA_MSG_PASSWORD_USED),
    ROW("message", "WELCOME", LA_MSG_WELCOME),
    ROW("message", "EVENT", LA_MSG_EVENT),
    ROW("message", "RESULT", LA_MSG_RESULT),
    ROW("message", "ERROR", LA_MSG_ERROR),
    ROW("tag", "version", LA_TAG_VERSION),
    ROW("tag", "peerName", LA_TAG_PEER_NAME),
    ROW("tag", "user", LA_TAG_USER),
    ROW("tag", "service", LA_TAG_SERVICE),
    ROW("tag", "tty", LA_TAG_TTY),
    ROW("tag", "policy", LA_TAG_POLICY),
    ROW("tag", "reason", LA_TAG_REASON),
    ROW("tag", "fallbackTitle", LA_TAG_FALLBACK_TITLE),
    ROW("tag", "flags", LA_TAG_FLAGS),
    ROW("tag", "tries", LA_TAG_TRIES),
    ROW("tag", "timeoutMs", LA_TAG_TIMEOUT_MS),
    ROW("tag", "finger", LA_TAG_FINGER),
    ROW("tag", "code", LA_TAG_CODE),
    ROW("tag", "message", LA_TAG_MESSAGE),
    ROW("tag", "event", LA_TAG_EVENT),
    ROW("tag", "triesLeft", LA_TAG_TRIES_LEFT),
    ROW("tag", "delayMs", LA_TAG_DELAY_MS),
    ROW("tag", "hint", LA_TAG_HINT),
    ROW("tag", "passcode", LA_TAG_PASSCODE),
    ROW("tag", "phrase", LA_TAG_PHRASE),
    ROW("policy", "deviceOwnerAuthenticationWithBiometrics", LA_POLICY_BIOMETRICS),
    ROW("policy", "deviceOwnerAuthentication", LA_POLICY_OWNER),
    ROW("flag", "interactionNotAllowed", LA_FLAG_INTERACTION_NOT_ALLOWED),
    ROW("flag", "passcodeCapable", LA_FLAG_PASSCODE_CAPABLE),
    ROW("event", "placeFinger", LA_EVENT_PLACE_FINGER),
    ROW("event", "retry", LA_EVENT_RETRY),
    ROW("event", "noMatch", LA_EVENT_NO_MATCH),
    ROW("event", "enrollStage", LA_EVENT_ENROLL_STAGE),
    ROW("event", "passcodeNeeded", LA_EVENT_PASSCODE_NEEDED),
    ROW("event", "fallbackAvailable", LA_EVENT_FALLBACK_AVAILABLE),
    ROW("event", "biometryLocked", LA_EVENT_BIOMETRY_LOCKED),
    ROW("event", "passcodeWrong", LA_EVENT_PASSCODE_WRONG),
    ROW("event", "info", LA_EVENT_INFO),
    ROW("result", "success", LA_OK),
    ROW("result", "authenticationFailed", LA_AUTHENTICATION_FAILED),
    ROW("result", "userCancel", LA_USER_CANCEL),
    ROW("result", "userFallback", LA_USER_FALLBACK),
    ROW("result", "systemCancel", LA_SYSTEM_CANCEL),
    ROW("result", "passcodeNotSet", LA_PASSCODE_NOT_SET),
    ROW("result", "biometryNotAvailable", LA_BIOMETRY_NOT_AVAILABLE),
    ROW("result", "biometryNotEnrolled", LA_BIOMETRY_NOT_ENROLLED),
    ROW("result", "biometryLockout", LA_BIOMETRY_LOCKOUT),
    ROW("result", "appCancel", LA_APP_CANCEL),
    ROW("result", "invalidContext", LA_INVALID_CONTEXT),
    ROW("result", "biometryDisconnected", LA_BIOMETRY_DISCONNECTED),
    ROW("result", "notInteractive", LA_NOT_INTERACTIVE),
    ROW("result", "notAuthorized", LA_NOT_AUTHORIZED),
    ROW("result", "invalidRequest", LA_INVALID_REQUEST),
    ROW("result", "notFound", LA_NOT_FOUND),
    ROW("result", "busy", LA_BUSY),
    ROW("result", "alreadyEnrolled", LA_ALREADY_ENROLLED),
    ROW("result", "internalError", LA_INTERNAL_ERROR),
    ROW("result", "notSupported", LA_NOT_SUPPORTED),
    ROW("result", "timedOut", LA_TIMED_OUT),
};
#define NROWS (sizeof rows / sizeof *rows)

struct entry {
    char kind[16], name[64];
    long long value;
};

static struct entry fixture[256];
static size_t nfixture;

static int load(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    if (f == NULL)
        return -1;
    nfixture = 0;
    while (fgets(line, sizeof line, f) != NULL && nfixture < sizeof fixture / sizeof *fixture) {
        char *hash = strchr(line, '#');
        char value[32];
        struct entry *e = &fixture[nfixture];
        if (hash != NULL)
            *hash = '\0';
        if (sscanf(line, "%15s %31s %63s", e->kind, value, e->name) != 3)
            continue;
        char *end;
        e->value = strtoll(value, &end, 0);
        if (*end != '\0')
            e->value = -999999;
        nfixture++;
    }
    fclose(f);
    return 0;
}

static const struct entry *lookup(const char *kind, const char *name)
{
    for (size_t i = 0; i < nfixture; i++)
        if (strcmp(fixture[i].kind, kind) == 0 && strcmp(fixture[i].name, name) == 0)
            return &fixture[i];
    return NULL;
}

/* Each listed constant has the fixture's value under the fixture's name. */
static void constants_match_fixture(void)
{
    for (size_t i = 0; i < NROWS; i++) {
        const struct entry *e = lookup(rows[i].kind, rows[i].name);
        if (e == NULL || e->value != rows[i].value)
            fprintf(stderr, "  %s = %lld: fixture has %s %s %s\n", rows[i].identifier,
                    rows[i].value, rows[i].kind, rows[i].name,
                    e == NULL ? "(missing)" : "with another value");
        CHECK(e != NULL && e->value == rows[i].value);
    }
}

/* The module logs every result by the fixture's name; an unknown one would read "unknown". */
static void result_names_match_fixture(void)
{
    int results = 0;
    for (size_t i = 0; i < nfixture; i++) {
        if (strcmp(fixture[i].kind, "result") != 0)
            continue;
        results++;
        if (strcmp(la_result_name(fixture[i].value), fixture[i].name) != 0)
            fprintf(stderr, "  result %lld: la_result_name says %s, fixture %s\n", fixture[i].value,
                    la_result_name(fixture[i].value), fixture[i].name);
        CHECK(strcmp(la_result_name(fixture[i].value), fixture[i].name) == 0);
    }
    CHECK(results >= 20);
}

/* A constant added to a header but not to the list above would escape the check: read the
 * headers and find every "LA_… = " that names vocabulary (LA_HAS_ bits are the module's own). */
static void every_header_constant_is_listed(void)
{
    static const char *const headers[] = {"wire.h", "codes.h"};
    char dir[512];
    const char *slash = strrchr(__FILE__, '/');
    int n = snprintf(dir, sizeof dir, "%.*s/..", slash ? (int)(slash - __FILE__) : 1,
                     slash ? __FILE__ : ".");
    CHECK(n > 0 && (size_t)n < sizeof dir);
    int seen = 0;
    for (size_t h = 0; h < sizeof headers / sizeof *headers; h++) {
        char path[600], line[512];
        snprintf(path, sizeof path, "%s/%s", dir, headers[h]);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        if (f == NULL)
            continue;
        while (fgets(line, sizeof line, f) != NULL) {
            for (char *p = strstr(line, "LA_"); p != NULL; p = strstr(p + 3, "LA_")) {
                char name[64];
                size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
                if (len >= sizeof name || strncmp(p + len, " = ", 3) != 0 ||
                    strncmp(p, "LA_HAS_", 7) == 0)
                    continue;
                memcpy(name, p, len);
                name[len] = '\0';
                int listed = 0;
                for (size_t i = 0; i < NROWS; i++)
                    listed |= strcmp(rows[i].identifier, name) == 0;
                if (!listed)
                    fprintf(stderr, "  %s (%s) is not in test_vocabulary.c's list\n", name,
                            headers[h]);
                CHECK(listed);
                seen++;
            }
        }
        fclose(f);
    }
    CHECK(seen == (int)NROWS);
}

void test_vocabulary(const char *fixture_path)
{
    t_begin("vocabulary fixture opens");
    CHECK(load(fixture_path) == 0 && nfixture >= 100);
    t_end();
    TEST(constants_match_fixture);
    TEST(result_names_match_fixture);
    TEST(every_header_constant_is_listed);
}
