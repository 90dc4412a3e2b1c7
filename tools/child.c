#include "child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int hp_run_in_child(void *result, size_t size, void (*fn)(void *result, void *ctx), void *ctx) {
    int fd[2];
    memset(result, 0, size);
    if (pipe(fd) != 0) {
        fn(result, ctx);
        return 0;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        void *mine = calloc(1, size);
        if (mine) fn(mine, ctx);
        ssize_t w = mine ? write(fd[1], mine, size) : -1;
        _exit(w == (ssize_t)size ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = pid > 0 ? read(fd[0], result, size) : -1;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    if (got != (ssize_t)size) {
        memset(result, 0, size);
        return -1;
    }
    return 0;
}
