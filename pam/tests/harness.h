/* SPDX-License-Identifier: Apache-2.0 */
/* A test harness small enough to read in a minute: cases, checks, one summary line. */
#ifndef LOCALAUTH_PAM_TEST_HARNESS_H
#define LOCALAUTH_PAM_TEST_HARNESS_H

#include <stdio.h>

struct t_state {
    int passed, failed, case_failed;
    const char *name;
};
extern struct t_state t_state;

void t_begin(const char *name);
void t_end(void);
void t_fail(const char *file, int line, const char *what);
/* Opens a fixture for reading as a case of its own ("NAME opens"); NULL, and the case failed,
 * when it cannot. */
FILE *t_open_fixture(const char *name, const char *path);
/* Prints "N passed, N failed" and returns the process's exit status. */
int t_summary(void);

#define CHECK(cond) ((cond) ? (void)0 : t_fail(__FILE__, __LINE__, #cond))
#define TEST(fn) (t_begin(#fn), fn(), t_end())

/* Test groups, one per file. */
void test_wire(const char *golden_path);
void test_options(void);
void test_codes(void);
void test_exports(const char *module_path);
void test_rules(void);
void test_phrases(const char *golden_path);
void test_vocabulary(const char *fixture_path);

#endif
