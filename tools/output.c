/* tools/output: checked closing of outputs (see the header). */
#include "output.h"

#include <errno.h>
#include <string.h>

int hp_cli_close_output(FILE *f, const char *path) {
    errno = 0;
    int bad = ferror(f);
    if (fflush(f) != 0) bad = 1;
    int err = errno;
    if (fclose(f) != 0) bad = 1, err = err ? err : errno;
    if (!bad) return 0;
    fprintf(stderr, "hyperpar: %s: cannot write the output: %s\n", path, err ? strerror(err) : "write failed");
    return 1;
}

int hp_cli_finish_stdout(int rc) {
    errno = 0;
    int bad = ferror(stdout);
    if (fflush(stdout) != 0) bad = 1;
    if (!bad) return rc;
    int err = errno;
    fprintf(stderr, "hyperpar: stdout: cannot write the output: %s\n", err ? strerror(err) : "write failed");
    return rc ? rc : 1;
}
