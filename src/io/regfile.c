#include "io/regfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
    return S_ISFIFO(m)                  ? "a FIFO"
           : S_ISDIR(m)                 ? "a directory"
           : S_ISCHR(m) || S_ISBLK(m)   ? "a device"
           : S_ISSOCK(m)                ? "a socket"
                                        : "not a file";
}

hp_status hp_regfile_check(size_t *size, const char *path, const char *what) {
    struct stat sb;
    if (stat(path, &sb) != 0) return hp_errorf("%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return hp_errorf("%s: not a regular file (%s): %s must be a file", path, kind_of(sb.st_mode), what);
    if (size) *size = (size_t)sb.st_size;
    return HP_OK;
}

/* Opens a file checked to be regular; O_NONBLOCK: should the path turn into
 * a FIFO after the check, open still returns, and fstat sees it. */
static hp_status open_regular(int *fd, size_t *size, const char *path, const char *what) {
    HP_TRY(hp_regfile_check(NULL, path, what));
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0) return hp_errorf("%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    hp_status e = HP_OK;
    if (fstat(*fd, &sb) != 0)
        e = hp_errorf("%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        e = hp_errorf("%s: not a regular file (%s): %s must be a file", path, kind_of(sb.st_mode), what);
    if (e) {
        close(*fd);
        return e;
    }
    *size = (size_t)sb.st_size;
    return HP_OK;
}

hp_status hp_regfile_read(char **data, size_t *n, const char *path, size_t max, const char *what) {
    *data = NULL;
    *n = 0;
    int fd;
    size_t size;
    HP_TRY(open_regular(&fd, &size, path, what));
    if (size > max) {
        close(fd);
        return hp_errorf("%s: %zu bytes, more than the %zu a %s may have", path, size, max, what);
    }
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return hp_errorf("%s: out of memory reading %zu bytes", path, size);
    }
    size_t len = 0;
    hp_status e = HP_OK;
    while (len < size) { /* a file that shrinks is read as far as it goes; one that grows, to its size at open */
        ssize_t r = read(fd, buf + len, size - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            e = hp_errorf("%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    if (e) {
        free(buf);
        return e;
    }
    buf[len] = 0;
    *data = buf;
    *n = len;
    return HP_OK;
}

hp_status hp_regfile_map(const uint8_t **data, size_t *n, const char *path, const char *what) {
    *data = NULL;
    *n = 0;
    int fd;
    size_t size;
    HP_TRY(open_regular(&fd, &size, path, what));
    if (size == 0) {
        close(fd);
        return HP_OK;
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED) return hp_errorf("%s: cannot map: %s", path, strerror(err));
    *data = m;
    *n = size;
    return HP_OK;
}

void hp_regfile_unmap(const uint8_t *data, size_t n) {
    if (data) munmap((void *)data, n);
}
