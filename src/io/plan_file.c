/* io/plan_file: a plan file read and parsed (see the header). */
#include "io/plan_file.h"

#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"

enum { PLAN_MAX_BYTES = 64 << 20 };

hp_status hp_plan_load(hp_plan *out, const char *path) {
    hp_mesh none;
    memset(&none, 0, sizeof none);
    hp_plan_init(out, &none);
    char *buf;
    size_t n;
    HP_TRY(hp_fs_read_as(&buf, &n, path, PLAN_MAX_BYTES, "a plan file"));
    hp_status st = strlen(buf) != n ? hp_errorf("%s: plan file contains a NUL byte", path)
                                    : hp_plan_parse(out, buf, path);
    free(buf);
    return st;
}
