/* SPDX-License-Identifier: Apache-2.0 */
/*
 * step_client: one pam_authenticate through pam_localauth.so that reports each step on its
 * standard output the moment it happens, so that a driver (pam/tests/daemon_death.py) can act
 * at a chosen point of the call (touch the virtual reader after the prompt, kill the daemon)
 * and time what follows. Runs under pam_wrapper like the other PAM test clients.
 *
 * Usage: step_client SERVICE USER
 * After pam_start it prints "ready" and waits for one byte (or EOF) on standard input, so that
 * the driver starts the call itself and can aim at its first milliseconds.
 * Lines, times in nanoseconds of CLOCK_MONOTONIC (Python's time.monotonic() clock):
 *   call NS               pam_authenticate is called
 *   msg NS STYLE TEXT     a message reached the conversation (STYLE: PAM_TEXT_INFO 4, …)
 *   result CODE NS        pam_authenticate returned CODE
 * A prompt that wants an answer gets an empty one (the module then cancels).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int conversation(int n, const struct pam_message **msg, struct pam_response **resp,
                        void *data)
{
    (void)data;
    struct pam_response *r = calloc((size_t)n, sizeof *r);
    if (r == NULL)
        return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        const char *text = msg[i]->msg != NULL ? msg[i]->msg : "";
        printf("msg %lld %d %.*s\n", (long long)now_ns(), msg[i]->msg_style,
               (int)strcspn(text, "\n"), text);
        fflush(stdout);
        if (msg[i]->msg_style == PAM_PROMPT_ECHO_OFF || msg[i]->msg_style == PAM_PROMPT_ECHO_ON)
            r[i].resp = strdup("");
    }
    *resp = r;
    return PAM_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: step_client SERVICE USER\n");
        return 64;
    }
    struct pam_conv conv = {conversation, NULL};
    pam_handle_t *pamh = NULL;
    int rc = pam_start(argv[1], argv[2], &conv, &pamh);
    if (rc != PAM_SUCCESS) {
        fprintf(stderr, "pam_start: %d\n", rc);
        return 2;
    }
    printf("ready\n");
    fflush(stdout);
    char go;
    if (read(STDIN_FILENO, &go, 1) < 0)
        return 2;
    printf("call %lld\n", (long long)now_ns());
    fflush(stdout);
    rc = pam_authenticate(pamh, 0);
    int64_t end = now_ns();
    printf("result %d %lld\n", rc, (long long)end);
    fflush(stdout);
    pam_end(pamh, rc);
    return 0;
}
