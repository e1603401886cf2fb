/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot_timer: times one command as a whole process inside the booted system of `make bench-boot`
 * (bench/boot.py), so that nsenter's own start stays outside what is timed.
 *
 * Usage: boot_timer COMMAND [ARG...]
 * Runs COMMAND (its stdout and stderr are this program's), waits for it, and writes one line
 * to stderr: "boot_timer: ns=N status=S t0=T", N the nanoseconds from fork to the end of waitpid
 * (CLOCK_MONOTONIC), S its exit status (128+signal when killed), T the CLOCK_MONOTONIC time of the
 * fork in nanoseconds (systemd's unit timestamps are on the same clock). Exits with 0 once it has
 * timed the command, whatever the command's status; 2 when it cannot run it.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: boot_timer COMMAND [ARG...]\n");
        return 2;
    }
    int64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("boot_timer: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("boot_timer: exec");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("boot_timer: waitpid");
        return 2;
    }
    int64_t elapsed = now_ns() - t0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(stderr, "boot_timer: ns=%lld status=%d t0=%lld\n", (long long)elapsed, code,
            (long long)t0);
    return 0;
}
