/* io/regfile: input files that must be regular files (see the header), over
 * io/fsutil's one opening helper, with what the file is for in the error. */
#include "io/regfile.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsutil.h"

/* e with " (WHAT must be a file)" when it is a refusal of a non-regular file. */
static hp_status for_what(hp_status e, const char *what) {
    if (!e || !strstr(hp_status_msg(e), "not a regular file")) return e;
    return hp_error_wrap(e, "%s must be a regular file", what);
}

hp_status hp_regfile_check(size_t *size, const char *path, const char *what) {
    int fd;
    size_t n;
    HP_TRY(for_what(hp_fs_open_regular(&fd, &n, path), what));
    close(fd);
    if (size) *size = n;
    return HP_OK;
}

hp_status hp_regfile_read(char **data, size_t *n, const char *path, size_t max, const char *what) {
    return for_what(hp_fs_read_as(data, n, path, max, what), what);
}

hp_status hp_regfile_map(const uint8_t **data, size_t *n, const char *path, const char *what) {
    *data = NULL;
    *n = 0;
    int fd;
    size_t size;
    HP_TRY(for_what(hp_fs_open_regular(&fd, &size, path), what));
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
