/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C side of the localauthd wire protocol, version 1 (docs/protocol.md).
 *
 * Pure code: no I/O, no allocation, no globals. Decoded values point into the caller's
 * buffer (generic frames) or are copied into fixed arrays (daemon replies), so a frame can
 * never make this code use more memory than its fixed structs.
 */
#ifndef LOCALAUTH_PAM_WIRE_H
#define LOCALAUTH_PAM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define LA_WIRE_VERSION 1
#define LA_WIRE_PREFIX 4
#define LA_WIRE_MIN_BODY 2
#define LA_WIRE_MAX_BODY 4096
#define LA_WIRE_MAX_FRAME (LA_WIRE_PREFIX + LA_WIRE_MAX_BODY)
#define LA_WIRE_MAX_FIELD 1024
#define LA_WIRE_MAX_PASSCODE 256
/* The most fields a body can hold: every field has a 4-byte header. */
#define LA_WIRE_MAX_FIELDS ((LA_WIRE_MAX_BODY - 2) / 4)

enum la_msg {
    LA_MSG_HELLO = 0x0001,
    LA_MSG_STATUS = 0x0002,
    LA_MSG_CAN_EVALUATE = 0x0003,
    LA_MSG_EVALUATE = 0x0004,
    LA_MSG_CANCEL = 0x0010,
    LA_MSG_PASSCODE = 0x0011,
    LA_MSG_FALLBACK = 0x0012,
    LA_MSG_PASSWORD_USED = 0x0020,
    LA_MSG_WELCOME = 0x8001,
    LA_MSG_EVENT = 0x8002,
    LA_MSG_RESULT = 0x8003,
    LA_MSG_ERROR = 0x80FF,
};

enum la_tag {
    LA_TAG_VERSION = 1,
    LA_TAG_PEER_NAME = 2,
    LA_TAG_USER = 3,
    LA_TAG_SERVICE = 4,
    LA_TAG_TTY = 5,
    LA_TAG_POLICY = 6,
    LA_TAG_REASON = 7,
    LA_TAG_FALLBACK_TITLE = 8,
    LA_TAG_FLAGS = 10,
    LA_TAG_TRIES = 12,
    LA_TAG_TIMEOUT_MS = 13,
    LA_TAG_FINGER = 14,
    LA_TAG_CODE = 15,
    LA_TAG_MESSAGE = 16,
    LA_TAG_EVENT = 17,
    LA_TAG_TRIES_LEFT = 20,
    LA_TAG_DELAY_MS = 21,
    LA_TAG_HINT = 22,
    LA_TAG_PASSCODE = 23,
    LA_TAG_PHRASE = 49, /* the message as a phrase: a nested field list (phrases.h) */
};

enum la_policy { LA_POLICY_BIOMETRICS = 1, LA_POLICY_OWNER = 2 };

enum la_flag { LA_FLAG_INTERACTION_NOT_ALLOWED = 1 << 0, LA_FLAG_PASSCODE_CAPABLE = 1 << 2 };

enum la_event {
    LA_EVENT_PLACE_FINGER = 1,
    LA_EVENT_RETRY = 2,
    LA_EVENT_NO_MATCH = 3,
    LA_EVENT_ENROLL_STAGE = 4,
    LA_EVENT_PASSCODE_NEEDED = 5,
    LA_EVENT_FALLBACK_AVAILABLE = 6,
    LA_EVENT_BIOMETRY_LOCKED = 7,
    LA_EVENT_PASSCODE_WRONG = 8,
    LA_EVENT_INFO = 9,
};

/* One field of a generic frame; value points into the decoded buffer. */
struct la_field {
    uint16_t tag;
    uint16_t size;
    const uint8_t *value;
};

/* Any frame, every field kept in wire order (unknown tags too), for round trips and tests. */
struct la_frame {
    uint16_t type;
    size_t nfields;
    struct la_field fields[LA_WIRE_MAX_FIELDS];
};

/* Which optional fields a reply carried (bits of la_reply.present). */
enum la_present {
    LA_HAS_VERSION = 1 << 0,
    LA_HAS_CODE = 1 << 1,
    LA_HAS_EVENT = 1 << 2,
    LA_HAS_TRIES_LEFT = 1 << 3,
    LA_HAS_DELAY_MS = 1 << 4,
    LA_HAS_HINT = 1 << 5,
    LA_HAS_PHRASE = 1 << 6,
};

/* A daemon → client frame (WELCOME, EVENT, RESULT, ERROR) with the fields the module uses;
 * strings are copied and NUL-terminated. */
struct la_reply {
    uint16_t type;
    unsigned present;
    int64_t version, code, event, tries_left, delay_ms, hint;
    char message[LA_WIRE_MAX_FIELD + 1];
    char server[LA_WIRE_MAX_FIELD + 1];
    char finger[LA_WIRE_MAX_FIELD + 1];
    uint8_t phrase[LA_WIRE_MAX_FIELD]; /* the raw value, rendered by la_phrase_render */
    size_t phrase_len;
};

/* An encoder writing one frame into a fixed buffer; an overflow or a bad string makes the
 * whole frame fail at la_w_finish instead of sending something the daemon would refuse. */
struct la_writer {
    uint8_t buf[LA_WIRE_MAX_FRAME];
    size_t len;
    int failed;
};

/* EVALUATE's fields; NULL strings are left out. */
struct la_evaluate {
    int64_t policy;
    const char *user, *service, *tty, *reason;
    /* "" hides the fallback: the module never answers FALLBACK (its fallback is the password). */
    const char *fallback_title;
    int64_t flags, tries, timeout_ms;
};

/* Body length from a 4-byte prefix; -1 when outside 2 … 4096 (refused before reading). */
long la_wire_body_length(const uint8_t prefix[LA_WIRE_PREFIX]);

/* 1 when s[0..n) is UTF-8 without NUL, overlongs, surrogates or code points past U+10FFFF. */
int la_wire_utf8_valid(const uint8_t *s, size_t n);

/* 1 when the C string s goes on the wire as a text field: at most LA_WIRE_MAX_FIELD bytes of
 * valid UTF-8 (what the daemon accepts). */
int la_wire_text_fits(const char *s);

/* Decodes a body (the bytes after the prefix) into any frame: 0, or -1 when malformed. */
int la_wire_decode(const uint8_t *body, size_t len, struct la_frame *out);

/* Encodes a generic frame, prefix included: the frame's length, or 0 when it does not fit. */
size_t la_wire_encode(const struct la_frame *f, uint8_t *buf, size_t cap);

/* Decodes a daemon reply body: 0, or -1 when malformed, of another type, or missing a
 * required field (WELCOME: version; EVENT: event; RESULT, ERROR: code). */
int la_wire_decode_reply(const uint8_t *body, size_t len, struct la_reply *out);

void la_w_begin(struct la_writer *w, uint16_t type);
void la_w_int(struct la_writer *w, uint16_t tag, int64_t value);
void la_w_str(struct la_writer *w, uint16_t tag, const char *s);
/* Patches the length prefix: the frame's length, or 0 when any step failed. */
size_t la_w_finish(struct la_writer *w);

size_t la_encode_hello(struct la_writer *w, const char *client);
size_t la_encode_evaluate(struct la_writer *w, const struct la_evaluate *e);
size_t la_encode_passcode(struct la_writer *w, const char *passcode);
size_t la_encode_cancel(struct la_writer *w);
size_t la_encode_fallback(struct la_writer *w);
/* PASSWORD_USED: the account's password just succeeded in this service's stack; service may be
 * NULL. */
size_t la_encode_password_used(struct la_writer *w, const char *user, const char *service);

#endif
