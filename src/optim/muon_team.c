/* optim/muon_team: muon_team, a team's share of one Newton–Schulz step (see optim/muon_dist.h). */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "optim/muon_dist.h"

static size_t head16(size_t n) { return (n + 15) / 16 * 16; }

static const int64_t *team_tasks(const hp_muon_team_cfg *c) {
    return (const int64_t *)(const void *)((const char *)c + head16(sizeof *c));
}

long hp_muon_team_blob(hp_graph *g, const hp_muon_team_cfg *c, const int64_t *tasks) {
    size_t h = head16(sizeof *c), nt = (size_t)(c->ntask > 0 ? c->ntask : 0);
    size_t bytes = h + sizeof(int64_t) * HP_MUON_TASK * (nt ? nt : 1);
    char *b = calloc(1, bytes);
    if (!b) {
        hp_graph_fail(g, hp_errorf("muon_team: out of memory"));
        return -1;
    }
    memcpy(b, c, sizeof *c);
    if (nt) memcpy(b + h, tasks, sizeof(int64_t) * HP_MUON_TASK * nt);
    long at = hp_graph_blob(g, b, bytes);
    free(b);
    return at;
}

static int64_t task_rows(const int64_t *t) {
    int64_t e = t[5] * HP_NS_ROW_BLOCK < t[2] ? t[5] * HP_NS_ROW_BLOCK : t[2];
    return e - t[4] * HP_NS_ROW_BLOCK;
}

/* The B rows (step) of every task: its rows x r. */
static size_t team_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    const hp_muon_team_cfg *c = hp_graph_blob_at(g, (long)n->a.i[0]);
    const int64_t *t = team_tasks(c);
    size_t most = 8;
    for (int q = 0; c->mode == HP_MUON_TEAM_STEP && q < c->ntask; q++) most += (size_t)(task_rows(&t[HP_MUON_TASK * q]) * t[HP_MUON_TASK * q + 2]);
    return (most + 7) / 8 * 8;
}

typedef struct {
    const hp_muon_team_cfg *c;
    const int64_t *t;
    const float *X, *A;
    float *out, *B;
    long nblk; /* blocks of all tasks */
} team_ctx;

static void team_task(void *ctx, int tid, int nthreads) {
    team_ctx *x = ctx;
    long b, e;
    hp_pool_split(&b, &e, x->nblk, 1, tid, nthreads);
    long seen = 0;
    for (int q = 0; q < x->c->ntask && b < e; q++) {
        const int64_t *t = &x->t[HP_MUON_TASK * q];
        long nb = (long)(t[5] - t[4]);
        for (long j = 0; j < nb; j++, seen++) {
            if (seen < b || seen >= e) continue;
            long r = (long)t[2], c = (long)t[3], blk = (long)t[4] + j;
            int64_t row = (int64_t)j * HP_NS_ROW_BLOCK; /* the block's first row in the task's rows */
            const float *X = x->X + t[0];
            if (x->c->mode == HP_MUON_TEAM_GRAM) {
                hp_ns_block_gram(x->out + t[6] + row * r, X, r, c, blk);
            } else {
                const float *A = x->A + t[1];
                hp_ns_block_step(x->out + t[6] + row * c, x->B + t[7] + row * r, A + blk * HP_NS_ROW_BLOCK * r, A, X, r, c,
                                 blk, x->c->coef);
            }
        }
    }
}

static void team_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_muon_team_cfg *c = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    if (!isfinite(*(const double *)in[0].data)) return; /* a skipped step */
    team_ctx x = {c, team_tasks(c), in[1].data, c->mode == HP_MUON_TEAM_STEP ? in[2].data : NULL, out[0].data,
                  k->scratch, 0};
    for (int q = 0; q < c->ntask; q++) x.nblk += (long)(x.t[HP_MUON_TASK * q + 5] - x.t[HP_MUON_TASK * q + 4]);
    if (x.nblk > 0) hp_pool_run(k->pool, team_task, &x);
}

const hp_opdef hp_op_muon_team = {.name = "muon_team", .nout = 1, .run = team_run, .scratch = team_scratch};
