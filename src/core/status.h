/* core/status: the error value every fallible function returns.
 * HP_OK (NULL) means success; anything else is a heap-allocated error that
 * carries a one-line message (control bytes from input, such as a newline or
 * an escape sequence in a file name, are written as \n, \xNN). The caller
 * owns it and frees it with
 * hp_status_free (or hands it up with HP_TRY). */
#ifndef HP_CORE_STATUS_H
#define HP_CORE_STATUS_H

#include <stdarg.h>

typedef struct hp_error *hp_status;
#define HP_OK ((hp_status)0)

/* A new error with a printf-style message (never returns NULL). */
hp_status hp_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A new error whose message is `prefix: <message of inner>`; frees inner. */
hp_status hp_error_wrap(hp_status inner, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message ("ok" for HP_OK). */
const char *hp_status_msg(hp_status s);
void hp_status_free(hp_status s);

#ifndef HP_TRY /* also in the public header */
#define HP_TRY(expr)                     \
    do {                                 \
        hp_status hp_try_s_ = (expr);    \
        if (hp_try_s_) return hp_try_s_; \
    } while (0)
#endif

/* Bugs (not bad input) stop the program with a message. */
#define HP_ASSERT(cond)                                          \
    do {                                                         \
        if (!(cond)) hp_panic(__FILE__, __LINE__, #cond);        \
    } while (0)
void hp_panic(const char *file, int line, const char *what) __attribute__((noreturn));

#endif
