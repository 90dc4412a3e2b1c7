/* layout/text: small string helpers shared by the layout room's parsers
 * (meshes, layouts, plan files). */
#ifndef HP_LAYOUT_TEXT_H
#define HP_LAYOUT_TEXT_H

#include <stddef.h>

/* Copies [a, b) without surrounding blanks into out (cap bytes); returns its
 * length, or -1 if it does not fit. */
int hp_text_trimmed(char *out, size_t cap, const char *a, const char *b);

#endif
