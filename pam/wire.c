/* SPDX-License-Identifier: Apache-2.0 */
#include "wire.h"

#include <stddef.h>
#include <string.h>

/* Kind of each known tag, indexed by tag: i int, s string, b bytes; upper case = may repeat.
 * The same table as FieldTag.table in Sources/LocalAuthProtocol/Wire.swift. */
static const char kinds[] =
    "?"
    "issssisssiiii" /* 1 … 13 */
    "Sisiiiiii"     /* 14 … 22 */
    "ssssibiiB"     /* 23 … 31 */
    "sssiiii"       /* 32 … 38 */
    "sibbisbibi"    /* 39 … 48: rights, sensorInaccessible */
    "bSSIb";        /* 49 … 53: phrase, its tokens when nested, passwordReasonPhrase */
#define LA_KNOWN_TAGS (sizeof kinds - 1)

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static int64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v; /* two's complement on every platform we build for */
}

long la_wire_body_length(const uint8_t prefix[LA_WIRE_PREFIX])
{
    uint32_t n = (uint32_t)prefix[0] << 24 | (uint32_t)prefix[1] << 16 | (uint32_t)prefix[2] << 8 |
                 prefix[3];
    return n < LA_WIRE_MIN_BODY || n > LA_WIRE_MAX_BODY ? -1 : (long)n;
}

int la_wire_utf8_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0)
                return 0;
            i++;
            continue;
        }
        size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || n - i < len)
            return 0;
        uint32_t cp = c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

typedef void (*la_visit_fn)(uint16_t tag, const uint8_t *value, uint16_t size, void *ctx);

/* The one parser: checks the body's framing and every known field, then visits each field
 * in wire order. Nothing is visited unless the whole body is valid, so a visitor never sees
 * half a frame. */
static int walk(const uint8_t *body, size_t len, uint16_t *type, la_visit_fn visit, void *ctx)
{
    if (len < LA_WIRE_MIN_BODY || len > LA_WIRE_MAX_BODY)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t seen = 0; /* known tags fit in 64 bits */
        for (size_t i = LA_WIRE_MIN_BODY; i < len;) {
            if (len - i < 4)
                return -1;
            uint16_t tag = get16(body + i), size = get16(body + i + 2);
            const uint8_t *value = body + i + 4;
            if (size > LA_WIRE_MAX_FIELD || size > len - i - 4)
                return -1;
            i += 4u + size;
            char kind = tag < LA_KNOWN_TAGS ? kinds[tag] : '?';
            if (kind >= 'a') { /* known and singular (lower case) */
                if (seen & (UINT64_C(1) << tag))
                    return -1;
                seen |= UINT64_C(1) << tag;
            }
            if ((kind | 0x20) == 'i' && size != 8)
                return -1;
            if ((kind | 0x20) == 's' && !la_wire_utf8_valid(value, size))
                return -1;
            if (pass == 1)
                visit(tag, value, size, ctx);
        }
    }
    *type = get16(body);
    return 0;
}

static void visit_generic(uint16_t tag, const uint8_t *value, uint16_t size, void *ctx)
{
    struct la_frame *f = ctx;
    f->fields[f->nfields++] = (struct la_field){.tag = tag, .size = size, .value = value};
}

int la_wire_decode(const uint8_t *body, size_t len, struct la_frame *out)
{
    out->nfields = 0;
    return walk(body, len, &out->type, visit_generic, out);
}

static void copy_str(char *dst, const uint8_t *value, uint16_t size)
{
    /* size <= LA_WIRE_MAX_FIELD and dst holds LA_WIRE_MAX_FIELD + 1: always fits. */
    memcpy(dst, value, size);
    dst[size] = '\0';
}

/* The integer fields the module reads: where each is kept and the bit that says it came. */
static const struct {
    uint16_t tag;
    size_t offset;
    unsigned bit;
} int_fields[] = {
    {LA_TAG_VERSION, offsetof(struct la_reply, version), LA_HAS_VERSION},
    {LA_TAG_CODE, offsetof(struct la_reply, code), LA_HAS_CODE},
    {LA_TAG_EVENT, offsetof(struct la_reply, event), LA_HAS_EVENT},
    {LA_TAG_TRIES_LEFT, offsetof(struct la_reply, tries_left), LA_HAS_TRIES_LEFT},
    {LA_TAG_DELAY_MS, offsetof(struct la_reply, delay_ms), LA_HAS_DELAY_MS},
    {LA_TAG_HINT, offsetof(struct la_reply, hint), LA_HAS_HINT},
};

static void visit_reply(uint16_t tag, const uint8_t *value, uint16_t size, void *ctx)
{
    struct la_reply *r = ctx;
    for (size_t i = 0; i < sizeof int_fields / sizeof int_fields[0]; i++) {
        if (int_fields[i].tag == tag) {
            *(int64_t *)((char *)r + int_fields[i].offset) = get64(value);
            r->present |= int_fields[i].bit;
            return;
        }
    }
    switch (tag) {
    case LA_TAG_MESSAGE:
        copy_str(r->message, value, size);
        break;
    case LA_TAG_PEER_NAME:
        copy_str(r->server, value, size);
        break;
    case LA_TAG_FINGER: /* repeated only in LIST results; the last one wins */
        copy_str(r->finger, value, size);
        break;
    case LA_TAG_PHRASE: /* size <= LA_WIRE_MAX_FIELD: always fits */
        memcpy(r->phrase, value, size);
        r->phrase_len = size;
        r->present |= LA_HAS_PHRASE;
        break;
    default: /* unknown, or not needed by the module: ignored, as the protocol says */
        break;
    }
}

int la_wire_decode_reply(const uint8_t *body, size_t len, struct la_reply *out)
{
    memset(out, 0, sizeof *out);
    if (walk(body, len, &out->type, visit_reply, out) != 0)
        return -1;
    switch (out->type) {
    case LA_MSG_WELCOME:
        return out->present & LA_HAS_VERSION ? 0 : -1;
    case LA_MSG_EVENT:
        return out->present & LA_HAS_EVENT ? 0 : -1;
    case LA_MSG_RESULT:
    case LA_MSG_ERROR:
        return out->present & LA_HAS_CODE ? 0 : -1;
    default:
        return -1;
    }
}

void la_w_begin(struct la_writer *w, uint16_t type)
{
    w->failed = 0;
    put16(w->buf + LA_WIRE_PREFIX, type);
    w->len = LA_WIRE_PREFIX + 2;
}

static void put_field(struct la_writer *w, uint16_t tag, const void *value, size_t size)
{
    if (w->failed || size > LA_WIRE_MAX_FIELD || sizeof w->buf - w->len < 4 + size) {
        w->failed = 1;
        return;
    }
    put16(w->buf + w->len, tag);
    put16(w->buf + w->len + 2, (uint16_t)size);
    if (size > 0)
        memcpy(w->buf + w->len + 4, value, size);
    w->len += 4 + size;
}

void la_w_int(struct la_writer *w, uint16_t tag, int64_t value)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)value >> (56 - 8 * i));
    put_field(w, tag, b, sizeof b);
}

int la_wire_text_fits(const char *s)
{
    size_t n = strnlen(s, LA_WIRE_MAX_FIELD + 1);
    return n <= LA_WIRE_MAX_FIELD && la_wire_utf8_valid((const uint8_t *)s, n);
}

void la_w_str(struct la_writer *w, uint16_t tag, const char *s)
{
    if (!la_wire_text_fits(s))
        w->failed = 1;
    else
        put_field(w, tag, s, strlen(s));
}

size_t la_w_finish(struct la_writer *w)
{
    size_t body = w->len - LA_WIRE_PREFIX;
    if (w->failed || body > LA_WIRE_MAX_BODY)
        return 0;
    w->buf[0] = (uint8_t)(body >> 24);
    w->buf[1] = (uint8_t)(body >> 16);
    w->buf[2] = (uint8_t)(body >> 8);
    w->buf[3] = (uint8_t)body;
    return w->len;
}

size_t la_wire_encode(const struct la_frame *f, uint8_t *buf, size_t cap)
{
    size_t n = LA_WIRE_PREFIX + 2;
    for (size_t i = 0; i < f->nfields; i++)
        n += 4u + f->fields[i].size;
    if (n > cap || n - LA_WIRE_PREFIX > LA_WIRE_MAX_BODY)
        return 0;
    size_t body = n - LA_WIRE_PREFIX, at = LA_WIRE_PREFIX + 2;
    put16(buf, (uint16_t)(body >> 16));
    put16(buf + 2, (uint16_t)body);
    put16(buf + LA_WIRE_PREFIX, f->type);
    for (size_t i = 0; i < f->nfields; i++) {
        const struct la_field *fd = &f->fields[i];
        if (fd->size > LA_WIRE_MAX_FIELD)
            return 0;
        put16(buf + at, fd->tag);
        put16(buf + at + 2, fd->size);
        if (fd->size > 0)
            memcpy(buf + at + 4, fd->value, fd->size);
        at += 4u + fd->size;
    }
    return n;
}

size_t la_encode_hello(struct la_writer *w, const char *client)
{
    la_w_begin(w, LA_MSG_HELLO);
    la_w_int(w, LA_TAG_VERSION, LA_WIRE_VERSION);
    la_w_str(w, LA_TAG_PEER_NAME, client);
    return la_w_finish(w);
}

size_t la_encode_evaluate(struct la_writer *w, const struct la_evaluate *e)
{
    la_w_begin(w, LA_MSG_EVALUATE);
    la_w_int(w, LA_TAG_POLICY, e->policy);
    if (e->user)
        la_w_str(w, LA_TAG_USER, e->user);
    if (e->service)
        la_w_str(w, LA_TAG_SERVICE, e->service);
    if (e->tty)
        la_w_str(w, LA_TAG_TTY, e->tty);
    if (e->reason)
        la_w_str(w, LA_TAG_REASON, e->reason);
    if (e->fallback_title)
        la_w_str(w, LA_TAG_FALLBACK_TITLE, e->fallback_title);
    if (e->flags)
        la_w_int(w, LA_TAG_FLAGS, e->flags);
    la_w_int(w, LA_TAG_TRIES, e->tries);
    la_w_int(w, LA_TAG_TIMEOUT_MS, e->timeout_ms);
    return la_w_finish(w);
}

size_t la_encode_passcode(struct la_writer *w, const char *passcode)
{
    la_w_begin(w, LA_MSG_PASSCODE);
    if (strnlen(passcode, LA_WIRE_MAX_PASSCODE + 1) > LA_WIRE_MAX_PASSCODE)
        w->failed = 1;
    la_w_str(w, LA_TAG_PASSCODE, passcode);
    return la_w_finish(w);
}

size_t la_encode_cancel(struct la_writer *w)
{
    la_w_begin(w, LA_MSG_CANCEL);
    return la_w_finish(w);
}

size_t la_encode_fallback(struct la_writer *w)
{
    la_w_begin(w, LA_MSG_FALLBACK);
    return la_w_finish(w);
}

size_t la_encode_password_used(struct la_writer *w, const char *user, const char *service)
{
    la_w_begin(w, LA_MSG_PASSWORD_USED);
    la_w_str(w, LA_TAG_USER, user);
    if (service)
        la_w_str(w, LA_TAG_SERVICE, service);
    return la_w_finish(w);
}
