/* SPDX-License-Identifier: Apache-2.0 */
/* Usage: unit GOLDEN_TXT VOCABULARY_TXT MODULE_SO */
#include "harness.h"

#include <string.h>

struct t_state t_state;

void t_begin(const char *name)
{
    t_state.name = name;
    t_state.case_failed = 0;
}

void t_end(void)
{
    if (t_state.case_failed)
        t_state.failed++;
    else
        t_state.passed++;
}

void t_fail(const char *file, int line, const char *what)
{
    t_state.case_failed = 1;
    fprintf(stderr, "FAIL %s (%s:%d): %s\n", t_state.name, file, line, what);
}

FILE *t_open_fixture(const char *name, const char *path)
{
    static char what[300];
    snprintf(what, sizeof what, "%.280s opens", name);
    FILE *f = fopen(path, "r");
    t_begin(what);
    CHECK(f != NULL);
    t_end();
    return f;
}

int t_summary(void)
{
    printf("%d passed, %d failed\n", t_state.passed, t_state.failed);
    return t_state.failed == 0 && t_state.passed > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s GOLDEN_TXT VOCABULARY_TXT MODULE_SO\n", argv[0]);
        return 2;
    }
    test_wire(argv[1]);
    test_vocabulary(argv[2]);
    test_options();
    test_codes();
    test_rules();
    test_phrases(argv[1]);
    test_exports(argv[3]);
    return t_summary();
}
