/* io/bpe_pretok: GPT-2's pre-tokenization pattern, by hand over UTF-8.
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * The alternatives are tried in order at each position, as a regex engine
 * does: a contraction; else an optional space and a run of letters, numbers
 * or "others" (the class of the first code point after the space decides
 * which); else a run of whitespace, which leaves its last code point to the
 * next piece when something other than whitespace follows (the lookahead
 * (?!\S) backtracks one), unless the run is that one code point. */
#include "io/bpe.h"
#include "io/unicode_class.h"

static hp_uclass class_at(size_t *len, const uint8_t *s, size_t n, size_t i) {
    uint32_t cp;
    *len = hp_utf8_next(&cp, s + i, n - i);
    return cp == HP_UTF8_INVALID ? HP_UC_OTHER : hp_unicode_class(cp);
}

/* The end of the run of code points of class c that starts at i. */
static size_t run_end(const uint8_t *s, size_t n, size_t i, hp_uclass c) {
    while (i < n) {
        size_t len;
        if (class_at(&len, s, n, i) != c) break;
        i += len;
    }
    return i;
}

/* The length of the contraction ('s 't 're 've 'm 'll 'd, lower case only)
 * at i, or 0. */
static size_t contraction(const uint8_t *s, size_t n, size_t i) {
    if (s[i] != '\'' || i + 1 >= n) return 0;
    uint8_t a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    uint8_t b = s[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

size_t hp_bpe_piece_end(const uint8_t *s, size_t n, size_t i) {
    size_t k = contraction(s, n, i);
    if (k) return i + k;
    size_t len;
    if (s[i] == ' ' && i + 1 < n) { /* " ?" followed by a letter, number or other */
        hp_uclass next = class_at(&len, s, n, i + 1);
        if (next != HP_UC_SPACE) return run_end(s, n, i + 1, next);
    }
    hp_uclass c = class_at(&len, s, n, i);
    if (c != HP_UC_SPACE) return run_end(s, n, i, c);
    size_t end = i, last = i; /* last: where the run's last code point starts */
    while (end < n) {
        if (class_at(&len, s, n, end) != HP_UC_SPACE) break;
        last = end;
        end += len;
    }
    if (end == n) return n;        /* \s+(?!\S) at the end of the text */
    return last > i ? last : end;  /* \s+(?!\S) backs off one; else \s+ */
}
