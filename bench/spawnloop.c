/*
 * spawnloop N PROGRAM [ARGS...]: starts PROGRAM N times, one after another
 * (posix_spawn, then wait4), and prints the mean wall time of a start in
 * microseconds. Used by bench/supervise.sh, which alternates commands in
 * short rounds so that a change in the machine's load lands on all of them.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[1]);
    if (n < 1) return 2;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        pid_t pid;
        if (posix_spawn(&pid, argv[2], 0, 0, argv + 2, environ) != 0) return 1;
        int status;
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    printf("%.1f\n", us / n);
    return 0;
}
