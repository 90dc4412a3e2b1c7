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

/* A message stays one printable line: control bytes that came from input
 * (file names, file contents) are written as \n, \t, \r or \xNN. Idempotent
 * (what it writes has no control bytes), so wrapping an escaped message is
 * safe. Bytes >= 0x80 (UTF-8 names) are kept. */
static void escape_controls(char *msg, size_t cap) {
    size_t n = strlen(msg), k = 0, i = 0;
    for (; i < n && !((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f); i++) {}
    if (i == n) return;
    char out[sizeof ((struct hp_error *)0)->msg];
    if (cap > sizeof out) cap = sizeof out;
    memcpy(out, msg, i);
    k = i;
    for (; i < n && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c >= 0x20 && c != 0x7f) {
            out[k++] = (char)c;
            continue;
        }
        char esc[5];
        int w = c == '\n' ? snprintf(esc, sizeof esc, "\\n")
                : c == '\t' ? snprintf(esc, sizeof esc, "\\t")
                : c == '\r' ? snprintf(esc, sizeof esc, "\\r")
                             : snprintf(esc, sizeof esc, "\\x%02x", c);
        if (k + (size_t)w + 1 > cap) break;
        memcpy(out + k, esc, (size_t)w);
        k += (size_t)w;
    }
    out[k] = 0;
    memcpy(msg, out, k + 1);
}

hp_status hp_errorf(const char *fmt, ...) {
    hp_status e = alloc_error();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    escape_controls(e->msg, sizeof e->msg);
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
    escape_controls(e->msg, sizeof e->msg);
    hp_status_free(inner);
    return e;
}

const char *hp_status_msg(hp_status s) { return s ? s->msg : "ok"; }

void hp_status_free(hp_status s) { free(s); }

void hp_panic(const char *file, int line, const char *what) {
    fprintf(stderr, "hyperpar: internal error at %s:%d: %s\n", file, line, what);
    abort();
}
