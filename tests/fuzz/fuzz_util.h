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

static inline int fuzz_env_on_(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

/* Frees an error after checking it carries a message (and returns 1 when
 * there was one), so targets can write `if (fuzz_err(e)) return 0;`. With
 * HP_FUZZ_VERBOSE=1 in the environment the messages are printed (to see
 * how far a seed gets); with HP_FUZZ_ONE_LINE=1 a message holding a control
 * byte (a newline or escape echoed from the input) is a failure too. */
static inline int fuzz_err(hp_status e) {
    if (!e) return 0;
    const char *m = hp_status_msg(e);
    FUZZ_CHECK(m != NULL && m[0] != 0);
    static int verbose = -1, one_line = -1;
    if (verbose < 0) verbose = fuzz_env_on_("HP_FUZZ_VERBOSE");
    if (one_line < 0) one_line = fuzz_env_on_("HP_FUZZ_ONE_LINE");
    if (verbose) fprintf(stderr, "fuzz: error: %s\n", m);
    if (one_line)
        for (const char *c = m; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                fprintf(stderr, "fuzz: error message holds byte 0x%02x: %s\n", (unsigned char)*c, m);
                FUZZ_CHECK(!"an error message is one line of printable text");
            }
    hp_status_free(e);
    return 1;
}

/* 1 for about one input in `one_in`, chosen by a hash of the input (so a
 * replayed input takes the same path): costly extra checks (going through
 * a file for a reader that also parses memory) run on a sample. */
static inline int fuzz_sample(const uint8_t *data, size_t size, unsigned one_in) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
    return h % one_in == 0;
}

static char fuzz_dir_[64];

static inline void fuzz_dir_remove_(void) {
    if (fuzz_dir_[0]) rmdir(fuzz_dir_);
}

/* The target's private directory under $TMPDIR, else /dev/shm (memory: a
 * file per input costs little there), else /tmp; made once and removed at
 * exit (the target removes its files after each input). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_[0]) {
        const char *t = getenv("TMPDIR");
        if (!t || !*t || strlen(t) >= 40) t = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/hp_fuzz_XXXXXX", t);
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
