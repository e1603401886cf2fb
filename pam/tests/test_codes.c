/* SPDX-License-Identifier: Apache-2.0 */
/* Every row of the result → PAM code table in pam_localauth(8). */
#include "../codes.h"
#include "harness.h"

#include <security/_pam_types.h>
#include <string.h>

static const struct la_outcome plain = {0, 0}, exhausted = {1, 0}, conv = {0, 1};

static void table(void)
{
    static const struct {
        int64_t code;
        int pam;
    } rows[] = {
        {0, PAM_SUCCESS},
        {-1, PAM_AUTH_ERR},
        {-2, PAM_AUTH_ERR},
        {-3, PAM_AUTHINFO_UNAVAIL},
        {-4, PAM_AUTHINFO_UNAVAIL},
        {-5, PAM_AUTHINFO_UNAVAIL},
        {-6, PAM_AUTHINFO_UNAVAIL},
        {-7, PAM_AUTHINFO_UNAVAIL},
        {-8, PAM_AUTHINFO_UNAVAIL},
        {-9, PAM_AUTH_ERR},
        {-10, PAM_AUTHINFO_UNAVAIL},
        {-13, PAM_AUTHINFO_UNAVAIL},
        {-1004, PAM_AUTHINFO_UNAVAIL},
        {-1100, PAM_AUTH_ERR},
        {-1101, PAM_AUTHINFO_UNAVAIL},
        {-1102, PAM_USER_UNKNOWN},
        {-1103, PAM_AUTHINFO_UNAVAIL},
        {-1104, PAM_AUTH_ERR},
        {-1105, PAM_AUTHINFO_UNAVAIL},
        {-1106, PAM_AUTHINFO_UNAVAIL},
        {-1107, PAM_AUTHINFO_UNAVAIL},
        {1, PAM_AUTH_ERR},
        {-11, PAM_AUTH_ERR},
        {INT64_MIN, PAM_AUTH_ERR},
        {INT64_MAX, PAM_AUTH_ERR},
        {(int64_t)1 << 32, PAM_AUTH_ERR}, /* must not truncate to 0 */
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        if (la_result_to_pam(rows[i].code, &plain) != rows[i].pam)
            fprintf(stderr, "  row %lld\n", (long long)rows[i].code);
        CHECK(la_result_to_pam(rows[i].code, &plain) == rows[i].pam);
    }
}

static void tries_exhausted_is_maxtries_only_for_a_failure(void)
{
    CHECK(la_result_to_pam(-1, &exhausted) == PAM_MAXTRIES);
    CHECK(la_result_to_pam(0, &exhausted) == PAM_SUCCESS);
    CHECK(la_result_to_pam(-8, &exhausted) == PAM_AUTHINFO_UNAVAIL);
}

static void conversation_failure_is_conv_err_for_cancels(void)
{
    CHECK(la_result_to_pam(-2, &conv) == PAM_CONV_ERR);
    CHECK(la_result_to_pam(-9, &conv) == PAM_CONV_ERR);
    CHECK(la_result_to_pam(0, &conv) == PAM_SUCCESS);
    CHECK(la_result_to_pam(-1, &conv) == PAM_AUTH_ERR);
}

static void shown_results_and_names(void)
{
    CHECK(la_result_is_shown(-8) && la_result_is_shown(-1107) && la_result_is_shown(-1100));
    CHECK(la_result_is_shown(-6) && la_result_is_shown(-13) && la_result_is_shown(-1004));
    CHECK(strcmp(la_result_name(-13), "biometryDisconnected") == 0);
    CHECK(!la_result_is_shown(-7) && !la_result_is_shown(0) && !la_result_is_shown(-1));
    CHECK(strcmp(la_result_name(-1107), "timedOut") == 0);
    CHECK(strcmp(la_result_name(42), "unknown") == 0);
}

void test_codes(void)
{
    TEST(table);
    TEST(tries_exhausted_is_maxtries_only_for_a_failure);
    TEST(conversation_failure_is_conv_err_for_cancels);
    TEST(shown_results_and_names);
}
