/* optim/phase_exact: the deterministic mode's grad_sumsq_exact node (see
 * optim/phase.h): in[0] weights f32 [n] (each 2^-s), in[1 + k] gradient k;
 * out[0] f64 [HP_SUMSQ_EXACT_WORDS]: the exact accumulator's words. The
 * threads take whole blocks of HP_CLIP_BLOCK values, each into its own
 * accumulator; the accumulators are merged (integer sums: any order). */
#include <string.h>

#include "optim/clip.h"
#include "optim/phase.h"
#include "optim/sumsq_exact.h"

typedef struct {
    const hp_tensor *in;
    int cnt;
    long nblocks;
    hp_sumsq_exact *acc; /* [nthreads] */
} exact_ctx;

static long blocks_of(long n) { return (n + HP_CLIP_BLOCK - 1) / HP_CLIP_BLOCK; }

static void exact_task(void *c_, int tid, int nt) {
    exact_ctx *c = c_;
    hp_sumsq_exact *a = &c->acc[tid];
    hp_sumsq_exact_clear(a);
    long b, e, first = 0;
    hp_pool_split(&b, &e, c->nblocks, 1, tid, nt);
    const float *w = c->in[0].data;
    for (int k = 0; k < c->cnt && first < e; k++) {
        long size = (long)hp_shape_numel(&c->in[1 + k].shape), nb = blocks_of(size);
        const float *g = c->in[1 + k].data;
        int s = hp_sumsq_exact_shift(w[k]);
        HP_ASSERT(s >= 0); /* checked when the node was emitted */
        for (long j = (b > first ? b - first : 0); j < nb && first + j < e; j++) {
            long lo = j * HP_CLIP_BLOCK, hi = lo + HP_CLIP_BLOCK < size ? lo + HP_CLIP_BLOCK : size;
            hp_sumsq_exact_add(a, g + lo, hi - lo, s);
        }
        first += nb;
    }
}

static size_t exact_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)g, (void)n;
    return (size_t)(nt > 0 ? nt : 1) * sizeof(hp_sumsq_exact) / sizeof(float) + 2;
}

static void exact_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    exact_ctx c = {in, n->nxin, 0, (hp_sumsq_exact *)(void *)k->scratch};
    for (int i = 0; i < c.cnt; i++) c.nblocks += blocks_of((long)hp_shape_numel(&in[1 + i].shape));
    int nt = k->pool ? hp_pool_size(k->pool) : 1;
    hp_pool_run(k->pool, exact_task, &c);
    for (int t = 1; t < nt; t++) hp_sumsq_exact_merge(&c.acc[0], &c.acc[t]);
    memcpy(out[0].data, c.acc[0].w, sizeof c.acc[0].w);
}

const hp_opdef hp_op_grad_sumsq_exact = {.name = "grad_sumsq_exact", .nout = 1, .run = exact_run,
                                         .scratch = exact_scratch};
