/* SPDX-License-Identifier: Apache-2.0 */
/* The C codec against the golden vectors shared with the Swift codec, and its edges. */
#include "../phrases.h"
#include "../wire.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static struct la_frame frame; /* 16 KiB: not on the stack */
static struct la_reply reply;
static struct la_writer w;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < cap; hex += 2) {
        int hi = hexval(hex[0]), lo = hexval(hex[1]);
        if (hi < 0 || lo < 0)
            break;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return n;
}

/* Whether a whole frame (prefix included) is refused at any step a reader takes. */
static int refused(const uint8_t *bytes, size_t n)
{
    if (n < LA_WIRE_PREFIX)
        return 1;
    long len = la_wire_body_length(bytes);
    if (len < 0 || (size_t)len != n - LA_WIRE_PREFIX)
        return 1;
    return la_wire_decode(bytes + LA_WIRE_PREFIX, (size_t)len, &frame) != 0;
}

static void check_vector(const char *name, const uint8_t *bytes, size_t n)
{
    static uint8_t out[LA_WIRE_MAX_FRAME + 16];
    if (strncmp(name, "invalid-", 8) == 0) {
        CHECK(refused(bytes, n));
        if (n >= LA_WIRE_PREFIX + 2)
            CHECK(la_wire_decode_reply(bytes + 4, n - 4, &reply) != 0);
        return;
    }
    CHECK(!refused(bytes, n));
    CHECK(la_wire_encode(&frame, out, sizeof out) == n);
    CHECK(memcmp(out, bytes, n) == 0);
    /* Daemon → client frames also go through the module's typed decoder; others must not. */
    int from_daemon = frame.type == LA_MSG_WELCOME || frame.type == LA_MSG_EVENT ||
                      frame.type == LA_MSG_RESULT || frame.type == LA_MSG_ERROR;
    CHECK((la_wire_decode_reply(bytes + 4, n - 4, &reply) == 0) == from_daemon);
}

static void golden(const char *path)
{
    char line[16384];
    static uint8_t bytes[8192];
    int vectors = 0;
    FILE *f = t_open_fixture("golden file", path);
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        char *sp = strchr(line, ' ');
        if (line[0] == '#' || sp == NULL)
            continue;
        *sp = '\0';
        size_t n = unhex(sp + 1, bytes, sizeof bytes);
        static char name[300];
        snprintf(name, sizeof name, "golden %.200s", line);
        t_begin(name);
        check_vector(line, bytes, n);
        t_end();
        vectors++;
    }
    fclose(f);
    t_begin("golden file has vectors");
    CHECK(vectors >= 40);
    t_end();
}

/* Decodes a body given in hex (no prefix), so each case fails only for its own reason. */
static int decode_body(const char *hex)
{
    static uint8_t b[8192];
    size_t n = unhex(hex, b, sizeof b);
    CHECK(n * 2 == strlen(hex)); /* the test's own hex is well formed */
    return la_wire_decode(b, n, &frame);
}

static int reply_hex(const char *hex)
{
    static uint8_t b[8192];
    size_t n = unhex(hex, b, sizeof b);
    return n < 4 ? -1 : la_wire_decode_reply(b + 4, n - 4, &reply);
}

static size_t frame_is(size_t len, const char *hex)
{
    static uint8_t b[8192];
    size_t n = unhex(hex, b, sizeof b);
    return len == n && memcmp(w.buf, b, n) == 0;
}

static void encoders_match_golden(void)
{
    CHECK(frame_is(la_encode_hello(&w, "pam_localauth 0.1"),
                   "0000002300010001000800000000000000010002001170616d5f6c6f63616c61757468"
                   "20302e31"));
    CHECK(frame_is(la_encode_cancel(&w), "000000020010"));
    CHECK(frame_is(la_encode_fallback(&w), "000000020012"));
    CHECK(frame_is(la_encode_password_used(&w, "alice", "login"),
                   "00000014002000030005616c696365000400056c6f67696e"));
    CHECK(frame_is(la_encode_passcode(&w, "correct horse"),
                   "0000001300110017000d636f727265637420686f727365"));
    struct la_evaluate ev = {.policy = LA_POLICY_BIOMETRICS,
                             .user = "alice",
                             .service = "sudo",
                             .tty = "/dev/pts/0",
                             .reason = "sudo",
                             .tries = 3,
                             .timeout_ms = 30000};
    CHECK(frame_is(la_encode_evaluate(&w, &ev),
                   "0000004d000400060008000000000000000100030005616c696365000400047375646f00"
                   "05000a2f6465762f7074732f30000700047375646f000c0008000000000000000300"
                   "0d00080000000000007530"));
}

static void typed_reply_values(void)
{
    CHECK(reply_hex("0000004780020011000800000000000000030010002946696e6765727072696e74206e6f"
                    "74207265636f676e69736564202832207472696573206c65667429001400080000000000"
                    "000002") == 0);
    CHECK(reply.type == LA_MSG_EVENT && reply.event == LA_EVENT_NO_MATCH);
    CHECK(reply.present & LA_HAS_TRIES_LEFT && reply.tries_left == 2);
    CHECK(strcmp(reply.message, "Fingerprint not recognised (2 tries left)") == 0);
    CHECK(!(reply.present & LA_HAS_PHRASE));
    /* event-no-match-phrase: the message and the phrase, which the module renders itself. */
    CHECK(reply_hex("0000005b8002001100080000000000000003001000224e6f74207265636f676e697365642c20"
                    "74727920616761696e202832206c6566742900140008000000000000000200310017003200"
                    "076e6f4d61746368003400080000000000000002") == 0);
    CHECK(reply.present & LA_HAS_PHRASE && reply.phrase_len == 23);
    char line[256];
    CHECK(la_phrase_render(reply.phrase, reply.phrase_len, LA_PHRASE_DEFAULT, line, sizeof line) ==
          0);
    CHECK(strcmp(line, "Not recognised, try again (2 left)") == 0);
    CHECK(reply_hex("000000288003000f0008fffffffffffffff80010001642696f6d65747279206973206c6f63"
                    "6b6564206f7574") == 0);
    CHECK(reply.type == LA_MSG_RESULT && reply.code == -8);
    CHECK(reply_hex("0000002c8003000f0008fffffffffffffc140010001a496e746572616374696f6e2069732"
                    "06e6f7420616c6c6f776564") == 0);
    CHECK(reply.code == -1004);
    CHECK(reply_hex("0000002080010001000800000000000000010002000e6c6f63616c617574686420302e31") ==
          0);
    CHECK(reply.version == 1 && strcmp(reply.server, "localauthd 0.1") == 0);
}

static void replies_missing_required_fields_are_refused(void)
{
    CHECK(reply_hex("000000028003") != 0);                         /* RESULT without code */
    CHECK(reply_hex("000000028002") != 0);                         /* EVENT without event */
    CHECK(reply_hex("000000028001") != 0);                         /* WELCOME without version */
    CHECK(reply_hex("0000000e8004000f00080000000000000000") != 0); /* unknown type */
    CHECK(reply_hex("0000000e8003000f00080000000000000000") == 0); /* RESULT 0, no message */
    CHECK(reply.code == 0 && reply.message[0] == '\0');
}

static void utf8_edges(void)
{
    CHECK(decode_body("00020003000561f09f9982") == 0); /* a + U+1F642 */
    CHECK(decode_body("00020003000361c3a9") == 0);     /* é */
    CHECK(decode_body("00020003000361c080") != 0);     /* overlong NUL */
    CHECK(decode_body("00020003000261e0") != 0);       /* truncated, size lies */
    CHECK(decode_body("000200030003eda080") != 0);     /* surrogate */
    CHECK(decode_body("000200030004f4908080") != 0);   /* past U+10FFFF */
    CHECK(decode_body("000200030004f8888080") != 0);   /* 5-byte form */
    CHECK(decode_body("000200030001e0") != 0);         /* lone lead byte */
    CHECK(decode_body("00020003000180") != 0);         /* lone continuation */
    /* Bytes fields carry anything, NUL included; unknown tags are not checked. */
    CHECK(decode_body("8003001c000100") == 0);
    CHECK(decode_body("800303e7000100") == 0);
}

static void field_rules(void)
{
    CHECK(decode_body("000103e70000") == 0);            /* empty unknown field */
    CHECK(decode_body("000103e7000003e70000") == 0);    /* unknown tag twice */
    CHECK(decode_body("000100030000") == 0);            /* empty string */
    CHECK(decode_body("0001000f0000") != 0);            /* int of 0 bytes */
    CHECK(decode_body("0001000e0000000e0000") == 0);    /* finger repeats */
    CHECK(decode_body("0001001f0000001f0000") == 0);    /* device repeats */
    CHECK(decode_body("00010010000000100000") != 0);    /* message twice */
    CHECK(refused((const uint8_t *)"\0\0\0\3\0\1", 6)); /* prefix longer than bytes */
    CHECK(decode_body("0001") == 0);                    /* a bare type */
}

static void length_prefix_bounds(void)
{
    const uint8_t one[4] = {0, 0, 0, 1}, two[4] = {0, 0, 0, 2};
    const uint8_t max[4] = {0, 0, 0x10, 0}, over[4] = {0, 0, 0x10, 1};
    const uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff}, high[4] = {1, 0, 0, 2};
    CHECK(la_wire_body_length(one) == -1);
    CHECK(la_wire_body_length(two) == 2);
    CHECK(la_wire_body_length(max) == 4096);
    CHECK(la_wire_body_length(over) == -1);
    CHECK(la_wire_body_length(huge) == -1);
    CHECK(la_wire_body_length(high) == -1);
}

static void writer_refuses_what_the_daemon_would(void)
{
    static char big[LA_WIRE_MAX_FIELD + 2];
    memset(big, 'a', sizeof big - 1);
    big[LA_WIRE_MAX_FIELD + 1] = '\0';
    CHECK(la_encode_hello(&w, big) == 0); /* 1025 bytes */
    big[LA_WIRE_MAX_FIELD] = '\0';
    CHECK(la_encode_hello(&w, big) == 4 + 2 + 12 + 4 + 1024);
    struct la_evaluate ev = {.policy = 1, .user = big, .service = big, .tty = big, .reason = big};
    CHECK(la_encode_evaluate(&w, &ev) == 0); /* body over 4096 */
    char pass[LA_WIRE_MAX_PASSCODE + 2];
    memset(pass, 'p', sizeof pass - 1);
    pass[LA_WIRE_MAX_PASSCODE + 1] = '\0';
    CHECK(la_encode_passcode(&w, pass) == 0);
    pass[LA_WIRE_MAX_PASSCODE] = '\0';
    CHECK(la_encode_passcode(&w, pass) == 4 + 2 + 4 + 256);
    CHECK(la_encode_passcode(&w, "caf\xe9") == 0); /* Latin-1, not UTF-8 */
    struct la_evaluate bad = {.policy = 1, .user = "al\xffice", .tries = 3, .timeout_ms = 1};
    CHECK(la_encode_evaluate(&w, &bad) == 0);
}

/* What the module leaves out of a request (service, tty) or does not report (user) is exactly
 * what the writer would refuse. */
static void text_fits_is_what_the_writer_takes(void)
{
    static char big[LA_WIRE_MAX_FIELD + 2];
    memset(big, 'a', sizeof big - 1);
    CHECK(!la_wire_text_fits(big)); /* 1025 bytes */
    big[LA_WIRE_MAX_FIELD] = '\0';
    CHECK(la_wire_text_fits(big));
    CHECK(la_wire_text_fits(""));
    CHECK(la_wire_text_fits("caf\xc3\xa9"));
    CHECK(!la_wire_text_fits("caf\xe9")); /* Latin-1, not UTF-8 */
    CHECK(!la_wire_text_fits("al\xffice"));
}

static void generic_encode_refuses_small_buffers(void)
{
    uint8_t small[8];
    CHECK(decode_body("000200030005616c696365") == 0);
    CHECK(la_wire_encode(&frame, small, sizeof small) == 0);
}

void test_wire(const char *golden_path)
{
    golden(golden_path);
    TEST(encoders_match_golden);
    TEST(typed_reply_values);
    TEST(replies_missing_required_fields_are_refused);
    TEST(utf8_edges);
    TEST(field_rules);
    TEST(length_prefix_bounds);
    TEST(writer_refuses_what_the_daemon_would);
    TEST(text_fits_is_what_the_writer_takes);
    TEST(generic_encode_refuses_small_buffers);
}
