/* SPDX-License-Identifier: Apache-2.0 */
#include "phrases.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "catalogue.h"
#include "fill.h"
#include "messages.h"
#include "wire.h"

enum { LA_TAG_PHRASE_ID = 50, LA_TAG_PHRASE_TEXT = 51, LA_TAG_PHRASE_NUMBER = 52 };
/* The most tokens a 1024-byte field can hold (each has a 4-byte header) and phrases nested. */
#define LA_PHRASE_MAX_TOKENS (LA_WIRE_MAX_FIELD / 4)
#define LA_PHRASE_MAX_DEPTH 8
/* One rendered argument; lines never need more (a field holds at most 1024 bytes of text, and a
 * translation makes it longer by a bounded factor). */
#define LA_PHRASE_PART 1536

enum la_token_kind { LA_TOK_ID, LA_TOK_TEXT, LA_TOK_NUMBER };

struct la_token {
    enum la_token_kind kind;
    const char *text; /* id or text, NUL-terminated in the pool */
    long long number;
};

struct la_parse {
    struct la_token tokens[LA_PHRASE_MAX_TOKENS];
    /* Every token's text with its NUL: never more than the field's bytes (each token has a
     * 4-byte header, so n NULs fit where the headers were). */
    char pool[LA_WIRE_MAX_FIELD + 1];
    size_t n, next, used;
    enum la_phrase_style style;
};

static const struct la_token *take(struct la_parse *ps, enum la_token_kind kind)
{
    if (ps->next >= ps->n || ps->tokens[ps->next].kind != kind)
        return NULL;
    return &ps->tokens[ps->next++];
}

static int render(struct la_parse *ps, int depth, char *out, size_t cap);

/* A line with string arguments, each already rendered. */
static int fill(char *out, size_t cap, const char *msgid, const char *a, const char *b,
                const char *c, const char *d)
{
    const char *args[4] = {a, b, c, d};
    la_fill(out, cap, la_text(msgid), args, 4);
    return 0;
}

static int text_arg(struct la_parse *ps, const char **dst)
{
    const struct la_token *t = take(ps, LA_TOK_TEXT);
    if (t == NULL)
        return -1;
    *dst = t->text;
    return 0;
}

static int number_arg(struct la_parse *ps, long long *dst)
{
    const struct la_token *t = take(ps, LA_TOK_NUMBER);
    if (t == NULL)
        return -1;
    *dst = t->number;
    return 0;
}

/* A nested phrase, rendered into part (cap LA_PHRASE_PART). */
static int sub(struct la_parse *ps, int depth, char *part)
{
    return render(ps, depth + 1, part, LA_PHRASE_PART);
}

/* "sudo for alice": two text tokens. */
static int label(struct la_parse *ps, char *part)
{
    const char *program, *account;
    if (text_arg(ps, &program) != 0 || text_arg(ps, &account) != 0)
        return -1;
    /* TRANSLATORS: whose request: %1$s is the program (sudo), %2$s the account (alice). */
    return fill(part, LA_PHRASE_PART, N_("%1$s for %2$s"), program, account, NULL, NULL);
}

/* A right's use: the label, then the identifier of the right it would release. */
static int right_label(struct la_parse *ps, char *part)
{
    const char *program, *account, *right;
    if (text_arg(ps, &program) != 0 || text_arg(ps, &account) != 0 || text_arg(ps, &right) != 0)
        return -1;
    /* TRANSLATORS: whose request: %1$s is the program (/usr/bin/python3), %2$s the account
       (alice), %3$s the identifier of the app's secret or key it asks for (com.example.vault). */
    return fill(part, LA_PHRASE_PART, N_("%1$s for %2$s, asking to release %3$s"), program, account,
                right, NULL);
}

static int render(struct la_parse *ps, int depth, char *out, size_t cap)
{
    /* Parts of a line, on this frame's stack: at most LA_PHRASE_MAX_DEPTH frames deep. */
    char a[LA_PHRASE_PART], b[LA_PHRASE_PART], c[LA_PHRASE_PART];
    const char *s1, *s2;
    long long n1, n2;
    const struct la_token *id = take(ps, LA_TOK_ID);
    if (id == NULL || depth >= LA_PHRASE_MAX_DEPTH)
        return -1;
    const char *name = id->text;
    if ((s1 = la_simple_line(name)) != NULL)
        return fill(out, cap, s1, NULL, NULL, NULL, NULL);

    /* A finger of the catalogue: the line asking for it (placeFinger) or its name alone. */
    if (strcmp(name, "placeFinger") == 0 || strcmp(name, "fingerName") == 0) {
        if (text_arg(ps, &s1) != 0)
            return -1;
        s2 = strcmp(name, "placeFinger") == 0 ? la_finger_line(s1) : la_finger_name(s1);
        return s2 != NULL ? fill(out, cap, s2, NULL, NULL, NULL, NULL) : -1;
    }
    if (strcmp(name, "noMatch") == 0) {
        if (number_arg(ps, &n1) != 0 || n1 < 0 || n1 > 1000)
            return -1;
        if (n1 == 0)
            return fill(out, cap, N_("Fingerprint not recognised"), NULL, NULL, NULL, NULL);
        la_plural(out, cap,
                  /* TRANSLATORS: a finger did not match; %lld more fingers may be tried in this
                     request. */
                  dngettext(LA_TEXT_DOMAIN, "Not recognised, try again (%lld left)",
                            "Not recognised, try again (%lld left)", (unsigned long)n1),
                  n1);
        return 0;
    }
    if (strcmp(name, "biometryLocked") == 0) {
        if (number_arg(ps, &n1) != 0 || (n1 != 0 && n1 != 1))
            return -1;
        if (ps->style == LA_PHRASE_PASSWORD_FALLBACK)
            return fill(out, cap, N_("Too many attempts: use your password"), NULL, NULL, NULL,
                        NULL);
        return fill(out, cap,
                    n1 ? N_("Too many attempts: use your passcode")
                       : N_("Too many attempts: fingerprint locked"),
                    NULL, NULL, NULL, NULL);
    }
    if (strcmp(name, "fingerNotAvailable") == 0) {
        if (sub(ps, depth, a) != 0)
            return -1;
        return fill(out, cap, N_("Fingerprint not available: %s"), a, NULL, NULL, NULL);
    }
    if (strcmp(name, "cancelled") == 0) {
        if (number_arg(ps, &n1) != 0)
            return -1;
        snprintf(a, sizeof a, "%lld", n1);
        if ((s1 = la_cancel_line(a)) != NULL)
            return fill(out, cap, s1, NULL, NULL, NULL, NULL);
        return fill(out, cap, N_("Cancelled"), NULL, NULL, NULL, NULL);
    }
    if (strcmp(name, "retry") == 0) {
        if (number_arg(ps, &n1) != 0 || (s1 = la_hint_line(n1)) == NULL)
            return -1;
        return fill(out, cap, s1, NULL, NULL, NULL, NULL);
    }
    if (strcmp(name, "verbatim") == 0) {
        if (text_arg(ps, &s1) != 0)
            return -1;
        la_fill(out, cap, "%s", (const char *const[]){s1}, 1); /* the app's own text, as it is */
        return 0;
    }
    if (strcmp(name, "forRequest") == 0 || strcmp(name, "forRightRequest") == 0) {
        int of_right = strcmp(name, "forRightRequest") == 0;
        if (sub(ps, depth, a) != 0 || (of_right ? right_label(ps, b) : label(ps, b)) != 0)
            return -1;
        return fill(out, cap, N_("%s (%s)"), a, b, NULL, NULL);
    }
    if (strcmp(name, "prompt") == 0) {
        if (text_arg(ps, &s1) != 0 || sub(ps, depth, a) != 0 || text_arg(ps, &s2) != 0)
            return -1;
        if (s1[0] != '\0') {
            fill(b, sizeof b, N_("%1$s: %2$s"), s1, a, NULL, NULL);
            memcpy(a, b, sizeof a);
        }
        if (s2[0] != '\0')
            return fill(out, cap, N_("%1$s [%2$s]"), a, s2, NULL, NULL);
        la_fill(out, cap, "%s", (const char *const[]){a}, 1);
        return 0;
    }
    if (strcmp(name, "both") == 0) {
        if (sub(ps, depth, a) != 0 || sub(ps, depth, b) != 0)
            return -1;
        return fill(out, cap, N_("%s — %s"), a, b, NULL, NULL);
    }
    if (strcmp(name, "firstPasscodeNeedsFinger") == 0) {
        if (text_arg(ps, &s1) != 0 || sub(ps, depth, a) != 0)
            return -1;
        return fill(
            out, cap,
            N_("A first passcode needs an enrolled finger, or root (sudo localauthctl passcode "
               "set --user %1$s): %2$s"),
            s1, a, NULL, NULL);
    }
    if (strcmp(name, "catalogued") == 0) {
        /* A line of the catalogue (its English template) and up to 3 arguments here; more, and
         * the module shows the message. */
        char *parts[3] = {a, b, c};
        const char *args[3] = {NULL, NULL, NULL};
        if (text_arg(ps, &s1) != 0 || number_arg(ps, &n1) != 0 || n1 < 0 || n1 > 3)
            return -1;
        for (long long i = 0; i < n1; i++) {
            if (sub(ps, depth, parts[i]) != 0)
                return -1;
            args[i] = parts[i];
        }
        la_fill(out, cap, la_text(s1), args, (int)n1);
        return 0;
    }
    if (strcmp(name, "readerBusyBy") == 0 || strcmp(name, "readerBusyByRight") == 0) {
        if ((strcmp(name, "readerBusyByRight") == 0 ? right_label(ps, a) : label(ps, a)) != 0)
            return -1;
        return fill(out, cap, N_("the reader is in use by %s; try again when it is done"), a, NULL,
                    NULL, NULL);
    }
    if (strcmp(name, "passwordRequiredIdle") == 0) {
        if (number_arg(ps, &n1) != 0 || number_arg(ps, &n2) != 0 || n1 < 0 || n2 < 0)
            return -1;
        la_duration(n1, a, sizeof a);
        la_duration(n2, b, sizeof b);
        return fill(out, cap,
                    N_("Password required: not used for %1$s and no fingerprint for %2$s"), a, b,
                    NULL, NULL);
    }
    if (strcmp(name, "passwordUseNotRecordedSessionClass") == 0) {
        if (text_arg(ps, &s1) != 0)
            return -1;
        la_fill(a, sizeof a, "\"%.64s\"", (const char *const[]){s1}, 1);
        return fill(out, cap, N_("Password use not recorded: it comes from a session of class %s"),
                    a, NULL, NULL, NULL);
    }
    if (strcmp(name, "readerShareUsed") == 0) {
        if (text_arg(ps, &s1) != 0 || number_arg(ps, &n1) != 0 || number_arg(ps, &n2) != 0 ||
            n1 < 0 || n2 < 0 || n1 > INT64_MAX / 2)
            return -1;
        la_duration(n1, a, sizeof a);
        la_duration(2 * n1, b, sizeof b);
        la_duration(n2, c, sizeof c);
        return fill(
            out, cap,
            N_("%1$s's requests have had the reader for %2$s of the last %3$s; it is free for "
               "others until %4$s from now"),
            s1, a, b, c);
    }
    /* The identifiers with one argument: a text, or a duration in milliseconds. */
    static const struct {
        const char *name;
        int duration;
        const char *line;
    } one_arg[] = {
        {"timedOutWaitingForTurn", 0, N_("Timed out waiting for another request of %s to finish")},
        {"readerFailed", 0, N_("Fingerprint reader failed: %s")},
        {"passcodeSet", 0, N_("Passcode set for %s")},
        {"passcodeRemoved", 0, N_("Passcode removed for %s")},
        {"noPasscodeToRemove", 0, N_("%s has no passcode")},
        {"notTheTargetsSession", 0, N_("the request is not from %s's own session")},
        {"sessionNotInFront", 0, N_("the request is not from %s's session in front of the reader")},
        {"passcodeLocked", 1, N_("Passcode locked; try again in %s")},
        {"passwordRequiredAfterMaxAge", 1, N_("Password required after %s")},
    };
    for (size_t i = 0; i < sizeof one_arg / sizeof one_arg[0]; i++) {
        if (strcmp(name, one_arg[i].name) != 0)
            continue;
        if (!one_arg[i].duration) {
            if (text_arg(ps, &s1) != 0)
                return -1;
            return fill(out, cap, one_arg[i].line, s1, NULL, NULL, NULL);
        }
        if (number_arg(ps, &n1) != 0 || n1 < 0)
            return -1;
        la_duration(n1, a, sizeof a);
        return fill(out, cap, one_arg[i].line, a, NULL, NULL, NULL);
    }
    return -1;
}

static void visit(struct la_parse *ps, uint16_t tag, const uint8_t *value, uint16_t size, int *bad)
{
    struct la_token *t;
    if (ps->n >= LA_PHRASE_MAX_TOKENS) {
        *bad = 1;
        return;
    }
    t = &ps->tokens[ps->n];
    switch (tag) {
    case LA_TAG_PHRASE_ID:
    case LA_TAG_PHRASE_TEXT:
        if (!la_wire_utf8_valid(value, size)) {
            *bad = 1;
            return;
        }
        if ((size_t)size + 1 > sizeof ps->pool - ps->used) {
            *bad = 1;
            return;
        }
        t->kind = tag == LA_TAG_PHRASE_ID ? LA_TOK_ID : LA_TOK_TEXT;
        t->text = ps->pool + ps->used;
        memcpy(ps->pool + ps->used, value, size);
        ps->pool[ps->used + size] = '\0';
        ps->used += size + 1;
        break;
    case LA_TAG_PHRASE_NUMBER:
        if (size != 8) {
            *bad = 1;
            return;
        }
        t->kind = LA_TOK_NUMBER;
        {
            uint64_t v = 0;
            for (int i = 0; i < 8; i++)
                v = v << 8 | value[i];
            t->number = (long long)(int64_t)v;
        }
        t->text = "";
        break;
    default:
        *bad = 1;
        return;
    }
    ps->n++;
}

int la_phrase_render(const uint8_t *value, size_t len, enum la_phrase_style style, char *out,
                     size_t cap)
{
    struct la_parse ps;
    int bad = 0;
    if (cap == 0)
        return -1;
    out[0] = '\0';
    if (len > LA_WIRE_MAX_FIELD)
        return -1;
    memset(&ps, 0, sizeof ps);
    ps.style = style;
    for (size_t i = 0; i < len && !bad;) {
        if (len - i < 4)
            return -1;
        uint16_t tag = (uint16_t)(value[i] << 8 | value[i + 1]);
        uint16_t size = (uint16_t)(value[i + 2] << 8 | value[i + 3]);
        i += 4;
        if (size > len - i)
            return -1;
        visit(&ps, tag, value + i, size, &bad);
        i += size;
    }
    if (bad || ps.n == 0 || render(&ps, 0, out, cap) != 0 || ps.next != ps.n) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}
