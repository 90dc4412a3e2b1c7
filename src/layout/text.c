#include "layout/text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int hp_text_trimmed(char *out, size_t cap, const char *a, const char *b) {
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    if ((size_t)(b - a) >= cap) return -1;
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = 0;
    return (int)(b - a);
}

void hp_text_appendf(char *buf, size_t n, size_t *used, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *dst = buf && *used < n ? buf + *used : NULL;
    int k = vsnprintf(dst, dst ? n - *used : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *used += (size_t)k;
}
