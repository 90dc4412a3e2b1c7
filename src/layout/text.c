#include "layout/text.h"

#include <ctype.h>
#include <string.h>

int hp_text_trimmed(char *out, size_t cap, const char *a, const char *b) {
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    if ((size_t)(b - a) >= cap) return -1;
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = 0;
    return (int)(b - a);
}
