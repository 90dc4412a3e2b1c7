#include "io/crc_spans.h"

#include <pthread.h>
#include <stdlib.h>

#include "io/crc32c.h"

typedef struct {
    uint64_t begin, end;
    uint32_t crc;
} span;

typedef struct {
    span *v;
    int n, cap;
} span_list;

struct hp_crc_spans {
    pthread_mutex_t mu;
    int nbuf;
    span_list *b; /* [nbuf] */
};

hp_crc_spans *hp_crc_spans_new(int nbuf) {
    hp_crc_spans *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->nbuf = nbuf;
    s->b = calloc((size_t)(nbuf > 0 ? nbuf : 1), sizeof *s->b);
    if (!s->b || pthread_mutex_init(&s->mu, NULL)) {
        free(s->b), free(s);
        return NULL;
    }
    return s;
}

void hp_crc_spans_free(hp_crc_spans *s) {
    if (!s) return;
    for (int i = 0; i < s->nbuf; i++) free(s->b[i].v);
    free(s->b);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int hp_crc_spans_add(hp_crc_spans *s, int buf, uint64_t begin, uint64_t end, uint32_t crc) {
    if (buf < 0 || buf >= s->nbuf) abort(); /* a bug in the caller */
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    span_list *l = &s->b[buf];
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        span *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (v) l->v = v, l->cap = cap;
    }
    if (l->n < l->cap)
        l->v[l->n++] = (span){begin, end, crc};
    else
        rc = -1;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int hp_crc_spans_count(const hp_crc_spans *s, int buf) { return s->b[buf].n; }

static int by_begin(const void *a_, const void *b_) {
    const span *a = a_, *b = b_;
    if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

int hp_crc_spans_whole(uint32_t *crc, hp_crc_spans *s, int buf, uint64_t n) {
    span_list *l = &s->b[buf];
    if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, by_begin);
    uint64_t at = 0;
    uint32_t c = 0;
    for (int i = 0; i < l->n; i++) {
        const span *x = &l->v[i];
        if (x->begin == x->end) continue; /* an empty range says nothing */
        if (i > 0 && x->begin == l->v[i - 1].begin && x->end == l->v[i - 1].end) {
            if (x->crc != l->v[i - 1].crc) return 0; /* two reads of the same bytes disagree: verify whole */
            continue;
        }
        if (x->begin != at || x->end > n) return 0;
        c = hp_crc32c_combine(c, x->crc, x->end - x->begin);
        at = x->end;
    }
    if (at != n) return 0;
    *crc = c;
    return 1;
}

void hp_crc_spans_clear(hp_crc_spans *s, int buf) { s->b[buf].n = 0; }
