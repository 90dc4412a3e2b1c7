/* report/sbuf: a growing text buffer (see the header). */
#include "report/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hp_sb_init(hp_sbuf *b) { memset(b, 0, sizeof *b); }

void hp_sb_free(hp_sbuf *b) {
    free(b->s);
    hp_sb_init(b);
}

static int reserve(hp_sbuf *b, size_t extra) {
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return 0;
    }
    b->s = s, b->cap = cap;
    return 1;
}

void hp_sb_putn(hp_sbuf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void hp_sb_put(hp_sbuf *b, const char *s) { hp_sb_putn(b, s, strlen(s)); }

void hp_sb_printf(hp_sbuf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        hp_sb_putn(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void hp_sb_html(hp_sbuf *b, const char *s) {
    const char *run = s;
    for (; *s; s++) {
        const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '"' ? "&quot;"
                                  : *s == '\'' ? "&#39;" : NULL;
        if (!e) continue;
        hp_sb_putn(b, run, (size_t)(s - run));
        hp_sb_put(b, e);
        run = s + 1;
    }
    hp_sb_putn(b, run, (size_t)(s - run));
}

hp_status hp_sb_finish(char **out, size_t *len, hp_sbuf *b) {
    *out = NULL;
    if (b->oom) {
        hp_sb_free(b);
        return hp_errorf("report: out of memory building the page");
    }
    if (!reserve(b, 0)) return hp_errorf("report: out of memory building the page");
    b->s[b->len] = 0;
    *out = b->s;
    if (len) *len = b->len;
    hp_sb_init(b);
    return HP_OK;
}
