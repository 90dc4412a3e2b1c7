#include "io/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fault.h"

static char *dup_str(const char *s) {
    char *r = strdup(s);
    HP_ASSERT(r != NULL);
    return r;
}

char *hp_fs_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *r = malloc(a + b + 2);
    HP_ASSERT(r != NULL);
    memcpy(r, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/') r[k++] = '/';
    memcpy(r + k, name, b + 1);
    return r;
}

char *hp_fs_dirname(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* trailing slashes */
    while (n > 0 && path[n - 1] != '/') n--; /* the last component */
    if (n == 0) return dup_str(".");
    while (n > 1 && path[n - 1] == '/') n--; /* the separator */
    char *r = malloc(n + 1);
    HP_ASSERT(r != NULL);
    memcpy(r, path, n);
    r[n] = 0;
    return r;
}

int hp_fs_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

hp_status hp_fs_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return hp_errorf("%s: cannot open directory to sync: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* Some filesystems refuse fsync on directories; that is not a failure
     * of ours. */
    if (rc != 0 && err != EINVAL && err != EROFS)
        return hp_errorf("%s: directory fsync failed: %s", dir, strerror(err));
    return HP_OK;
}

static hp_status write_all(int fd, const void *data, size_t n, const char *name) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return hp_errorf("%s: write failed: %s", name, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return HP_OK;
}

hp_status hp_afile_open(hp_afile *f, const char *path) {
    f->fd = -1;
    f->path = NULL;
    f->tmp = NULL;
    if (!path || !*path) return hp_errorf("(empty path): cannot write a file without a name");
    size_t n = strlen(path);
    if (path[n - 1] == '/') return hp_errorf("%s: is a directory name, not a file name", path);
    char *tmp = malloc(n + 16);
    HP_ASSERT(tmp != NULL);
    snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
    hp_fault_point("create", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        hp_status e = hp_errorf("%s: cannot create the temporary file beside it: %s", path, strerror(errno));
        free(tmp);
        return e;
    }
    (void)fchmod(fd, 0644);
    f->fd = fd;
    f->path = dup_str(path);
    f->tmp = tmp;
    return HP_OK;
}

hp_status hp_afile_write(hp_afile *f, const void *data, size_t n) {
    HP_ASSERT(f->fd >= 0);
    hp_fault_point("write", f->path);
    return write_all(f->fd, data, n, f->path);
}

static void afile_release(hp_afile *f) {
    free(f->path);
    free(f->tmp);
    f->path = f->tmp = NULL;
    f->fd = -1;
}

void hp_afile_abort(hp_afile *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->tmp) unlink(f->tmp);
    afile_release(f);
}

hp_status hp_afile_commit(hp_afile *f) {
    HP_ASSERT(f->fd >= 0);
    hp_status e = HP_OK;
    hp_fault_point("fsync", f->path);
    if (fsync(f->fd) != 0) e = hp_errorf("%s: fsync failed: %s", f->path, strerror(errno));
    if (close(f->fd) != 0 && !e) e = hp_errorf("%s: close failed: %s", f->path, strerror(errno));
    f->fd = -1;
    if (!e) hp_fault_point("rename", f->path);
    if (!e && rename(f->tmp, f->path) != 0)
        e = hp_errorf("%s: cannot rename the temporary file into place: %s", f->path, strerror(errno));
    if (e) {
        unlink(f->tmp);
        afile_release(f);
        return e;
    }
    char *dir = hp_fs_dirname(f->path);
    hp_fault_point("dirsync", f->path);
    e = hp_fs_fsync_dir(dir);
    free(dir);
    afile_release(f);
    return e;
}

hp_status hp_fs_write_atomic(const char *path, const void *data, size_t n) {
    hp_afile f;
    HP_TRY(hp_afile_open(&f, path));
    hp_status e = hp_afile_write(&f, data, n);
    if (e) {
        hp_afile_abort(&f);
        return e;
    }
    return hp_afile_commit(&f);
}

const char *hp_fs_kind_name(unsigned mode) {
    return S_ISFIFO(mode)                    ? "a FIFO"
           : S_ISDIR(mode)                   ? "a directory"
           : S_ISCHR(mode) || S_ISBLK(mode)  ? "a device"
           : S_ISSOCK(mode)                  ? "a socket"
           : S_ISLNK(mode)                   ? "a symbolic link"
                                             : "not a file";
}

hp_status hp_fs_open_regular(int *fd, size_t *size, const char *path) {
    *fd = -1, *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) return hp_errorf("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        hp_status e = hp_errorf("%s: cannot stat: %s", path, strerror(errno));
        close(f);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return hp_errorf("%s: not a regular file (%s)", path, hp_fs_kind_name((unsigned)st.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f, *size = (size_t)st.st_size;
    return HP_OK;
}

hp_status hp_fs_read_bounded(char **data, size_t *n, const char *path, size_t max) {
    return hp_fs_read_as(data, n, path, max, "this file");
}

hp_status hp_fs_read_as(char **data, size_t *n, const char *path, size_t max, const char *what) {
    *data = NULL;
    *n = 0;
    int fd;
    size_t size;
    HP_TRY(hp_fs_open_regular(&fd, &size, path));
    if (size > max) {
        close(fd);
        return hp_errorf("%s: %zu bytes, above the limit of %zu for %s", path, size, max, what);
    }
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return hp_errorf("%s: out of memory reading %zu bytes", path, size + 1);
    }
    size_t len = 0;
    while (len < size) { /* no more than the size it had when opened: a file that grows is read as it was */
        ssize_t r = read(fd, buf + len, size - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            hp_status e = hp_errorf("%s: read failed: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    *data = buf;
    *n = len;
    return HP_OK;
}

hp_status hp_fs_read_all(char **data, size_t *n, const char *path) {
    return hp_fs_read_bounded(data, n, path, SIZE_MAX - 1);
}

hp_status hp_fs_mkdir_p(const char *path) {
    if (!path || !*path) return hp_errorf("(empty path): cannot create a directory without a name");
    char *p = dup_str(path);
    size_t n = strlen(p);
    hp_status e = HP_OK;
    for (size_t i = 1; i <= n && !e; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        if (p[i - 1] == '/') continue; /* repeated slashes */
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            e = hp_errorf("%s: cannot create directory %s: %s", path, p, strerror(errno));
        else {
            struct stat st;
            if ((stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) && c == 0) /* the path itself: named once */
                e = hp_errorf("%s: exists and is not a directory", path);
            else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
                e = hp_errorf("%s: %s exists and is not a directory", path, p);
        }
        p[i] = c;
    }
    free(p);
    return e;
}

hp_status hp_fs_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return HP_OK;
        return hp_errorf("%s: cannot stat: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        hp_fault_point("remove", path);
        if (unlink(path) != 0 && errno != ENOENT)
            return hp_errorf("%s: cannot remove: %s", path, strerror(errno));
        return HP_OK;
    }
    DIR *d = opendir(path);
    if (!d) return hp_errorf("%s: cannot open directory: %s", path, strerror(errno));
    hp_status e = HP_OK;
    struct dirent *de;
    while (!e && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *child = hp_fs_join(path, de->d_name);
        e = hp_fs_remove_tree(child);
        free(child);
    }
    closedir(d);
    if (!e) hp_fault_point("rmdir", path);
    if (!e && rmdir(path) != 0 && errno != ENOENT)
        e = hp_errorf("%s: cannot remove directory: %s", path, strerror(errno));
    return e;
}
