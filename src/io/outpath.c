/* io/outpath: output paths checked before a run (see the header). */
#include "io/outpath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsutil.h"

/* Entries can be created in directory d: a temporary directory made and removed. */
static hp_status probe(const char *d, const char *what, const char *path) {
    size_t n = strlen(d) + 32;
    char *tmp = malloc(n);
    if (!tmp) return hp_errorf("%s: out of memory", path);
    snprintf(tmp, n, "%s/.hp-probe-XXXXXX", d);
    hp_status e = HP_OK;
    if (!mkdtemp(tmp))
        e = hp_errorf("%s: %s cannot be written: cannot create entries in %s: %s", path, what, d, strerror(errno));
    else if (rmdir(tmp) != 0)
        e = hp_errorf("%s: cannot remove the probe %s: %s", path, tmp, strerror(errno));
    free(tmp);
    return e;
}

/* hp_outpath_check_dir, its errors naming `shown` (dir, or a file to go in it). */
static hp_status check_dir(const char *dir, const char *what, const char *shown) {
    char *cur = strdup(dir);
    if (!cur) return hp_errorf("%s: out of memory", shown);
    hp_status e = HP_OK;
    for (;;) { /* the nearest existing ancestor (dir itself first) */
        struct stat sb;
        if (stat(cur, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                e = hp_errorf("%s: %s cannot be created: %s is not a directory", shown, what, cur);
            else
                e = probe(cur, what, shown);
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR) {
            e = hp_errorf("%s: %s cannot be created: %s: %s", shown, what, cur, strerror(errno));
            break;
        }
        char *up = hp_fs_dirname(cur);
        int same = !strcmp(up, cur);
        free(cur);
        cur = up;
        if (same) { /* "." or "/" missing: nothing left to climb */
            e = hp_errorf("%s: %s cannot be created: no existing parent", shown, what);
            break;
        }
    }
    free(cur);
    return e;
}

hp_status hp_outpath_check_dir(const char *dir, const char *what) {
    if (!dir || !dir[0]) return hp_errorf("%s: empty path", what);
    return check_dir(dir, what, dir);
}

hp_status hp_outpath_make_file_dir(const char *path, const char *what) {
    if (!path || !path[0]) return hp_errorf("%s: empty path", what);
    char *d = hp_fs_dirname(path);
    if (!d) return hp_errorf("%s: out of memory", path);
    hp_status e = check_dir(d, what, path);
    if (!e) e = hp_fs_mkdir_p(d);
    free(d);
    return e ? e : hp_outpath_check_file(path, what);
}

hp_status hp_outpath_check_file(const char *path, const char *what) {
    if (!path || !path[0]) return hp_errorf("%s: empty path", what);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return hp_errorf("%s: %s is a directory", path, what);
    char *d = hp_fs_dirname(path);
    hp_status e = HP_OK;
    if (stat(d, &sb) != 0)
        e = hp_errorf("%s: %s cannot be written: %s: %s", path, what, d, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        e = hp_errorf("%s: %s cannot be written: %s is not a directory", path, what, d);
    else
        e = probe(d, what, path);
    free(d);
    return e;
}
