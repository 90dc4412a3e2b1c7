/* Muon on an N-D stack (issue 27): the optimizer phase's update of a 4-D
 * [E, 2, F, C] parameter (an MoE layer's experts' gate and up projections) is,
 * bit for bit over several steps (momentum carried, clipping and weight decay
 * on), the update of E*2 separate [F, C] parameters holding the same slices
 * and gradients, run through the same Muon; its batches cut across the
 * stack's dims (a chunk of 3 matrices) without changing a bit. The routing
 * sends 2-D to 4-D parameters to Muon and refuses a vector, naming the shapes
 * it takes. Split by expert over 2 members of an ep axis (each holding
 * [E/2, 2, F, C]), each member's experts are its own matrices: updated where
 * they live (the phase on a piece marked whole_mats), or, replicated over a
 * data-parallel pair (FSDP 2 x EP 2: "dp=R ep=B<c>"), by distributed Muon's
 * operators — the owner's muon_pack, muon_orth (one item of E matrices) and
 * muon_apply, the other replica's momentum-only pack and the owner's updates
 * applied — each bit for bit the 1-rank update's slice. The nodes run here
 * one by one on plain buffers. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/opdef.h"
#include "optim/muon_dist.h"
#include "optim/phase.h"
#include "testutil.h"

enum { E = 4, F = 12, C = 8, STEPS = 4 }; /* E even: split over 2 members */

/* A graph's values as plain buffers, and its optimizer nodes run in order. */
typedef struct {
    hp_graph *g;
    void **data; /* [nvals] */
    float *scratch;
} machine;

static void machine_make(machine *m, hp_graph *g) {
    m->g = g;
    m->data = calloc((size_t)g->nvals, sizeof *m->data);
    size_t most = 1;
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *x = &g->vals[v];
        size_t bytes = (size_t)hp_shape_numel(&x->shape) * hp_dtype_size(x->dtype);
        m->data[v] = calloc(bytes ? bytes : 1, 1);
        if (x->kind == HP_V_CONST && x->init >= 0) memcpy(m->data[v], hp_graph_blob_at(g, x->init), bytes);
    }
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        size_t s = n->op->scratch ? n->op->scratch(g, n, 2) : 0;
        if (s > most) most = s;
    }
    m->scratch = malloc(sizeof(float) * most);
}

static void machine_free(machine *m) {
    for (int v = 0; v < m->g->nvals; v++) free(m->data[v]);
    free(m->data);
    free(m->scratch);
}

static hp_tensor tensor_of(const machine *m, int v) {
    return (hp_tensor){m->g->vals[v].dtype, m->g->vals[v].shape, m->data[v]};
}

/* One optimizer step: the inputs set (lr, step), the global sum of squares set to sumsq (both graphs
 * clip by the same scale), every update node run. */
static void machine_step(machine *m, hp_pool *pool, const hp_optim_phase_io *io, int step, double sumsq) {
    float *lr = m->data[io->lr];
    lr[0] = 1e-3f, lr[1] = 0.05f;
    *(int32_t *)m->data[io->step] = step;
    *(double *)m->data[io->sumsq] = sumsq;
    hp_status err = HP_OK;
    hp_kctx k = {.graph = m->g, .pool = pool, .scratch = m->scratch, .err = &err};
    for (int i = 0; i < m->g->nnodes; i++) {
        const hp_node *n = &m->g->nodes[i];
        if (n->op == &hp_op_grad_sumsq) continue; /* set above */
        hp_tensor in[64], out[HP_MAX_OUT];
        int nin = hp_node_nin_all(n);
        CHECK(nin <= 64);
        for (int j = 0; j < nin && j < 64; j++) in[j] = tensor_of(m, hp_node_input(m->g, n, j));
        for (int j = 0; j < n->nout; j++) out[j] = tensor_of(m, n->out[j]);
        n->op->run(&k, n, in, out);
    }
    CHECK(err == HP_OK);
}

/* The phase of params (value ids with their gradients) under Muon; batch: muon_batch_floats. */
static void build_phase(hp_optim_phase_io *io, hp_graph *g, const int *ids, int n, long batch) {
    hp_optim_phase_param pp[2 * E];
    for (int i = 0; i < n; i++) pp[i] = (hp_optim_phase_param){ids[i], g->vals[ids[i]].grad, 1, 0, -1, 0};
    hp_optim_config cfg;
    hp_optim_config_default(&cfg);
    cfg.kind = HP_OPT_MUON;
    cfg.muon_weight_decay = 0.1f;
    cfg.muon_batch_floats = batch;
    CHECK_OK(hp_optim_phase_norm(io, g, pp, n, 0));
    CHECK_OK(hp_optim_phase_updates(io, g, &cfg, 1.0f, pp, n));
}

static int param_with_grad(hp_graph *g, const char *name, hp_shape s) {
    int p = hp_graph_param(g, name, s);
    char gn[HP_NAME_LEN];
    snprintf(gn, sizeof gn, "grad.%s", name);
    int gv = hp_graph_value(g, HP_V_GRAD, HP_F32, s, gn);
    g->vals[p].grad = gv;
    g->vals[gv].grad_of = p;
    return p;
}

static int count_op(const hp_graph *g, const hp_opdef *op) {
    int c = 0;
    for (int i = 0; i < g->nnodes; i++) c += g->nodes[i].op == op;
    return c;
}

static void test_stack_is_its_matrices(hp_pool *pool) {
    const long per = (long)F * C, total = 2L * E * per;
    /* the stack, batched 3 matrices at a time (a chunk crossing gate/up and expert boundaries) */
    hp_graph *ga, *gb;
    CHECK_OK(hp_graph_create(&ga));
    CHECK_OK(hp_graph_create(&gb));
    hp_shape s4 = {4, {E, 2, F, C}};
    int pa = param_with_grad(ga, "h.0.moe.experts.gate_up.weight", s4);
    hp_optim_phase_io ioa, iob;
    build_phase(&ioa, ga, &pa, 1, 3 * per);
    /* it goes to Muon: one shape group of 2E matrices, no AdamW */
    CHECK(ioa.nadamw == 0 && ioa.nmuon_groups == 1 && count_op(ga, &hp_op_muon_update) == 1);
    int node = -1;
    for (int i = 0; i < ga->nnodes; i++)
        if (ga->nodes[i].op == &hp_op_muon_update) node = i;
    char want[64];
    snprintf(want, sizeof want, "muon_update[%dx%d]x%d", F, C, 2 * E);
    CHECK(node >= 0 && !strcmp(ga->nodes[node].name, want));
    /* E*2 separate matrices, expert e's gate then up, batched all at once */
    int pb[2 * E];
    for (int e = 0; e < E; e++)
        for (int h = 0; h < 2; h++) {
            char nm[64];
            snprintf(nm, sizeof nm, "h.0.moe.expert%d.%s.weight", e, h ? "up" : "gate");
            pb[2 * e + h] = param_with_grad(gb, nm, hp_shape2(F, C));
        }
    build_phase(&iob, gb, pb, 2 * E, 0);
    CHECK(iob.nadamw == 0 && iob.nmuon_groups == 1 && iob.nstates == 2 * E && ioa.nstates == 1);
    machine ma, mb;
    machine_make(&ma, ga);
    machine_make(&mb, gb);
    hp_test_rng r = {27};
    float *wa = ma.data[pa], *ga_ = ma.data[ga->vals[pa].grad];
    for (long i = 0; i < total; i++) wa[i] = (float)(0.1 * hp_test_normal(&r));
    for (int j = 0; j < 2 * E; j++) memcpy(mb.data[pb[j]], wa + j * per, sizeof(float) * (size_t)per);
    float *w0 = malloc(sizeof(float) * (size_t)total);
    memcpy(w0, wa, sizeof(float) * (size_t)total);
    for (int step = 1; step <= STEPS; step++) {
        for (long i = 0; i < total; i++) ga_[i] = (float)hp_test_normal(&r);
        for (int j = 0; j < 2 * E; j++)
            memcpy(mb.data[gb->vals[pb[j]].grad], ga_ + j * per, sizeof(float) * (size_t)per);
        machine_step(&ma, pool, &ioa, step, 9.0); /* norm 3 over max_norm 1: clipped by 1/3 */
        machine_step(&mb, pool, &iob, step, 9.0);
        int same = 1;
        for (int j = 0; j < 2 * E; j++)
            same &= !memcmp(mb.data[pb[j]], wa + j * per, sizeof(float) * (size_t)per);
        CHECKF(same, "step %d: the stack's update differs from its matrices' apart", step);
    }
    /* the momentum too: state j of the separate run is slice j of the stack's */
    int ma_state = -1;
    for (int v = 0; v < ga->nvals; v++)
        if (ga->vals[v].kind == HP_V_STATE) ma_state = v;
    CHECK(ma_state >= 0 && !strcmp(ga->vals[ma_state].name, "muon.m.h.0.moe.experts.gate_up.weight") &&
          ga->vals[ma_state].shape.ndim == 4);
    for (int v = 0, j = 0; ma_state >= 0 && v < gb->nvals; v++)
        if (gb->vals[v].kind == HP_V_STATE) {
            CHECK(!memcmp(mb.data[v], (float *)ma.data[ma_state] + j * per, sizeof(float) * (size_t)per));
            j++;
        }
    /* and it moved: each matrix by about lr x scale x (an orthogonal update's entries) */
    double moved = 0;
    for (long i = 0; i < total; i++) moved = fmax(moved, fabs(wa[i] - w0[i]));
    CHECKF(moved > 0.01 && moved < 1.0, "max change %g", moved);
    free(w0);
    machine_free(&ma);
    machine_free(&mb);
    hp_graph_destroy(ga);
    hp_graph_destroy(gb);
}

/* The 1-rank update of the whole stack over STEPS steps: w[total] after each step into ref[STEPS][total];
 * grads[STEPS][total] the gradients, w0 the start. */
static void whole_stack_run(float *ref, const float *grads, const float *w0, hp_pool *pool) {
    const long total = 2L * E * F * C;
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int p = param_with_grad(g, "h.0.moe.experts.gate_up.weight", (hp_shape){4, {E, 2, F, C}});
    hp_optim_phase_io io;
    build_phase(&io, g, &p, 1, 0);
    machine m;
    machine_make(&m, g);
    memcpy(m.data[p], w0, sizeof(float) * (size_t)total);
    for (int step = 1; step <= STEPS; step++) {
        memcpy(m.data[g->vals[p].grad], grads + (step - 1) * total, sizeof(float) * (size_t)total);
        machine_step(&m, pool, &io, step, 9.0);
        memcpy(ref + (step - 1) * total, m.data[p], sizeof(float) * (size_t)total);
    }
    machine_free(&m);
    hp_graph_destroy(g);
}

/* Member c of 2 along ep holds experts [c E/2, (c+1) E/2): its piece of the stack, updated where it lives
 * (whole_mats: the phase's muon_update on the local matrices). */
static void member_local(float *w, const float *grads, const float *w0, int c, hp_pool *pool) {
    const long per = (long)F * C, piece = (E / 2) * 2L * per, total = 2L * E * per;
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int p = param_with_grad(g, "h.0.moe.experts.gate_up.weight", (hp_shape){4, {E / 2, 2, F, C}});
    hp_optim_phase_param pp = {p, g->vals[p].grad, 1, 1, -1, 1}; /* sharded, every local matrix whole */
    hp_optim_config cfg;
    hp_optim_config_default(&cfg);
    cfg.kind = HP_OPT_MUON, cfg.muon_weight_decay = 0.1f;
    hp_optim_phase_io io;
    CHECK_OK(hp_optim_phase_norm(&io, g, &pp, 1, 0));
    CHECK_OK(hp_optim_phase_updates(&io, g, &cfg, 1.0f, &pp, 1));
    CHECK(io.nmuon_groups == 1 && io.nadamw == 0);
    machine m;
    machine_make(&m, g);
    memcpy(m.data[p], w0 + c * piece, sizeof(float) * (size_t)piece);
    for (int step = 1; step <= STEPS; step++) {
        memcpy(m.data[g->vals[p].grad], grads + (step - 1) * total + c * piece, sizeof(float) * (size_t)piece);
        machine_step(&m, pool, &io, step, 9.0);
        memcpy(w + (step - 1) * piece, m.data[p], sizeof(float) * (size_t)piece);
    }
    machine_free(&m);
    hp_graph_destroy(g);
}

/* One replica of member c's piece under distributed Muon's operators (as parallel/muon_dist places them for a
 * "dp=R ep=B<c>" group: K = 1, no exchange before the owner): owner 1: muon_pack of its piece, muon_orth of
 * the E matrices (3 per batch), muon_apply; owner 0: muon_pack keeping only the momentum, then muon_apply of
 * the owner's updates (the replicas' gather), read from upd[STEPS][piece] (which the owner writes). */
typedef struct {
    hp_graph *g;
    machine m;
    hp_optim_phase_io io;
    int p, u; /* the piece; the updates the apply reads */
} replica;

static void replica_make(replica *r, int owner) {
    const long per = (long)F * C, piece = (E / 2) * 2L * per;
    CHECK_OK(hp_graph_create(&r->g));
    hp_graph *g = r->g;
    hp_shape s = {4, {E / 2, 2, F, C}};
    r->p = param_with_grad(g, "h.0.moe.experts.gate_up.weight", s);
    int mv = hp_graph_value(g, HP_V_STATE, HP_F32, s, "muon.m.h.0.moe.experts.gate_up.weight");
    memset(&r->io, 0, sizeof r->io);
    r->io.lr = hp_graph_value(g, HP_V_INPUT, HP_F32, hp_shape1(2), "opt.lr");
    r->io.step = hp_graph_value(g, HP_V_INPUT, HP_I32, hp_shape1(1), "opt.step");
    r->io.sumsq = hp_graph_value(g, HP_V_INPUT, HP_F64, hp_shape1(1), "opt.sumsq");
    hp_optim_config cfg;
    hp_optim_config_default(&cfg);
    int in3[3] = {r->io.sumsq, r->io.lr, r->io.step}, xin[2] = {g->vals[r->p].grad, mv};
    hp_muon_pack_cfg pc = {1.0f, cfg.muon_beta, cfg.muon_momentum, cfg.muon_nesterov, owner};
    int64_t tr[3] = {0, 0, 0};
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_pack_blob(g, &pc, tr);
    int P = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(owner ? piece : 1), "muon.u");
    hp_graph_node_list(g, &hp_op_muon_pack, in3, 3, xin, 2, &P, 1, &at, HP_PHASE_OPT);
    if (owner) {
        hp_muon_orth_cfg oc = {1, 1, 3 * per, cfg.ns, 0};
        int64_t item[HP_MUON_ITEM] = {F, C, E, 1, -1}, len = piece, start = 0;
        at.i[0] = hp_muon_orth_blob(g, &oc, item, &len, &start);
        r->u = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(piece), "muon.orth");
        int oin[2] = {r->io.sumsq, P};
        hp_graph_node_into(g, &hp_op_muon_orth, oin, 2, &r->u, 1, &at, HP_PHASE_OPT, -1);
    } else {
        r->u = hp_graph_value(g, HP_V_INPUT, HP_F32, hp_shape1(piece), "muon.gathered");
    }
    float scale = hp_muon_scale(cfg.muon_scale, F, C);
    at.i[0] = hp_muon_apply_blob(g, 0.1f, &scale, tr, 1);
    int in4[4] = {r->io.sumsq, r->io.lr, r->io.step, r->u};
    hp_graph_node_list(g, &hp_op_muon_apply, in4, 4, &r->p, 1, NULL, 0, &at, HP_PHASE_OPT);
    CHECK_OK(hp_graph_status(g));
    machine_make(&r->m, g);
}

static void test_split_by_expert(hp_pool *pool) {
    const long per = (long)F * C, piece = (E / 2) * 2L * per, total = 2L * E * per;
    float *grads = malloc(sizeof(float) * (size_t)(STEPS * total)), *w0 = malloc(sizeof(float) * (size_t)total);
    float *ref = malloc(sizeof(float) * (size_t)(STEPS * total)), *w = malloc(sizeof(float) * (size_t)(STEPS * piece));
    hp_test_rng r = {2727};
    for (long i = 0; i < total; i++) w0[i] = (float)(0.1 * hp_test_normal(&r));
    for (long i = 0; i < STEPS * total; i++) grads[i] = (float)hp_test_normal(&r);
    whole_stack_run(ref, grads, w0, pool);
    for (int c = 0; c < 2; c++) {
        member_local(w, grads, w0, c, pool);
        for (int step = 0; step < STEPS; step++)
            CHECKF(!memcmp(w + step * piece, ref + step * total + c * piece, sizeof(float) * (size_t)piece),
                   "member %d, step %d: its experts updated where they live differ from 1 rank's", c, step + 1);
        replica own, other;
        replica_make(&own, 1);
        replica_make(&other, 0);
        memcpy(own.m.data[own.p], w0 + c * piece, sizeof(float) * (size_t)piece);
        memcpy(other.m.data[other.p], w0 + c * piece, sizeof(float) * (size_t)piece);
        for (int step = 1; step <= STEPS; step++) {
            const float *gs = grads + (step - 1) * total + c * piece, *want = ref + (step - 1) * total + c * piece;
            memcpy(own.m.data[own.g->vals[own.p].grad], gs, sizeof(float) * (size_t)piece);
            memcpy(other.m.data[other.g->vals[other.p].grad], gs, sizeof(float) * (size_t)piece);
            machine_step(&own.m, pool, &own.io, step, 9.0);
            memcpy(other.m.data[other.u], own.m.data[own.u], sizeof(float) * (size_t)piece); /* the gather */
            machine_step(&other.m, pool, &other.io, step, 9.0);
            CHECKF(!memcmp(own.m.data[own.p], want, sizeof(float) * (size_t)piece),
                   "member %d, step %d: the owner's update differs from 1 rank's", c, step);
            CHECKF(!memcmp(other.m.data[other.p], want, sizeof(float) * (size_t)piece),
                   "member %d, step %d: the other replica's update differs from 1 rank's", c, step);
        }
        machine_free(&own.m), machine_free(&other.m);
        hp_graph_destroy(own.g), hp_graph_destroy(other.g);
    }
    free(grads), free(w0), free(ref), free(w);
}

static void test_route_stacks(void) {
    float buf[1];
    hp_shape s4 = {4, {2, 3, 8, 4}}; /* HP_MAX_DIMS: 4 */
    hp_opt_param ps[4] = {
        {"h.0.moe.experts.gate_up.weight", buf, buf, {4, {8, 2, 16, 32}}, 0},
        {"h.0.moe.experts.down.weight", buf, buf, hp_shape3(8, 32, 16), 0},
        {"h.0.other.weight", buf, buf, s4, 0},
        {"h.0.ln.weight", buf, buf, hp_shape1(32), 0},
    };
    for (int i = 0; i < 4; i++) ps[i].hidden_matrix = hp_optim_hidden_matrix(ps[i].name, &ps[i].shape);
    CHECK(ps[0].hidden_matrix && ps[1].hidden_matrix && ps[2].hidden_matrix && !ps[3].hidden_matrix);
    CHECK(hp_optim_stack_count(&ps[0].shape) == 16 && hp_optim_stack_count(&ps[1].shape) == 8 &&
          hp_optim_stack_count(&ps[2].shape) == 6 && hp_optim_stack_count(&(hp_shape){2, {5, 7}}) == 1);
    hp_opt_kind k[4];
    CHECK_OK(hp_optim_route(k, HP_OPT_MUON, NULL, NULL, ps, 4));
    CHECK(k[0] == HP_OPT_MUON && k[1] == HP_OPT_MUON && k[2] == HP_OPT_MUON && k[3] == HP_OPT_ADAMW);
    CHECK_ERR(hp_optim_route(k, HP_OPT_MUON, "h.0.ln.*", NULL, ps, 4),
              "muon_params: parameter 'h.0.ln.weight' has shape [32], but Muon needs a matrix [rows, cols] (or a "
              "stack of them: [..., rows, cols])");
}

int main(void) {
    openblas_set_num_threads(1);
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));
    test_stack_is_its_matrices(pool);
    test_stack_is_its_matrices(NULL);
    test_split_by_expert(pool);
    test_route_stacks();
    hp_pool_destroy(pool);
    return hp_test_finish("test_muon_stack");
}
