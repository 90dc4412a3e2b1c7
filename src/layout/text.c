#include "layout/text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
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

int hp_text_bytes(int64_t *out, const char *v) {
    if (!isdigit((unsigned char)v[0])) return -1;
    char *end;
    long long x = strtoll(v, &end, 10);
    int64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = (int64_t)1 << 10, end++;
    else if (*end == 'M') mul = (int64_t)1 << 20, end++;
    else if (*end == 'G') mul = (int64_t)1 << 30, end++;
    if (mul > 1 && *end == 'i') end++;
    if (*end == 'B') end++;
    if (*end || x < 1 || x > ((int64_t)1 << 50) / mul) return -1;
    *out = (int64_t)x * mul;
    return 0;
}
