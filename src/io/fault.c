/* io/fault: crash injection for tests (see the header). */
#include "io/fault.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_long fault_hits; /* calls that matched HP_FAULT_AT's name */

/* The last path component of `what`, without trailing slashes. */
static void last_component(char *out, size_t cap, const char *what) {
    size_t n = strlen(what);
    while (n > 1 && what[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && what[b - 1] != '/') b--;
    size_t len = n - b < cap - 1 ? n - b : cap - 1;
    memcpy(out, what + b, len);
    out[len] = 0;
    /* temporary names end in a random part (mkdtemp): a stable name has none */
    if (len > 11 && (!strncmp(out + len - 11, ".tmp-", 5) || !strncmp(out + len - 11, ".old-", 5) ||
                     !strncmp(out + len - 11, ".del-", 5)))
        memcpy(out + len - 6, "XXXXXX", 6);
}

void hp_fault_point(const char *op, const char *what) {
    const char *at = getenv("HP_FAULT_AT"), *log = getenv("HP_FAULT_LOG");
    if ((!at || !at[0]) && (!log || !log[0])) return;
    char base[256], name[300];
    last_component(base, sizeof base, what);
    snprintf(name, sizeof name, "%s:%s", op, base);
    if (log && log[0]) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            size_t n = strlen(name);
            name[n] = '\n';
            ssize_t w = write(fd, name, n + 1); /* best effort: a test hook's own log */
            (void)w;
            name[n] = 0;
            close(fd);
        }
    }
    if (!at || !at[0]) return;
    const char *hash = strrchr(at, '#');
    size_t len = hash ? (size_t)(hash - at) : strlen(at);
    long nth = hash ? atol(hash + 1) : 1;
    if (len != strlen(name) || memcmp(at, name, len) != 0) return;
    if (atomic_fetch_add(&fault_hits, 1) + 1 != (nth > 0 ? nth : 1)) return;
    raise(SIGKILL);
}
