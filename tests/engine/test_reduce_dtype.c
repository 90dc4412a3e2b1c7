/* parallel/reduce_dtype (--dp-reduce bf16) in hp_compile:
 *  - the pass's line in the log, after lowering and FSDP's nodes, before the
 *    optimizer and the schedule;
 *  - every parameter gradient's all-reduce moves bf16: a cast fp32 -> bf16
 *    of the rank's partial gradient, the reduction from that bf16 value into
 *    a bf16 value, a cast bf16 -> fp32 into the parameter's (persistent) fp32
 *    gradient; the bf16 values are arena values (not persistent); the
 *    reduction's bytes are half the fp32 program's (node, plan, pass totals);
 *  - under DP x TP the tensor-parallel activation reductions stay fp32;
 *  - the schedule: the narrowing cast right before the start, the widening
 *    one right after the wait, the reductions still overlapped (as many
 *    split, the window filled, backward steps between a start and its wait);
 *    with overlap off, the casts right around the blocking reduction;
 *  - gradient accumulation reads the widened gradients (after every widening);
 *  - the arena keeps the in-flight bf16 buffers apart from every step
 *    between a start and its wait;
 *  - HP_F32 changes nothing (the fp32 program has no casts). */
#include <string.h>

#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "ops/ops.h"
#include "parallel/accum.h"
#include "parallel/compile.h"
#include "parallel/rank.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "inflight_check.h"
#include "testutil.h"

static int count_op(const hp_graph *g, const hp_opdef *op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op;
    return n;
}

static int pass_index(const hp_compiled *c, const char *name) {
    for (int i = 0; i < c->npasses; i++)
        if (!strcmp(c->passes[i].name, name)) return i;
    return -1;
}

/* pos[node] = its place in the schedule (malloc'd). */
static int *positions(const hp_compiled *c) {
    int *pos = malloc(sizeof(int) * (size_t)c->rg.g->nnodes);
    for (int i = 0; i < c->rg.g->nnodes; i++) pos[i] = -1;
    for (int k = 0; k < c->sched.n; k++) pos[c->sched.order[k]] = k;
    return pos;
}

/* The node of `ref` (the fp32 program) with n's name. */
static const hp_node *same_name(const hp_graph *ref, const hp_node *n) {
    for (int i = 0; i < ref->nnodes; i++)
        if (!strcmp(ref->nodes[i].name, n->name)) return &ref->nodes[i];
    return NULL;
}

/* The bf16 form of every gradient reduction of c against the fp32 program
 * ref; returns the reductions seen. */
static int check_reductions(const hp_compiled *c, const hp_compiled *ref, int overlap) {
    const hp_graph *g = c->rg.g;
    int *pos = positions(c), seen = 0, between = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        int start = n->op == &hp_op_redistribute_start;
        if (!start && n->op != &hp_op_redistribute) continue;
        int in = n->in[0], out = n->out[0];
        if (!n->a.i[HP_REDIST_GRAD]) { /* the loss, tensor-parallel activations: as they were */
            CHECK(!start && g->vals[in].dtype == g->vals[out].dtype);
            if (n->phase == HP_PHASE_BWD) CHECK(g->vals[in].dtype == HP_F32);
            continue;
        }
        seen++;
        CHECK(start == overlap);
        CHECK(g->vals[in].dtype == HP_BF16 && g->vals[out].dtype == HP_BF16);
        CHECK(!g->vals[in].persistent && !g->vals[out].persistent);
        /* narrowed from the fp32 partial gradient, right before the reduction */
        const hp_node *nar = &g->nodes[g->vals[in].producer];
        CHECK(nar->op == &hp_op_cast && nar->a.i[0] == HP_BF16 && g->vals[nar->in[0]].dtype == HP_F32);
        CHECK(pos[g->vals[in].producer] == pos[i] - 1);
        /* widened into the parameter's gradient, right after the wait (or the reduction) */
        int widen = -1, wait = -1;
        for (int j = 0; j < g->nnodes; j++) {
            const hp_node *m = &g->nodes[j];
            if (m->op == &hp_op_cast && m->in[0] == out) widen = j;
            if (m->op == &hp_op_redistribute_wait && m->in[0] == out) wait = j;
        }
        CHECK(widen >= 0 && (wait >= 0) == overlap);
        if (widen < 0) continue;
        int grad = g->nodes[widen].out[0];
        CHECK(g->nodes[widen].a.i[0] == HP_F32 && g->vals[grad].dtype == HP_F32 && g->vals[grad].persistent);
        CHECK(g->vals[grad].grad_of >= 0 && g->vals[g->vals[grad].grad_of].kind == HP_V_PARAM);
        CHECK(pos[widen] == (overlap ? pos[wait] : pos[i]) + 1);
        if (overlap && wait >= 0) between += pos[wait] - pos[i] > 1;
        /* half the fp32 program's bytes */
        const hp_node *r = same_name(ref->rg.g, n);
        CHECK(r != NULL);
        if (r) {
            CHECKF(n->a.f[0] * 2 == r->a.f[0], "%s: %g bytes, fp32 %g", n->name, n->a.f[0], r->a.f[0]);
            CHECK(c->rg.ctx.plans[n->a.i[0]].bytes * 2 == ref->rg.ctx.plans[r->a.i[0]].bytes);
            CHECK(c->rg.ctx.plans[n->a.i[0]].elem_bytes == 2 && ref->rg.ctx.plans[r->a.i[0]].elem_bytes == 4);
        }
    }
    if (overlap) CHECK(between > 0); /* backward work runs while reductions are in flight */
    free(pos);
    return seen;
}

/* No step between a start and its wait writes bytes of its (bf16) buffers. */
static void check_arena(const hp_compiled *c) {
    const hp_graph *g = c->rg.g;
    hp_param_store ps;
    CHECK_OK(hp_param_store_create(&ps, g));
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 1));
    hp_program *p;
    CHECK_OK(hp_program_create_ordered(&p, g, c->sched.order, c->sched.n, &c->mem, &ps, pool, NULL));
    check_inflight_apart(c, p);
    hp_program_destroy(p);
    hp_pool_destroy(pool);
    hp_param_store_free(&ps);
}

int main(void) {
    const int B = 4, T = 8;
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    int nparams = hp_graph_params(model, NULL, 0);
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};
    hp_compile_opts o16 = o;
    o16.dp_reduce = HP_BF16;

    for (int tp = 1; tp <= 2; tp++) { /* DP 2, and DP 2 x TP 2 */
        hp_plan plan;
        CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, tp));
        for (int overlap = 1; overlap >= 0; overlap--) {
            o.schedule.overlap = o16.schedule.overlap = overlap;
            hp_compiled c32, c16;
            CHECK_OK(hp_compile(&c32, model, &plan, 1, &o));
            CHECK_OK(hp_compile(&c16, model, &plan, 1, &o16));
            CHECK(pass_index(&c32, "dp reduce") < 0 && count_op(c32.rg.g, &hp_op_cast) == 0);
            int at = pass_index(&c16, "dp reduce");
            CHECK(at > pass_index(&c16, "lower") && at < pass_index(&c16, "optimizer"));
            char want[64];
            snprintf(want, sizeof want, "bf16: %d gradient all-reduces narrowed", nparams);
            CHECKF(at >= 0 && strstr(c16.passes[at].note, want), "pass note: %s", at >= 0 ? c16.passes[at].note : "-");
            CHECK(count_op(c16.rg.g, &hp_op_cast) == 2 * nparams);
            CHECK(check_reductions(&c16, &c32, overlap) == nparams);
            CHECK(c16.sched.nsplit == c32.sched.nsplit && c16.sched.nsplit == (overlap ? nparams : 0));
            /* the pass totals: the gradient bytes halved, the rest (tensor-parallel activations) as they were */
            double grad32 = 0;
            for (int i = 0; i < c32.rg.g->nnodes; i++) {
                const hp_node *n = &c32.rg.g->nodes[i];
                if ((n->op == &hp_op_redistribute || n->op == &hp_op_redistribute_start) && n->a.i[HP_REDIST_GRAD])
                    grad32 += n->a.f[0];
            }
            CHECK(grad32 > 0 && c16.rg.bytes[1] == c32.rg.bytes[1] - grad32 / 2);
            CHECK(c16.rg.bytes[0] == c32.rg.bytes[0]);
            if (overlap) check_arena(&c16);
            hp_compiled_free(&c32);
            hp_compiled_free(&c16);
        }
        hp_plan_free(&plan);
    }

    /* gradient accumulation: the accumulators read the widened gradients */
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    o16.schedule.overlap = 1;
    o16.grad_accum = 2;
    hp_compiled c;
    CHECK_OK(hp_compile(&c, model, &plan, 0, &o16));
    int *pos = positions(&c), acc = -1, last_widen = -1;
    for (int i = 0; i < c.rg.g->nnodes; i++) {
        const hp_node *n = &c.rg.g->nodes[i];
        if (n->op == &hp_op_grad_accumulate) acc = i;
        if (n->op == &hp_op_cast && n->a.i[0] == HP_F32 && pos[i] > last_widen) last_widen = pos[i];
    }
    CHECK(acc >= 0 && last_widen >= 0 && pos[acc] > last_widen);
    CHECK(count_op(c.rg.g, &hp_op_cast) == 2 * nparams && c.sched.nsplit == nparams);
    free(pos);
    hp_compiled_free(&c);

    /* a dtype other than fp32 and bf16 is refused */
    o16.grad_accum = 0;
    o16.dp_reduce = HP_I32;
    hp_status st = hp_compile(&c, model, &plan, 0, &o16);
    CHECK(st != HP_OK && strstr(hp_status_msg(st), "fp32 or bf16"));
    hp_status_free(st);
    hp_plan_free(&plan);
    hp_graph_destroy(model);
    return hp_test_finish("test_reduce_dtype");
}
