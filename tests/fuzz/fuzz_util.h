/* tests/fuzz/fuzz_util: what the fuzz targets share. Each target defines
 * LLVMFuzzerTestOneInput; it is linked either with libFuzzer (clang,
 * tests/fuzz/CMakeLists.txt) or with replay.c, which runs the inputs of a
 * corpus once (gcc, the normal test suites). Readers that only take a path
 * read the input from a scratch file in a private temporary directory;
 * broken properties stop the run (abort), which libFuzzer reports as a
 * crash with the input saved. */
#ifndef HP_FUZZ_UTIL_H
#define HP_FUZZ_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of the reader that must hold for every input. */
#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* Frees an error after checking it carries a message (and returns 1 when
 * there was one), so targets can write `if (fuzz_err(e)) return 0;`. With
 * HP_FUZZ_VERBOSE=1 in the environment the messages are printed (to see
 * how far a seed gets). */
static inline int fuzz_err(hp_status e) {
    if (!e) return 0;
    const char *m = hp_status_msg(e);
    FUZZ_CHECK(m != NULL && m[0] != 0);
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("HP_FUZZ_VERBOSE") && !strcmp(getenv("HP_FUZZ_VERBOSE"), "1");
    if (verbose) fprintf(stderr, "fuzz: error: %s\n", m);
    hp_status_free(e);
    return 1;
}

static char fuzz_dir_[64];

static inline void fuzz_dir_remove_(void) {
    if (fuzz_dir_[0]) rmdir(fuzz_dir_);
}

/* The target's private directory under $TMPDIR (or /tmp), made once and
 * removed at exit (its files are removed by the target after each input). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/hp_fuzz_XXXXXX", t && *t && strlen(t) < 40 ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_)) {
            fprintf(stderr, "fuzz: cannot make a directory %s: %s\n", fuzz_dir_, strerror(errno));
            abort();
        }
        atexit(fuzz_dir_remove_);
    }
    return fuzz_dir_;
}

/* Writes data[0, n) to fuzz_dir()/name; the path goes into path (cap bytes). */
static inline void fuzz_write_file(char *path, size_t cap, const char *name, const uint8_t *data, size_t n) {
    snprintf(path, cap, "%s/%s", fuzz_dir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fuzz: cannot create %s: %s\n", path, strerror(errno));
        abort();
    }
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
            abort();
        }
        data += w;
        n -= (size_t)w;
    }
    close(fd);
}

#endif
