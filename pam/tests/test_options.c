/* SPDX-License-Identifier: Apache-2.0 */
/* Argument parsing: defaults, every option, and every way to get one wrong. */
#include "../options.h"
#include "harness.h"

#include <string.h>

static struct la_options o;
static int warnings;
static char last_warning[256];

static void count(void *ctx, const char *arg, const char *why)
{
    (void)ctx;
    warnings++;
    snprintf(last_warning, sizeof last_warning, "%s: %s", arg, why);
}

/* Parses one argument after a reset; returns how many were ignored. */
static int parse1(const char *arg)
{
    warnings = 0;
    int ignored = la_options_parse(&o, 1, &arg, count, NULL);
    CHECK(ignored == warnings);
    return ignored;
}

static void defaults(void)
{
    CHECK(la_options_parse(&o, 0, NULL, count, NULL) == 0);
    CHECK(strcmp(o.socket, "/run/localauthd/socket") == 0);
    CHECK(o.policy == LA_POLICY_BIOMETRICS);
    CHECK(o.timeout == 30 && o.tries == 3);
    CHECK(!o.have_reason && !o.debug && !o.password_first && !o.password_used);
}

static void every_option_applies(void)
{
    const char *argv[] = {"socket=/tmp/x/s",         "policy=owner", "timeout=300",   "tries=5",
                          "reason=unlock the vault", "debug",        "password_first"};
    CHECK(la_options_parse(&o, 7, argv, count, NULL) == 0);
    CHECK(strcmp(o.socket, "/tmp/x/s") == 0);
    CHECK(o.policy == LA_POLICY_OWNER && o.timeout == 300 && o.tries == 5 && o.debug);
    CHECK(o.password_first);
    CHECK(o.have_reason && strcmp(o.reason, "unlock the vault") == 0);
    CHECK(parse1("policy=biometrics") == 0 && o.policy == LA_POLICY_BIOMETRICS);
    CHECK(parse1("timeout=1") == 0 && o.timeout == 1);
    CHECK(parse1("tries=1") == 0 && o.tries == 1);
}

static void later_words_win(void)
{
    const char *argv[] = {"tries=2", "tries=4", "tries=9"};
    CHECK(la_options_parse(&o, 3, argv, count, NULL) == 1);
    CHECK(o.tries == 4);
}

static void socket_limits(void)
{
    char arg[200] = "socket=/";
    memset(arg + 8, 'a', 106); /* "/" + 106 = 107 bytes */
    arg[8 + 106] = '\0';
    CHECK(parse1(arg) == 0 && strlen(o.socket) == 107);
    strcat(arg, "a");
    CHECK(parse1(arg) == 1 && strcmp(o.socket, LA_DEFAULT_SOCKET) == 0);
    CHECK(parse1("socket=relative/s") == 1 && strcmp(o.socket, LA_DEFAULT_SOCKET) == 0);
    CHECK(parse1("socket=") == 1);
    CHECK(parse1("socket") == 1);
}

static void numbers_are_strict(void)
{
    const char *bad[] = {"timeout=0",  "timeout=301", "timeout=-1", "timeout=30s",
                         "timeout= 3", "timeout=",    "timeout=+5", "timeout=99999999999999999999",
                         "tries=0",    "tries=6",     "tries=3.0",  "tries=0x3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(parse1(bad[i]) == 1);
        CHECK(o.timeout == 30 && o.tries == 3);
    }
    CHECK(parse1("timeout=007") == 0 && o.timeout == 7);
}

static void unknown_and_malformed_are_ignored_once_each(void)
{
    const char *argv[] = {"nullok",  "policy=face", "reason=", "reason=\xff", "Debug",
                          "debug=1", "=",           "",        "tries=2"};
    warnings = 0;
    CHECK(la_options_parse(&o, 9, argv, count, NULL) == 8);
    CHECK(warnings == 8); /* one warning per ignored word */
    CHECK(o.tries == 2 && o.policy == LA_POLICY_BIOMETRICS && !o.have_reason && !o.debug);
    CHECK(strstr(last_warning, "unknown") != NULL);
}

static void null_argv_entries_and_no_callback(void)
{
    const char *argv[] = {NULL, "tries=4"};
    CHECK(la_options_parse(&o, 2, argv, NULL, NULL) == 1);
    CHECK(o.tries == 4);
}

static void reason_limits(void)
{
    static char arg[1100] = "reason=";
    memset(arg + 7, 'r', 1024);
    arg[7 + 1024] = '\0';
    CHECK(parse1(arg) == 0 && strlen(o.reason) == 1024);
    arg[7 + 1024] = 'r';
    arg[7 + 1025] = '\0';
    CHECK(parse1(arg) == 1 && !o.have_reason);
    CHECK(parse1("reason=Entsperren — bitte") == 0 && o.have_reason);
}

static void password_first_is_a_bare_word(void)
{
    const char *bad[] = {"password_first=1", "password_first=yes", "Password_first",
                         "password-first",   "password_firstx",    "try_first_pass"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(parse1(bad[i]) == 1 && !o.password_first);
    CHECK(parse1("password_first") == 0 && o.password_first);
}

static void password_used_is_a_bare_word(void)
{
    const char *bad[] = {"password_used=1", "password-used", "Password_used", "password_usedx"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(parse1(bad[i]) == 1 && !o.password_used);
    CHECK(parse1("password_used") == 0 && o.password_used && !o.password_first);
}

static void tty_names_a_terminal_or_a_display(void)
{
    const char *yes[] = {"/dev/pts/3", "/dev/tty1", "tty1", "pts/0", "console", ":0", ":1.0"};
    const char *no[] = {NULL, "", "cron", "ssh", "sudo", "dev/pts/3", "x:0", " /dev/tty1"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        CHECK(la_tty_names_terminal(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        CHECK(!la_tty_names_terminal(no[i]));
}

void test_options(void)
{
    TEST(defaults);
    TEST(every_option_applies);
    TEST(later_words_win);
    TEST(socket_limits);
    TEST(numbers_are_strict);
    TEST(unknown_and_malformed_are_ignored_once_each);
    TEST(null_argv_entries_and_no_callback);
    TEST(reason_limits);
    TEST(password_first_is_a_bare_word);
    TEST(password_used_is_a_bare_word);
    TEST(tty_names_a_terminal_or_a_display);
}
