/* tests/testutil: tiny assertion helpers shared by the tests. Each test binary
 * prints one line per failed check and exits non-zero if any failed. */
#ifndef HP_TESTUTIL_H
#define HP_TESTUTIL_H

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* Failed checks so far; atomic, so threads of one test may check too. */
static atomic_int hp_test_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            hp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

/* CHECK with a printf-style account of the values involved. */
#define CHECKF(cond, ...)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            hp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_OK(expr)                                                           \
    do {                                                                         \
        hp_status s_ = (expr);                                                   \
        if (s_) {                                                                \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,  \
                    hp_status_msg(s_));                                          \
            hp_status_free(s_);                                                  \
            hp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

/* Expects an error whose message contains `needle`. */
#define CHECK_ERR(expr, needle)                                                  \
    do {                                                                         \
        hp_status s_ = (expr);                                                   \
        if (!s_) {                                                               \
            fprintf(stderr, "%s:%d: %s succeeded, expected error '%s'\n", __FILE__, \
                    __LINE__, #expr, needle);                                    \
            hp_test_failures++;                                                  \
        } else {                                                                 \
            if (!strstr(hp_status_msg(s_), needle)) {                            \
                fprintf(stderr, "%s:%d: error '%s' lacks '%s'\n", __FILE__, __LINE__, \
                        hp_status_msg(s_), needle);                              \
                hp_test_failures++;                                              \
            }                                                                    \
            hp_status_free(s_);                                                  \
        }                                                                        \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                    \
    do {                                                                         \
        double a_ = (a), b_ = (b);                                               \
        if (!(fabs(a_ - b_) <= (tol))) {                                         \
            fprintf(stderr, "%s:%d: %s = %.9g, %s = %.9g, |diff| > %g\n", __FILE__, \
                    __LINE__, #a, a_, #b, b_, (double)(tol));                    \
            hp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

static inline int hp_test_finish(const char *name) {
    if (hp_test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, hp_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* Deterministic test randomness (xorshift64*). */
typedef struct {
    unsigned long long s;
} hp_test_rng;
static inline double hp_test_uniform(hp_test_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (double)((r->s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}
static inline double hp_test_normal(hp_test_rng *r) {
    double u1 = hp_test_uniform(r), u2 = hp_test_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
