/* report/sbuf: a growing text buffer for the report's HTML and SVG — append,
 * printf, and text escaped for HTML. Running out of memory is remembered and
 * reported once, by hp_sb_finish. */
#ifndef HP_REPORT_SBUF_H
#define HP_REPORT_SBUF_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} hp_sbuf;

void hp_sb_init(hp_sbuf *b);
void hp_sb_free(hp_sbuf *b);
void hp_sb_putn(hp_sbuf *b, const char *s, size_t n);
void hp_sb_put(hp_sbuf *b, const char *s);
void hp_sb_printf(hp_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' escaped (text and attribute values alike). */
void hp_sb_html(hp_sbuf *b, const char *s);
/* Hands over the text (malloc'd, NUL-terminated) and resets b. */
hp_status hp_sb_finish(char **out, size_t *len, hp_sbuf *b);

#endif
