#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hp_error {
    char msg[1024];
};

static hp_status alloc_error(void) {
    hp_status e = calloc(1, sizeof *e);
    if (!e) {
        fputs("hyperpar: out of memory while reporting an error\n", stderr);
        abort();
    }
    return e;
}

hp_status hp_errorf(const char *fmt, ...) {
    hp_status e = alloc_error();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return e;
}

hp_status hp_error_wrap(hp_status inner, const char *fmt, ...) {
    hp_status e = alloc_error();
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    size_t used = (size_t)n < sizeof e->msg ? (size_t)n : sizeof e->msg - 1;
    const char *im = hp_status_msg(inner);
    size_t room = sizeof e->msg - 1 - used;
    if (room >= 2) {
        memcpy(e->msg + used, ": ", 2);
        used += 2;
        room -= 2;
        size_t il = strlen(im);
        if (il > room) il = room;
        memcpy(e->msg + used, im, il);
        used += il;
    }
    e->msg[used] = 0;
    hp_status_free(inner);
    return e;
}

const char *hp_status_msg(hp_status s) { return s ? s->msg : "ok"; }

void hp_status_free(hp_status s) { free(s); }

void hp_panic(const char *file, int line, const char *what) {
    fprintf(stderr, "hyperpar: internal error at %s:%d: %s\n", file, line, what);
    abort();
}
