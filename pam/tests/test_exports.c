/* SPDX-License-Identifier: Apache-2.0 */
/* The built module exports only the PAM entry points and needs only libc and libpam
 * (after pam-u2f's tests/dlsym_check.c). */
#include "harness.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static const char *module;

static void dlopen_and_dlsym(void)
{
    void *h = dlopen(module, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h == NULL) {
        fprintf(stderr, "  %s\n", dlerror());
        return;
    }
    CHECK(dlsym(h, "pam_sm_authenticate") != NULL);
    CHECK(dlsym(h, "pam_sm_setcred") != NULL);
    const char *hidden[] = {"pam_sm_acct_mgmt", "pam_sm_open_session",  "pam_sm_chauthtok",
                            "la_wire_decode",   "la_wire_decode_reply", "la_options_parse",
                            "la_result_to_pam", "la_encode_evaluate",   "la_wire_utf8_valid"};
    for (size_t i = 0; i < sizeof hidden / sizeof *hidden; i++)
        CHECK(dlsym(h, hidden[i]) == NULL);
    dlclose(h);
}

static char out[65536]; /* the output of the last run_on_module */

/* Runs "TOOL 'MODULE'" and keeps its whole output in out (NUL-terminated); 0 when it exited 0. */
static int run_on_module(const char *tool)
{
    char cmd[4200];
    out[0] = '\0';
    snprintf(cmd, sizeof cmd, "%s '%s'", tool, module);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    return pclose(p) == 0 ? 0 : -1;
}

static void only_pam_sm_symbols_are_defined(void)
{
    CHECK(run_on_module("nm -D --defined-only") == 0);
    int names = 0;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *name = strrchr(line, ' ');
        name = name != NULL ? name + 1 : line;
        names++;
        if (strcmp(name, "pam_sm_authenticate") != 0 && strcmp(name, "pam_sm_setcred") != 0) {
            fprintf(stderr, "  unexpected export: %s\n", name);
            CHECK(!"only pam_sm_authenticate and pam_sm_setcred");
        }
    }
    CHECK(names == 2);
}

static void needs_only_libc_and_libpam(void)
{
    CHECK(run_on_module("readelf -d") == 0);
    int needed = 0;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strstr(line, "(NEEDED)") == NULL)
            continue;
        needed++;
        CHECK(strstr(line, "[libc.so.6]") != NULL || strstr(line, "[libpam.so.0]") != NULL);
    }
    CHECK(needed >= 1);
    CHECK(strstr(out, "RUNPATH") == NULL && strstr(out, "RPATH") == NULL);
}

static void hardened(void)
{
    CHECK(run_on_module("readelf -d -l -s --dyn-syms -W") == 0);
    CHECK(strstr(out, "BIND_NOW") != NULL || strstr(out, "FLAGS_1") != NULL);
    CHECK(strstr(out, "GNU_RELRO") != NULL);
    CHECK(strstr(out, "__stack_chk_fail") != NULL || strstr(out, "_chk") != NULL);
    CHECK(strstr(out, "libswift") == NULL);
}

void test_exports(const char *module_path)
{
    module = module_path;
    TEST(dlopen_and_dlsym);
    TEST(only_pam_sm_symbols_are_defined);
    TEST(needs_only_libc_and_libpam);
    TEST(hardened);
}
