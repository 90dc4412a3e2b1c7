/* layout/text: small string helpers shared by the layout room's parsers
 * (meshes, layouts, plan files). */
#ifndef HP_LAYOUT_TEXT_H
#define HP_LAYOUT_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Copies [a, b) without surrounding blanks into out (cap bytes); returns its
 * length, or -1 if it does not fit. */
int hp_text_trimmed(char *out, size_t cap, const char *a, const char *b);

/* Appends printf output to buf[n] at *used and advances *used by its full
 * length, so a first pass with buf NULL (n 0) counts the bytes needed. */
void hp_text_appendf(char *buf, size_t n, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A byte count: digits, then an optional K, M or G (2^10, 2^20, 2^30) with an
 * optional 'i' and 'B' after it ("8M", "8MiB", "65536B"). Returns 0 and sets
 * *out (>= 1, at most 2^50), or -1 when v is not one. */
int hp_text_bytes(int64_t *out, const char *v);

#endif
