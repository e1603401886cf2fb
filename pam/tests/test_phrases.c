/* SPDX-License-Identifier: Apache-2.0 */
/* The module's phrase renderer against Tests/Fixtures/protocol/phrases.txt, the vectors the Swift
 * renderer is checked against too (the same English from the same tokens), and la_fill's edges. */
#include <stdint.h>
#include <string.h>

#include "../fill.h"
#include "../phrases.h"
#include "harness.h"

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < cap; hex += 2) {
        unsigned v;
        if (sscanf(hex, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

static void vectors(const char *golden_path)
{
    char path[4096], line[8192];
    int count = 0, invalid = 0;
    snprintf(path, sizeof path, "%s", golden_path);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "phrases.txt");
    FILE *f = t_open_fixture("phrases file", path);
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *name = line, *hex = strchr(line, '\t'), *english;
        if (hex == NULL)
            continue;
        *hex++ = '\0';
        english = strchr(hex, '\t');
        if (english == NULL)
            continue;
        *english++ = '\0';
        static char title[300];
        snprintf(title, sizeof title, "phrase %.200s", name);
        uint8_t value[2048];
        char out[2048];
        size_t n = unhex(hex, value, sizeof value);
        t_begin(title);
        if (strncmp(name, "invalid-", 8) == 0) {
            CHECK(la_phrase_render(value, n, LA_PHRASE_DEFAULT, out, sizeof out) == -1);
            CHECK(out[0] == '\0');
            invalid++;
        } else {
            CHECK(la_phrase_render(value, n, LA_PHRASE_DEFAULT, out, sizeof out) == 0);
            if (strcmp(out, english) != 0)
                fprintf(stderr, "  rendered \"%s\"\n  expected \"%s\"\n", out, english);
            CHECK(strcmp(out, english) == 0);
            /* Any cut of a valid value is refused or renders; never read past it. */
            for (size_t cut = 0; cut < n; cut++)
                (void)la_phrase_render(value, cut, LA_PHRASE_DEFAULT, out, sizeof out);
            count++;
        }
        t_end();
    }
    fclose(f);
    t_begin("phrases file has vectors");
    CHECK(count >= 20 && invalid >= 5);
    t_end();
}

/* Without policy=owner, the password follows too many fingers: the module says password. */
static void locked_says_password_where_the_password_follows(void)
{
    static const uint8_t locked[] = {0,   50,  0,   14,  'b', 'i', 'o', 'm', 'e', 't',
                                     'r', 'y', 'L', 'o', 'c', 'k', 'e', 'd', 0,   52,
                                     0,   8,   0,   0,   0,   0,   0,   0,   0,   0};
    char out[256];
    CHECK(la_phrase_render(locked, sizeof locked, LA_PHRASE_PASSWORD_FALLBACK, out, sizeof out) ==
          0);
    CHECK(strcmp(out, "Too many attempts: use your password") == 0);
    CHECK(la_phrase_render(locked, sizeof locked, LA_PHRASE_DEFAULT, out, sizeof out) == 0);
    CHECK(strcmp(out, "Too many attempts: fingerprint locked") == 0);
}

static void fill_edges(void)
{
    char out[64];
    const char *args[] = {"alice", "sudo"};
    la_fill(out, sizeof out, "%2$s for %1$s", args, 2);
    CHECK(strcmp(out, "sudo for alice") == 0);
    la_fill(out, sizeof out, "%s %s %s", args, 2); /* one conversion too many: empty */
    CHECK(strcmp(out, "alice sudo ") == 0);
    la_fill(out, sizeof out, "100%% %n %x %.3s", args, 2); /* %n is never a conversion here */
    CHECK(strcmp(out, "100% %n %x ali") == 0);
    la_fill(out, sizeof out, "%99999$s|%0$s|%", args, 2);
    CHECK(strcmp(out, "||%") == 0);
    la_fill(out, 8, "%s", (const char *[]){"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4"}, 1); /* 한국어 */
    CHECK(strcmp(out, "\xed\x95\x9c\xea\xb5\xad") == 0); /* cut at a character */
    la_fill(out, 1, "abc", args, 0);
    CHECK(out[0] == '\0');
}

void test_phrases(const char *golden_path)
{
    vectors(golden_path);
    TEST(locked_says_password_where_the_password_follows);
    TEST(fill_edges);
}
