/* io/fsutil: files that are either wholly written or not there at all.
 * An atomic write goes to a temporary name in the same directory, is fsynced,
 * renamed over the target, and the directory is fsynced. Also: reading a
 * whole file, mkdir -p, removing a directory tree. Every error names the
 * file and the problem. */
#ifndef HP_IO_FSUTIL_H
#define HP_IO_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A file being written atomically: open, write any number of times, then
 * commit (publish under the final name) or abort (leave nothing behind).
 * Plain struct owned by the caller; commit and abort both release it. */
typedef struct {
    int fd;
    char *path; /* final name (malloc'd) */
    char *tmp;  /* temporary name in the same directory (malloc'd) */
} hp_afile;

hp_status hp_afile_open(hp_afile *f, const char *path);
hp_status hp_afile_write(hp_afile *f, const void *data, size_t n);
/* fsync, close, rename into place, fsync the directory. On error the
 * temporary file is removed and the target is left as it was. */
hp_status hp_afile_commit(hp_afile *f);
void hp_afile_abort(hp_afile *f);

/* Writes n bytes to path atomically. */
hp_status hp_fs_write_atomic(const char *path, const void *data, size_t n);
/* Opens path for reading if it is a regular file; anything else (a FIFO, a
 * device such as /dev/zero, a directory, a socket) is refused with "PATH: not
 * a regular file (a FIFO)" without waiting on it. *size: its size. */
hp_status hp_fs_open_regular(int *fd, size_t *size, const char *path);
/* "a FIFO", "a directory", "a device", ... for a st_mode. */
const char *hp_fs_kind_name(unsigned mode);
/* Reads a whole regular file of at most max bytes into *data (malloc'd,
 * caller frees, with one extra NUL byte after the n bytes so text can be used
 * as a C string). Every reader of a whole file goes through here. */
hp_status hp_fs_read_bounded(char **data, size_t *n, const char *path, size_t max);
/* The same, the limit's error saying what the file is ("a plan file"). */
hp_status hp_fs_read_as(char **data, size_t *n, const char *path, size_t max, const char *what);
/* hp_fs_read_bounded with no limit but the file's own size. */
hp_status hp_fs_read_all(char **data, size_t *n, const char *path);
/* Creates path and its missing parents (mode 0755); existing dirs are fine. */
hp_status hp_fs_mkdir_p(const char *path);
/* fsyncs a directory (makes renames and creations in it durable). */
hp_status hp_fs_fsync_dir(const char *dir);
/* Removes a file or a directory tree (does not follow symlinks). A missing
 * path is not an error. */
hp_status hp_fs_remove_tree(const char *path);
/* 1 if path exists (any kind), 0 if not. */
int hp_fs_exists(const char *path);
/* The directory part of path ("." when there is none); malloc'd. */
char *hp_fs_dirname(const char *path);
/* dir + "/" + name; malloc'd. */
char *hp_fs_join(const char *dir, const char *name);

#endif
