/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the codec. Properties checked beyond "no crash":
 * a frame the generic decoder accepts re-encodes to the same bytes, the typed decoder never
 * accepts what the generic one refuses, and its strings are always terminated; a reply's phrase
 * renders into a terminated line within its buffer, or is refused with an empty one.
 */
#include "../phrases.h"
#include "../wire.h"

#include <stdlib.h>
#include <string.h>

static struct la_frame frame;
static struct la_reply reply;
static uint8_t out[LA_WIRE_MAX_FRAME];
static char line[2 * LA_WIRE_MAX_FIELD];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < LA_WIRE_PREFIX)
        return 0;
    long len = la_wire_body_length(data);
    /* Decode only as much as the prefix claims, as the module does. */
    if (len < 0 || (size_t)len > size - LA_WIRE_PREFIX)
        return 0;
    const uint8_t *body = data + LA_WIRE_PREFIX;
    int generic = la_wire_decode(body, (size_t)len, &frame);
    int typed = la_wire_decode_reply(body, (size_t)len, &reply);
    if (typed == 0 && generic != 0)
        abort();
    if (typed == 0 && (memchr(reply.message, 0, sizeof reply.message) == NULL ||
                       memchr(reply.server, 0, sizeof reply.server) == NULL ||
                       memchr(reply.finger, 0, sizeof reply.finger) == NULL))
        abort();
    if (typed == 0 && reply.present & LA_HAS_PHRASE) {
        int rendered =
            la_phrase_render(reply.phrase, reply.phrase_len, LA_PHRASE_DEFAULT, line, sizeof line);
        if (memchr(line, 0, sizeof line) == NULL || (rendered != 0 && line[0] != '\0'))
            abort();
    }
    if (generic == 0) {
        size_t n = la_wire_encode(&frame, out, sizeof out);
        if (n != LA_WIRE_PREFIX + (size_t)len || memcmp(out, data, n) != 0)
            abort();
    }
    return 0;
}
