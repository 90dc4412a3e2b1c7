/* The expert-parallel overlap pass (parallel/ep_overlap) and the schedule
 * around it, on moe-tiny's program for rank 0 (compiled without a
 * communicator, as `hyperpar plan` does), under EP 2, DP 2 x EP 2 with FSDP,
 * and EP 2 x TP 2:
 *  - every exchange is a start and a wait, each wait after its start and
 *    before every reader of the rows it completes; every node's inputs are
 *    made before it runs;
 *  - something runs between every start and its wait: in the forward the
 *    shared expert's first linear inside the send and its SwiGLU inside the
 *    return, in the backward the shared expert's backward inside the first
 *    exchange;
 *  - no request slot is started again while a call on it is in flight (the
 *    schedule numbers its reductions' slots in the order it places them),
 *    and every slot is waited by the end of its phase;
 *  - with the overlap off, every exchange blocks; "auto" splits an exchange
 *    only where its group spans supernodes (EP 2 with one rank per
 *    supernode: split; all in one supernode: blocking);
 *  - with each MoE layer's tokens in 2 chunks (--moe-chunks): the two
 *    chunks' exchanges are in flight together and one chunk's experts run
 *    inside the other's exchange (chunk 0's under chunk 1's send, chunk 1's
 *    under chunk 0's return, chunk 1's backward under chunk 0's);
 *  - a layer's shared-expert gradient reduction starts after the layer's
 *    last exchange of the backward (the lane runs calls in start order).
 * tests/cli/moe checks the losses are the same bits either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll_desc.h"
#include "layout/plan.h"
#include "models/gpt2_plan.h"
#include "models/llama.h"
#include "parallel/compile.h"
#include "testutil.h"

#define SLOTS 64

static int is_ep(const hp_graph *g, const hp_node *n, hp_coll_desc *d) {
    return hp_coll_describe(d, g, n) && d->purpose && !strcmp(d->purpose, "expert parallelism");
}

static int between_has(const hp_graph *g, const int *order, int from, int to, const char *name) {
    for (int i = from + 1; i < to; i++)
        if (!strcmp(g->nodes[order[i]].name, name)) return 1;
    return 0;
}

/* every node placed once, after the producers of its inputs */
static void check_order(const char *what, const hp_graph *g, const int *order, int n) {
    int *pos = malloc(sizeof(int) * (size_t)g->nnodes);
    for (int i = 0; i < g->nnodes; i++) pos[i] = -1;
    for (int i = 0; i < n; i++) pos[order[i]] = i;
    int bad_inputs = 0, unplaced = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (pos[i] < 0) {
            unplaced++;
            continue;
        }
        const hp_node *nd = &g->nodes[i];
        for (int k = 0; k < hp_node_nin_all(nd); k++) {
            int v = hp_node_input(g, nd, k), p = v >= 0 ? g->vals[v].producer : -1;
            if (p >= 0 && p != i && pos[p] > pos[i]) bad_inputs++;
        }
    }
    CHECKF(!unplaced && !bad_inputs, "%s: %d nodes unplaced, %d inputs read before they are made", what, unplaced,
           bad_inputs);
    free(pos);
}

/* no node between an exchange's start (order[st]) and its wait (order[w]) reads the rows the start receives */
static void check_rows_after_wait(const char *what, const hp_graph *g, const int *order, int st, int w) {
    const hp_node *sn = &g->nodes[order[st]];
    for (int k = 0; k < sn->nout; k++) {
        int v = sn->out[k];
        if (v < 0 || g->vals[v].shape.ndim != 2) continue;
        for (int j = st + 1; j < w; j++) {
            const hp_node *r = &g->nodes[order[j]];
            for (int q = 0; q < hp_node_nin_all(r); q++)
                CHECKF(hp_node_input(g, r, q) != v, "%s: '%s' reads '%s' before its exchange's wait", what, r->name,
                       g->vals[v].name);
        }
    }
}

static void check_program(const char *what, const hp_compiled *c, int overlap, int chunks) {
    const hp_graph *g = c->rg.g;
    const int *order = c->sched.order;
    int n = c->sched.n;
    check_order(what, g, order, n);
    int inflight[SLOTS], split = 0, blocking = 0, empty = 0, reuse = 0, stray = 0, undrained = 0;
    int fwd_send = 0, fwd_return = 0, bwd_first = 0, ep_inflight = 0, most_inflight = 0;
    int c_send = 0, c_return = 0, c_resend = 0; /* chunks: one chunk's experts inside another's exchange */
    for (int s = 0; s < SLOTS; s++) inflight[s] = -1;
    for (int i = 0; i < n; i++) {
        const hp_node *nd = &g->nodes[order[i]];
        hp_coll_desc d;
        if (i > 0 && g->nodes[order[i - 1]].phase != nd->phase)
            for (int s = 0; s < SLOTS; s++) undrained += inflight[s] >= 0, inflight[s] = -1;
        int ep = is_ep(g, nd, &d);
        if (ep && d.role == HP_COLL_BLOCKING) blocking++;
        if (!hp_coll_describe(&d, g, nd) || d.pair != HP_COLL_PAIR_SLOT || d.pair_key < 0 || d.pair_key >= SLOTS)
            continue;
        if (d.role == HP_COLL_START) {
            reuse += inflight[d.pair_key] >= 0;
            inflight[d.pair_key] = i;
            if (is_ep(g, nd, &d) && ++ep_inflight > most_inflight) most_inflight = ep_inflight;
            continue;
        }
        if (d.role != HP_COLL_WAIT) continue;
        int st = inflight[d.pair_key];
        inflight[d.pair_key] = -1;
        if (st < 0) {
            stray++;
            continue;
        }
        if (!ep) continue;
        split++;
        ep_inflight--;
        int compute = 0;
        for (int j = st + 1; j < i; j++) compute += !g->nodes[order[j]].op->communicates;
        empty += compute == 0;
        const char *sname = g->nodes[order[st]].name;
        if (!strcmp(sname, "h.0.mlp.moe_dispatch.ep_send")) fwd_send = between_has(g, order, st, i, "h.0.mlp.linear");
        if (!strcmp(sname, "h.0.mlp.grouped_linear:0.ep_return"))
            fwd_return = between_has(g, order, st, i, "h.0.mlp.swiglu");
        if (!strcmp(sname, "h.3.mlp.grouped_linear:0.ep_return.moe_ep_resend"))
            bwd_first = between_has(g, order, st, i, "h.3.mlp.swiglu.swiglu_bwd");
        if (!strcmp(sname, "h.0.mlp.c1.moe_dispatch.ep_send"))
            c_send = between_has(g, order, st, i, "h.0.mlp.c0.grouped_linear");
        if (!strcmp(sname, "h.0.mlp.c0.grouped_linear:0.ep_return"))
            c_return = between_has(g, order, st, i, "h.0.mlp.c1.grouped_linear");
        if (!strcmp(sname, "h.0.mlp.c0.grouped_linear:0.ep_return.moe_ep_resend"))
            c_resend = between_has(g, order, st, i, "h.0.mlp.c1.grouped_linear.grouped_linear_bwd");
        check_rows_after_wait(what, g, order, st, i);
    }
    /* the shared expert's gradient reduction starts after the layer's last exchange of the backward */
    int red = -1, ret = -1;
    for (int i = 0; i < n; i++) {
        const char *nm = g->nodes[order[i]].name;
        if (!strcmp(nm, "h.0.moe.shared.gate_up.weight.grad.redistribute")) red = i;
        if (!strcmp(nm, chunks > 1 ? "h.0.mlp.c0.moe_dispatch.ep_send.moe_ep_return" : "h.0.mlp.moe_dispatch.ep_send.moe_ep_return"))
            ret = i;
    }
    if (overlap && !strstr(what, "FSDP")) /* (under FSDP the reductions are the units') */
        CHECKF(red > ret && ret >= 0, "%s: the shared expert's gradient reduction at %d, the last return at %d", what, red, ret);
    for (int s = 0; s < SLOTS; s++) undrained += inflight[s] >= 0;
    CHECKF(!reuse && !stray && !undrained,
           "%s: %d slots started while in flight, %d waits without a start, %d left in flight at a phase's end", what,
           reuse, stray, undrained);
    if (overlap && chunks > 1) {
        CHECKF(split == 16 * chunks && blocking == 0, "%s: %d exchanges split (%d expected), %d blocking", what,
               split, 16 * chunks, blocking);
        CHECKF(c_send && c_return && c_resend && most_inflight >= 2,
               "%s: chunk 0's experts not under chunk 1's send (%d), chunk 1's not under chunk 0's return (%d) or its "
               "backward under chunk 0's (%d); at most %d exchanges in flight",
               what, c_send, c_return, c_resend, most_inflight);
    } else if (overlap) {
        CHECKF(split == 16 && blocking == 0, "%s: %d exchanges split (16 expected), %d blocking", what, split,
               blocking);
        CHECKF(!empty, "%s: %d exchanges with nothing between start and wait", what, empty);
        CHECKF(fwd_send && fwd_return && bwd_first, "%s: shared expert not overlapped (send %d, return %d, backward %d)",
               what, fwd_send, fwd_return, bwd_first);
    } else {
        CHECKF(split == 0 && blocking == 16 * chunks, "%s: overlap off: %d split, %d blocking (16 per chunk expected)", what, split,
               blocking);
    }
    printf("%s, overlap %s: %d exchanges split, %d blocking, %d steps\n", what, overlap ? "on" : "off", split,
           blocking, n);
}

/* overlap: whether the exchanges are expected split */
static void one_chunks(const char *what, int dp, int ep, int tp, int fsdp, int level, int supernode_ranks, int overlap,
                       int chunks) {
    hp_model_config mc;
    CHECK_OK(hp_moe_preset(&mc, "moe-tiny"));
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_llama_build(g, &mc, 8, 32));
    hp_plan plan;
    CHECK_OK(hp_plan_model_ep(&plan, "moe", 1, 1, dp, ep, tp));
    if (fsdp) CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp replicate=ep", "test"));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f,
                         .schedule = {.overlap = 1, .ep_overlap = level, .max_inflight = 4},
                         .supernode_ranks = supernode_ranks, .moe_chunks = chunks};
    hp_compiled c;
    hp_status st = hp_compile(&c, g, &plan, 0, &o);
    CHECK_OK(st);
    if (!st) {
        check_program(what, &c, overlap, chunks);
        hp_compiled_free(&c);
    }
    hp_plan_free(&plan);
    hp_graph_destroy(g);
}

static void one(const char *what, int dp, int ep, int tp, int fsdp, int level, int supernode_ranks, int overlap) {
    one_chunks(what, dp, ep, tp, fsdp, level, supernode_ranks, overlap, 1);
}

int main(void) {
    one("EP 2", 1, 2, 1, 0, HP_EP_OVERLAP_ALWAYS, 0, 1);
    one("EP 2", 1, 2, 1, 0, HP_EP_OVERLAP_OFF, 0, 0);
    one("EP 2, auto, one supernode", 1, 2, 1, 0, HP_EP_OVERLAP_AUTO, 0, 0);
    one("EP 2, auto, a rank per supernode", 1, 2, 1, 0, HP_EP_OVERLAP_AUTO, 1, 1);
    /* ranks dp-major: rank 0's ep group {0, 1} is inside its supernode of 2, its dp group {0, 2} is not */
    one("DP 2 x EP 2, auto, supernodes of 2", 2, 2, 1, 0, HP_EP_OVERLAP_AUTO, 2, 0);
    one("DP 2 x EP 2, FSDP over dp", 2, 2, 1, 1, HP_EP_OVERLAP_ALWAYS, 0, 1);
    one("EP 2 x TP 2", 1, 2, 2, 0, HP_EP_OVERLAP_ALWAYS, 0, 1);
    /* each layer's tokens in 2 chunks: the chunks' exchanges in flight together, one chunk's experts (forward and
     * backward) inside the other's exchange */
    one_chunks("EP 2, 2 chunks", 1, 2, 1, 0, HP_EP_OVERLAP_ALWAYS, 0, 1, 2);
    one_chunks("DP 2 x EP 2, FSDP over dp, 2 chunks", 2, 2, 1, 1, HP_EP_OVERLAP_ALWAYS, 0, 1, 2);
    one_chunks("EP 2, 2 chunks, overlap off", 1, 2, 1, 0, HP_EP_OVERLAP_OFF, 0, 0, 2);
    return hp_test_finish("test_ep_overlap");
}
