/* tests/api/api_check: the checking vocabulary of the public-API tests
 * (which include <hyperpar/hyperpar.h> alone, not tests/testutil.h): CHECK a
 * condition, OK a call that must succeed (prints its error), ERR a call that
 * must fail with a one-line message containing a needle; `failures` counts. */
#ifndef HP_TESTS_API_CHECK_H
#define HP_TESTS_API_CHECK_H

#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                            \
        }                                                                          \
    } while (0)

/* Runs expr; on error prints it and counts a failure; evaluates to 1 if ok. */
static inline int ok_(hp_status s, const char *what, int line) {
    if (!s) return 1;
    fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, line, what, hp_status_msg(s));
    hp_status_free(s);
    failures++;
    return 0;
}
#define OK(expr) ok_((expr), #expr, __LINE__)

/* Expects an error whose one-line message contains needle. */
static inline void err_(hp_status s, const char *needle, const char *what, int line) {
    if (!s) {
        fprintf(stderr, "%s:%d: %s succeeded, expected an error with '%s'\n", __FILE__, line, what, needle);
        failures++;
        return;
    }
    const char *m = hp_status_msg(s);
    if (!strstr(m, needle) || strchr(m, '\n')) {
        fprintf(stderr, "%s:%d: error '%s' lacks '%s' (or is not one line)\n", __FILE__, line, m, needle);
        failures++;
    }
    hp_status_free(s);
}
#define ERR(expr, needle) err_((expr), (needle), #expr, __LINE__)

#endif
