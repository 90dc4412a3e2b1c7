/* layout/plan_file: a plan file read whole and parsed (hp_plan_load, plan.h).
 * Only a regular file is read, and no more of it than its size. */
#include "layout/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What st_mode is, for "not a regular file (a FIFO)" (the wording of
 * io/fsutil's hp_fs_open_regular, which this room cannot call: io is above it). */
static const char *kind_name(mode_t m) {
    return S_ISFIFO(m)                  ? "a FIFO"
           : S_ISDIR(m)                 ? "a directory"
           : S_ISCHR(m) || S_ISBLK(m)   ? "a device"
           : S_ISSOCK(m)                ? "a socket"
                                        : "not a file";
}

/* The whole plan file (a NUL after its *n bytes), read as hp_fs_read_bounded
 * does: opened without waiting (O_NONBLOCK: a FIFO never blocks), refused
 * unless fstat says it is a regular file, and read no further than the size
 * it had when opened, at most PLAN_MAX_BYTES. */
enum { PLAN_MAX_BYTES = 64 << 20 };
static hp_status read_plan_file(char **text, size_t *n, const char *path) {
    *text = NULL, *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return hp_errorf("%s: cannot open plan file: %s", path, strerror(errno));
    struct stat sb;
    hp_status st = HP_OK;
    if (fstat(fd, &sb) != 0) st = hp_errorf("%s: cannot stat plan file: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode)) st = hp_errorf("%s: not a regular file (%s)", path, kind_name(sb.st_mode));
    else if (sb.st_size > PLAN_MAX_BYTES)
        st = hp_errorf("%s: %lld bytes, above the limit of %d for a plan file", path, (long long)sb.st_size,
                       PLAN_MAX_BYTES);
    size_t size = st ? 0 : (size_t)sb.st_size, len = 0;
    char *buf = st ? NULL : malloc(size + 1);
    if (!st && !buf) st = hp_errorf("%s: out of memory reading the plan", path);
    while (!st && len < size) { /* a file that shrinks is read as far as it goes */
        ssize_t r = read(fd, buf + len, size - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) st = hp_errorf("%s: read failed: %s", path, strerror(errno));
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd);
    if (st) {
        free(buf);
        return st;
    }
    buf[len] = 0;
    *text = buf, *n = len;
    return HP_OK;
}

hp_status hp_plan_load(hp_plan *out, const char *path) {
    hp_mesh none;
    memset(&none, 0, sizeof none);
    hp_plan_init(out, &none);
    char *buf;
    size_t n;
    HP_TRY(read_plan_file(&buf, &n, path));
    hp_status st = strlen(buf) != n ? hp_errorf("%s: plan file contains a NUL byte", path)
                                    : hp_plan_parse(out, buf, path);
    free(buf);
    return st;
}
