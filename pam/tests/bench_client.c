/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_client: times pam_authenticate through pam_localauth.so, driven by bench/bench.py
 * (and pam/tests/hostile.py).
 *
 * Runs under LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR=DIR. Its
 * conversation answers the daemon's "Place your ... finger" PAM_TEXT_INFO by sending
 * "SCAN id" to libfprint's virtual device right there, so what is timed is the stack, not a
 * person. The control protocol is one command per connection: connect, write the command
 * without a newline, shutdown(SHUT_WR), read to EOF (EOF: the device has taken it). The
 * conversation returns as soon as the command is written and a helper thread waits for the
 * EOF and timestamps it; a step marked ":sync" waits for the EOF inside the conversation
 * instead, to measure what that wait would cost.
 *
 * Usage: bench_client VIRTUAL_SOCKET USER RUNS SERVICE:PRINT_ID[:sync]...
 * Run i uses the (i mod n)-th step. One JSON object per run on stdout; times in
 * nanoseconds from CLOCK_MONOTONIC, -1 where the event did not happen:
 *   start_ns   pam_start (service file read, module loaded)
 *   total_ns   pam_authenticate called -> returned
 *   prompt_ns  pam_authenticate called -> the finger prompt reaches the conversation
 *   result_ns  the prompt -> pam_authenticate returned
 *   send_ns    time the conversation spent sending the SCAN (connect, write, shutdown; with
 *              :sync also the wait for EOF)
 *   eof_ns     the prompt -> the device's EOF (the command was taken)
 * The exit status is 0 when every run got through pam_authenticate (whatever its code).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#define MAX_PLAN 16
#define MAX_MSGS 16
#define MSG_KEEP 160
/* How long the SCAN's connect is retried while the virtual device is not listening yet (the
 * daemon opens the reader after it has sent the prompt when the reader was closed). */
#define CONNECT_PATIENCE_NS 3000000000LL
#define CONNECT_RETRY_NS 200000L
#define EOF_PATIENCE_MS 5000

struct step {
    const char *service;
    const char *print_id;
    int sync; /* wait for the device's EOF inside the conversation */
};

/* One run's observations, filled by the conversation and the EOF thread. */
struct run {
    int64_t t_call, t_prompt, t_sent, t_eof;
    int connect_tries;
    int scan_failed; /* errno of the failed send, 0 when it went out */
    int nmsgs;
    int styles[MAX_MSGS];
    char msgs[MAX_MSGS][MSG_KEEP];
};

static const char *virtual_socket;
static const char *print_id;
static int sync_mode;
static struct run cur;

/* The EOF thread: takes one fd at a time, reads it to EOF, timestamps, closes. */
static pthread_mutex_t eof_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t eof_cond = PTHREAD_COND_INITIALIZER;
static int eof_fd = -1; /* handed over, not yet at EOF */
static int64_t eof_at = -1;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Reads fd until EOF or the patience runs out; the time of the EOF, or -1. */
static int64_t read_to_eof(int fd)
{
    char buf[256];
    int64_t give_up = now_ns() + (int64_t)EOF_PATIENCE_MS * 1000000;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == 0)
            return now_ns();
        if (n > 0)
            continue; /* the device sends nothing for SCAN; LIST would land here */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -1;
        int64_t left = (give_up - now_ns()) / 1000000;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) < 0)
            return -1;
    }
}

static void *eof_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&eof_lock);
    for (;;) {
        while (eof_fd < 0)
            pthread_cond_wait(&eof_cond, &eof_lock);
        int fd = eof_fd;
        pthread_mutex_unlock(&eof_lock);
        int64_t at = read_to_eof(fd);
        close(fd);
        pthread_mutex_lock(&eof_lock);
        eof_at = at;
        eof_fd = -1;
        pthread_cond_broadcast(&eof_cond);
    }
    return NULL;
}

/* Waits until the EOF thread is idle (the previous command was taken); returns its EOF time. */
static int64_t wait_eof_idle(void)
{
    pthread_mutex_lock(&eof_lock);
    while (eof_fd >= 0)
        pthread_cond_wait(&eof_cond, &eof_lock);
    int64_t at = eof_at;
    pthread_mutex_unlock(&eof_lock);
    return at;
}

/* Sends "SCAN id" to the virtual device; called from the conversation. */
static void send_scan(void)
{
    char cmd[128];
    int len = snprintf(cmd, sizeof cmd, "SCAN %s", print_id);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", virtual_socket);
    int64_t give_up = now_ns() + CONNECT_PATIENCE_NS;
    int fd;

    /* A new connection drops the one before: never overtake a command not yet taken. */
    wait_eof_idle();
    for (;;) {
        cur.connect_tries++;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            cur.scan_failed = errno;
            return;
        }
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            break;
        int err = errno;
        close(fd);
        if ((err != ENOENT && err != ECONNREFUSED && err != EAGAIN) || now_ns() > give_up) {
            cur.scan_failed = err;
            return;
        }
        struct timespec pause = {0, CONNECT_RETRY_NS};
        nanosleep(&pause, NULL);
    }
    if (write(fd, cmd, (size_t)len) != len || shutdown(fd, SHUT_WR) != 0) {
        cur.scan_failed = errno;
        close(fd);
        return;
    }
    if (sync_mode) {
        cur.t_eof = read_to_eof(fd);
        close(fd);
        cur.t_sent = now_ns();
        return;
    }
    cur.t_sent = now_ns();
    pthread_mutex_lock(&eof_lock);
    eof_fd = fd;
    eof_at = -1;
    pthread_cond_broadcast(&eof_cond);
    pthread_mutex_unlock(&eof_lock);
}

static int conversation(int n, const struct pam_message **msg, struct pam_response **resp,
                        void *data)
{
    (void)data;
    int64_t t = now_ns();
    if (n <= 0)
        return PAM_CONV_ERR;
    for (int i = 0; i < n; i++) {
        int style = msg[i]->msg_style;
        const char *text = msg[i]->msg != NULL ? msg[i]->msg : "";
        if (style == PAM_PROMPT_ECHO_OFF || style == PAM_PROMPT_ECHO_ON)
            return PAM_CONV_ERR; /* the benchmark never answers a question */
        /* The SCAN first, the bookkeeping after. */
        /* " finger ": the daemon's prompt, not the module's "Checking for a fingerprint" line,
         * which comes before the daemon is even asked. */
        if (style == PAM_TEXT_INFO && cur.t_prompt < 0 && strcasestr(text, " finger ") != NULL) {
            cur.t_prompt = t;
            send_scan();
        }
        if (cur.nmsgs < MAX_MSGS) {
            cur.styles[cur.nmsgs] = style;
            snprintf(cur.msgs[cur.nmsgs], MSG_KEEP, "%s", text);
            cur.nmsgs++;
        }
    }
    /* Nothing to answer, but the application owns the (empty) response array. */
    *resp = calloc((size_t)n, sizeof **resp);
    return *resp != NULL ? PAM_SUCCESS : PAM_BUF_ERR;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static int64_t since(int64_t from, int64_t to)
{
    return from < 0 || to < 0 ? -1 : to - from;
}

int main(int argc, char **argv)
{
    int argi = 1;
    if (argc - argi < 4) {
        fprintf(stderr, "usage: %s VIRTUAL_SOCKET USER RUNS SERVICE:PRINT_ID[:sync]...\n", argv[0]);
        return 2;
    }
    virtual_socket = argv[argi];
    const char *user = argv[argi + 1];
    int runs = atoi(argv[argi + 2]);
    struct step plan[MAX_PLAN];
    int nplan = 0;
    for (int i = argi + 3; i < argc && nplan < MAX_PLAN; i++) {
        char *colon = strchr(argv[i], ':');
        if (colon == NULL || colon == argv[i] || colon[1] == '\0') {
            fprintf(stderr, "bad SERVICE:PRINT_ID: %s\n", argv[i]);
            return 2;
        }
        *colon = '\0';
        char *mode = strchr(colon + 1, ':');
        int sync = mode != NULL && strcmp(mode, ":sync") == 0;
        if (mode != NULL && !sync) {
            fprintf(stderr, "bad step mode: %s\n", mode);
            return 2;
        }
        if (mode != NULL)
            *mode = '\0';
        plan[nplan++] = (struct step){argv[i], colon + 1, sync};
    }
    if (runs < 1 || strlen(virtual_socket) >= sizeof((struct sockaddr_un *)0)->sun_path) {
        fprintf(stderr, "bad RUNS or VIRTUAL_SOCKET\n");
        return 2;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, eof_thread, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }

    struct pam_conv conv = {conversation, NULL};
    for (int r = 0; r < runs; r++) {
        const struct step *st = &plan[r % nplan];
        pam_handle_t *pamh = NULL;
        memset(&cur, 0, sizeof cur);
        cur.t_prompt = cur.t_sent = cur.t_eof = -1;
        print_id = st->print_id;
        sync_mode = st->sync;

        int64_t t0 = now_ns();
        int rc = pam_start(st->service, user, &conv, &pamh);
        int64_t t1 = now_ns();
        if (rc != PAM_SUCCESS) {
            fprintf(stderr, "pam_start(%s): %d\n", st->service, rc);
            return 1;
        }
        /* As sudo in a terminal: with no terminal the module first checks that the conversation
         * can show a message (pam_localauth(8), NON-INTERACTIVE CALLERS). */
        rc = pam_set_item(pamh, PAM_TTY, "/dev/pts/0");
        if (rc != PAM_SUCCESS) {
            fprintf(stderr, "pam_set_item(PAM_TTY): %d\n", rc);
            return 1;
        }
        cur.t_call = now_ns();
        rc = pam_authenticate(pamh, 0);
        int64_t t_end = now_ns();
        pam_end(pamh, rc);
        if (!sync_mode && cur.t_sent >= 0)
            cur.t_eof = wait_eof_idle();

        printf("{\"run\":%d,\"service\":", r);
        json_string(st->service);
        printf(",\"print\":");
        json_string(st->print_id);
        printf(",\"sync\":%s,\"rc\":%d,\"start_ns\":%lld,\"total_ns\":%lld,\"prompt_ns\":%lld,"
               "\"result_ns\":%lld,\"send_ns\":%lld,\"eof_ns\":%lld,\"connect_tries\":%d,"
               "\"scan_errno\":%d,\"messages\":[",
               st->sync ? "true" : "false", rc, (long long)(t1 - t0),
               (long long)(t_end - cur.t_call), (long long)since(cur.t_call, cur.t_prompt),
               (long long)since(cur.t_prompt, t_end), (long long)since(cur.t_prompt, cur.t_sent),
               (long long)since(cur.t_prompt, cur.t_eof), cur.connect_tries, cur.scan_failed);
        for (int i = 0; i < cur.nmsgs; i++) {
            printf("%s[%d,", i ? "," : "", cur.styles[i]);
            json_string(cur.msgs[i]);
            putchar(']');
        }
        printf("]}\n");
        fflush(stdout);
    }
    return 0;
}
