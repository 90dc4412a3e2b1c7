/* Rematerialisation (parallel/remat, issue 26): a GPT-2 step compiled with
 * --remat none, selective and full gives bit for bit the same loss, every
 * parameter's gradient and the updated parameters (two micro-batches, F0 B0
 * F1 B1 and a split backward F0 F1 b0 b1 W0 W1 run through the actions);
 * the recomputed nodes are forward operators run in the backward phase
 * (full: every block's, linear included; selective: no linear); the memory
 * plan's arena shrinks none > selective > full; a save list keeps what it
 * names; bad names are refused. The same with the head and the loss fused
 * over vocabulary chunks (--loss-chunk), whose arenas are smaller still. */
#include <string.h>

#include "feeder.h"
#include "fixture.h"
#include "parallel/compile.h"
#include "runtime/program.h"

enum { B = 2, T = 16, K = 2 };

typedef struct {
    hp_compiled c;
    hp_param_store ps;
    hp_pool *pool;
    hp_program *p;
    float loss;
} run;

static void run_step(run *r, const hp_graph *model, const hp_gpt2_io *io, const hp_gpt2_config *mc,
                     const hp_remat_opts *ro, int split, int64_t loss_chunk) {
    static const int32_t *tok, *tgt;
    static int32_t tokb[K * B * T], tgtb[K * B * T];
    for (int i = 0; i < K * B * T; i++) tokb[i] = (i * 37 + 5) % 200, tgtb[i] = (i * 53 + 11) % 200;
    tok = tokb, tgt = tgtb;
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .grad_accum = K, .remat = *ro,
                         .schedule = {.overlap = 1, .max_inflight = 4}, .loss_chunk = loss_chunk};
    CHECK_OK(hp_compile(&r->c, model, NULL, 0, &o));
    const hp_graph *g = r->c.rg.g;
    CHECK_OK(hp_param_store_create(&r->ps, g));
    float *ptrs[256];
    for (int i = 0; i < r->ps.n && i < 256; i++) ptrs[i] = hp_param_ptr(&r->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])r->ps.name, r->ps.shape, r->ps.n, mc, 11));
    CHECK_OK(hp_pool_create(&r->pool, 1));
    hp_action acts[2 * K + 3];
    hp_action_list l = r->c.sched.step;
    if (split) { /* F0 F1 b0 b1 W0 W1 Opt */
        int n = 0;
        for (int m = 0; m < K; m++) acts[n++] = (hp_action){HP_ACT_FWD, m, 0};
        for (int m = 0; m < K; m++) acts[n++] = (hp_action){HP_ACT_BWD_INPUT, m, 0};
        for (int m = 0; m < K; m++) acts[n++] = (hp_action){HP_ACT_BWD_WEIGHT, m, 0};
        acts[n++] = (hp_action){HP_ACT_OPT, -1, 0};
        l.act = acts, l.n = n;
        CHECK_OK(hp_program_create_actions(&r->p, g, r->c.sched.order, r->c.sched.n, &l, &r->ps, r->pool, NULL));
    } else {
        CHECK_OK(hp_program_create_ordered(&r->p, g, r->c.sched.order, r->c.sched.n, &r->c.mem, &r->ps, r->pool,
                                           NULL));
    }
    float lr[2] = {1e-3f, 1e-3f};
    memcpy(hp_program_data(r->p, r->c.optim.lr), lr, sizeof lr);
    *(int32_t *)hp_program_data(r->p, r->c.optim.step) = 1;
    feeder fd = {.p = r->p, .tokens = hp_graph_find(g, model->vals[io->tokens].name),
                 .targets = hp_graph_find(g, model->vals[io->targets].name), .micro = r->c.micro, .tok = tok,
                 .tgt = tgt, .per = B * T, .count = K};
    hp_step_io sio = {feeder_feed, &fd, NULL};
    CHECK_OK(hp_program_run_actions(r->p, &r->loss, &l, &sio));
}

static void run_free(run *r) {
    hp_program_destroy(r->p);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
    hp_compiled_free(&r->c);
}

/* The same gradients (accumulators) and updated parameters, bit for bit. */
static int same_state(const run *a, const run *b) {
    const hp_graph *ga = a->c.rg.g, *gb = b->c.rg.g;
    int n = 0;
    for (int v = 0; v < ga->nvals; v++) {
        if (ga->vals[v].kind != HP_V_PARAM || ga->vals[v].grad < 0) continue;
        int w = hp_graph_find(gb, ga->vals[v].name), da = ga->vals[v].grad, db = w >= 0 ? gb->vals[w].grad : -1;
        if (db < 0) return 0;
        size_t bytes = (size_t)hp_val_numel(ga, da) * sizeof(float);
        if (memcmp(hp_program_data(a->p, da), hp_program_data(b->p, db), bytes)) return 0;
        if (memcmp(hp_program_data(a->p, v), hp_program_data(b->p, w), (size_t)hp_val_numel(ga, v) * sizeof(float)))
            return 0;
        n++;
    }
    return n > 20;
}

/* Backward-phase copies of forward operators: how many, and how many of them linear. */
static void count_copies(const hp_compiled *c, int *n, int *linear) {
    *n = *linear = 0;
    const hp_graph *g = c->rg.g;
    for (int i = 0; i < g->nnodes; i++) {
        const char *nm = g->nodes[i].name;
        size_t len = strlen(nm);
        if (len < 6 || strcmp(nm + len - 6, ".remat")) continue;
        CHECK(g->nodes[i].phase == HP_PHASE_BWD);
        (*n)++;
        *linear += !strcmp(g->nodes[i].op->name, "linear");
    }
}

int main(void) {
    hp_gpt2_config mc = {.L = 3, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    hp_kernels_init();
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    hp_remat_opts none = {0}, sel = {.policy = HP_REMAT_SELECTIVE}, full = {.policy = HP_REMAT_FULL};
    hp_remat_opts keep_attn = {.policy = HP_REMAT_SELECTIVE, .nsave = 2, .save = {"linear", "attention"}};
    const hp_remat_opts *pol[4] = {&none, &sel, &full, &keep_attn};
    size_t plain_arena[3] = {0};
    for (int split = 0; split < 3; split++) {
        int64_t lc = split == 2 ? 64 : 0; /* the third round: the head and the loss fused (4 chunks of 200) */
        run r[4];
        size_t arena[4];
        for (int i = 0; i < 4; i++) {
            run_step(&r[i], model, &io, &mc, pol[i], split == 1, lc);
            arena[i] = r[i].c.mem.arena_bytes;
        }
        for (int i = 1; i < 4; i++) {
            CHECK(memcmp(&r[i].loss, &r[0].loss, sizeof(float)) == 0);
            CHECK(same_state(&r[i], &r[0]));
        }
        int n, lin;
        count_copies(&r[0].c, &n, &lin);
        CHECK(n == 0);
        count_copies(&r[1].c, &n, &lin);
        CHECK(n >= 3 * 4 && lin == 0); /* per block at least the two norms, the attention and the GELU */
        int nsel = n;
        count_copies(&r[2].c, &n, &lin);
        CHECK(n > nsel && lin == 3 * 3); /* full: qkv, fc and proj of every block but the block's last proj
                                          * (its output is the residual add's input, which is recomputed too) */
        count_copies(&r[3].c, &n, &lin);
        CHECK(n < nsel && lin == 0);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < r[i].c.rg.g->nnodes; k++)
                CHECK(!(strstr(r[i].c.rg.g->nodes[k].name, ".remat") && !strcmp(r[i].c.rg.g->nodes[k].op->name,
                                                                                  "attention") && i == 3));
        if (split != 1) CHECK(arena[0] > arena[1] && arena[1] > arena[2]);
        if (!split) memcpy(plain_arena, arena, sizeof plain_arena);
        if (split == 2) /* the fused loss holds a chunk where the logits, their probabilities and gradient were */
            for (int i = 0; i < 3; i++) {
                printf("arena %d: %zu fused, %zu plain\n", i, arena[i], plain_arena[i]);
                CHECK(i == 0 ? arena[i] < plain_arena[i] : arena[i] <= plain_arena[i]);
            }
        for (int i = 0; i < 4; i++) run_free(&r[i]);
    }
    hp_remat_policy p;
    hp_status st = hp_remat_parse(&p, "sometimes");
    CHECK(st && strstr(hp_status_msg(st), "--remat"));
    hp_status_free(st);
    hp_graph_destroy(model);
    return hp_test_finish("test_remat");
}
