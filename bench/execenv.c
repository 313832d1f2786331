/*
 * execenv [-w] FILE PROGRAM [ARGS...]: execs PROGRAM with exactly the NAME=VALUE
 * lines of FILE as its environment (values without newlines). With -w it
 * starts PROGRAM as a child instead (vfork, execve, waitpid) and exits as the
 * child did: the least a supervisor such as `envshim run --init` does.
 *
 * The floor for the job envshim does, as bench/startup.sh times it: one extra
 * exec of a small static program, one read of a file, and an execve that
 * hands the program its 1,000+ variables. Passing that many variables through
 * execve costs the kernel real time, which a direct start with a small
 * environment does not pay; this separates the job's cost from envshim's.
 * Built with musl-gcc -static by bench/startup.sh.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[1 << 20];
static char *envp[1 << 14];

int main(int argc, char **argv) {
    int supervise = argc > 1 && strcmp(argv[1], "-w") == 0;
    argv += supervise;
    argc -= supervise;
    if (argc < 3) return 2;
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 66;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    if (len < 0) return 74;
    int n = 0;
    for (char *p = buf, *end = buf + len; p < end && n < (int)(sizeof envp / sizeof *envp) - 1;) {
        char *nl = memchr(p, '\n', end - p);
        if (!nl) nl = end;
        *nl = 0;
        envp[n++] = p;
        p = nl + 1;
    }
    envp[n] = 0;
    if (supervise) {
        pid_t pid = vfork();
        if (pid < 0) return 71;
        if (pid == 0) {
            execve(argv[2], argv + 2, envp);
            _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0) return 71;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    execve(argv[2], argv + 2, envp);
    return 127;
}
