/* SPDX-License-Identifier: Apache-2.0 */
#include "fill.h"

#include <string.h>

static size_t utf8_cut(const char *s, size_t n)
{
    /* Back off continuation bytes so a cut never splits a character. */
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static void append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= cap)
        return;
    if (n > cap - 1 - *len)
        n = utf8_cut(s, cap - 1 - *len);
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

void la_fill(char *out, size_t cap, const char *tmpl, const char *const *args, int nargs)
{
    size_t len = 0;
    int next = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (const char *p = tmpl; *p != '\0';) {
        const char *pct = strchr(p, '%');
        if (pct == NULL) {
            append(out, cap, &len, p, strlen(p));
            break;
        }
        append(out, cap, &len, p, (size_t)(pct - p));
        const char *c = pct + 1;
        if (*c == '%') {
            append(out, cap, &len, "%", 1);
            p = c + 1;
            continue;
        }
        int position = -1;
        const char *d = c;
        int value = 0;
        for (; *d >= '0' && *d <= '9'; d++)
            if (value < 100000)
                value = value * 10 + (*d - '0');
        if (d > c && *d == '$') {
            position = value - 1;
            c = d + 1;
        }
        long precision = -1;
        if (*c == '.') {
            precision = 0;
            for (c++; *c >= '0' && *c <= '9'; c++)
                if (precision < 100000)
                    precision = precision * 10 + (*c - '0');
        }
        while (*c != '\0' && strchr("hlzjt", *c) != NULL)
            c++;
        if (*c == '\0' || strchr("sdiu", *c) == NULL) {
            /* Not a conversion of ours: kept as written. */
            append(out, cap, &len, pct, (size_t)(c - pct));
            p = c;
            continue;
        }
        int index = position >= 0 ? position : next;
        next = index + 1;
        if (index >= 0 && index < nargs && args[index] != NULL) {
            size_t n = strlen(args[index]);
            if (precision >= 0 && (size_t)precision < n)
                n = utf8_cut(args[index], (size_t)precision);
            append(out, cap, &len, args[index], n);
        }
        p = c + 1;
    }
}
