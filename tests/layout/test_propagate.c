/* Layout propagation over a small differentiated GPT-2: all-Replicate, data
 * parallel, Megatron tensor parallel, both on a 2-D mesh, and plan errors.
 * Checks the layout of every activation and gradient that the plan decides,
 * and the exact redistributions per layer in forward and backward. */
#include "core/autodiff.h"
#include "layout/layout.h"
#include "layout/propagate.h"
#include "ops/ops.h"
#include "testutil.h"
#include "layout_check.h"

/* The layout room's tests link only the rooms below layout, so the GPT-2
 * builder is compiled in here. */
#include "models/gpt2.h"

typedef struct {
    hp_graph *g;
    hp_gpt2_io io;
    hp_gpt2_config c;
} model;

static void build(model *md, int NH, int C) {
    md->c = (hp_gpt2_config){.L = 2, .NH = NH, .C = C, .V = 100, .Vp = 128, .maxT = 16};
    CHECK_OK(hp_gpt2_config_check(&md->c));
    CHECK_OK(hp_graph_create(&md->g));
    CHECK_OK(hp_gpt2_build(md->g, &md->io, &md->c, 2, 8));
    CHECK_OK(hp_autodiff(md->g, md->io.loss, &hp_op_add));
}

/* ---- plans, written with layout structs ---- */
typedef struct {
    hp_layout *fixed;
    unsigned char *is_fixed;
} plan;

static int ends_with_s(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Megatron tensor parallelism for parameter `name`: column-parallel QKV and
 * MLP-up, row-parallel projections, vocabulary-parallel wte. */
static hp_placement megatron(const char *name) {
    if (ends_with_s(name, "attn.qkv.weight") || ends_with_s(name, "attn.qkv.bias")) return hp_shard(1);
    if (ends_with_s(name, "attn.proj.weight") || ends_with_s(name, "mlp.proj.weight")) return hp_shard(1);
    if (ends_with_s(name, "mlp.fc.weight") || ends_with_s(name, "mlp.fc.bias")) return hp_shard(0);
    if (strcmp(name, "wte") == 0) return hp_shard(0);
    return hp_replicate();
}

/* dp_axis / tp_axis: mesh axis of data / tensor parallelism, or -1. */
static plan make_plan(const hp_graph *g, const hp_mesh *m, int dp_axis, int tp_axis) {
    plan p;
    p.fixed = calloc((size_t)g->nvals, sizeof *p.fixed);
    p.is_fixed = calloc((size_t)g->nvals, 1);
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->kind != HP_V_PARAM && val->kind != HP_V_INPUT) continue;
        p.is_fixed[v] = 1;
        p.fixed[v] = hp_layout_replicated(m);
        if (val->kind == HP_V_INPUT && dp_axis >= 0) p.fixed[v].p[dp_axis] = hp_shard(0);
        if (val->kind == HP_V_PARAM && tp_axis >= 0) p.fixed[v].p[tp_axis] = megatron(val->name);
    }
    return p;
}

static void plan_free(plan *p) {
    free(p->fixed);
    free(p->is_fixed);
}

/* ---- finding nodes ---- */
/* The forward node running `op` whose input k is the parameter `pname`. */
static int node_with_param(const hp_graph *g, const hp_opdef *op, int k, const char *pname) {
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->op == op && n->phase == HP_PHASE_FWD && n->nin > k && strcmp(g->vals[n->in[k]].name, pname) == 0)
            return i;
    }
    return -1;
}

/* The forward node running `op` that reads value v. */
static int consumer(const hp_graph *g, const hp_opdef *op, int v) {
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].op == op && g->nodes[i].phase == HP_PHASE_FWD && g->nodes[i].in[k] == v) return i;
    return -1;
}

static int input_slot(const hp_graph *g, int node, int v) {
    for (int k = 0; k < g->nodes[node].nin; k++)
        if (g->nodes[node].in[k] == v) return k;
    return -1;
}

/* Redistributions that communicate (the value is not Replicate where the
 * node needs it changed), in `phase`, in nodes whose name starts with
 * `prefix`; *allreduce counts those that turn a Partial into a Replicate. */
static int count_comm(const hp_propagation *p, const hp_graph *g, const hp_mesh *m, hp_phase phase,
                      const char *prefix, int *allreduce) {
    int c = 0;
    if (allreduce) *allreduce = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->phase != phase || strncmp(n->name, prefix, strlen(prefix)) != 0) continue;
        for (int k = 0; k < n->nin; k++) {
            const hp_layout *have = &p->val[n->in[k]], *need = &p->need[i][k];
            int comm = 0, ar = 1;
            for (int a = 0; a < m->ndim; a++) {
                if (hp_placement_eq(have->p[a], need->p[a])) continue;
                if (have->p[a].kind != HP_REPLICATE) comm = 1;
                if (!(have->p[a].kind == HP_PARTIAL && need->p[a].kind == HP_REPLICATE)) ar = 0;
            }
            if (comm) {
                c++;
                if (allreduce && ar) (*allreduce)++;
                if (getenv("HP_TEST_VERBOSE")) {
                    char b1[160], b2[160];
                    fprintf(stderr, "  %s: '%s' %s -> %s\n", n->name, g->vals[n->in[k]].name,
                            hp_layout_str(b1, sizeof b1, have, m), hp_layout_str(b2, sizeof b2, need, m));
                }
            }
        }
    }
    return c;
}

/* ---- (a) all Replicate ---- */
/* The mesh axis over which node i runs a vocabulary-parallel cross-entropy
 * (its logits / probabilities consumed split on the vocabulary dim), or -1:
 * what the lowering pass reads from the propagation to pick the parallel form. */
static int xent_axis(const hp_propagation *p, const hp_graph *g, int i) {
    const hp_node *n = &g->nodes[i];
    int k = n->op == &hp_op_xent ? 0 : n->op == &hp_op_xent_bwd ? 1 : -1;
    if (k < 0) return -1;
    const hp_layout *l = &p->need[i][k];
    int last = g->vals[n->in[k]].shape.ndim - 1;
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_SHARD && l->p[a].dim == last) return a;
    return -1;
}

static void test_replicated(const model *md) {
    hp_mesh m = mesh("dp=2");
    plan pl = make_plan(md->g, &m, -1, -1);
    hp_propagation p;
    CHECK_OK(hp_propagate(&p, md->g, &m, pl.fixed, pl.is_fixed));
    int bad = 0;
    for (int v = 0; v < md->g->nvals; v++) bad += !hp_layout_is_replicated(&p.val[v]);
    CHECK(bad == 0);
    for (int i = 0; i < md->g->nnodes; i++) {
        CHECK(xent_axis(&p, md->g, i) == -1);
        for (int k = 0; k < md->g->nodes[i].nin; k++) CHECK(!hp_propagation_redistributes(&p, md->g, i, k));
    }
    CHECK(p.comm_bytes == 0 && p.nnotes == 0);
    hp_propagation_free(&p);
    plan_free(&pl);
}

/* ---- (b) data parallel ---- */
static void test_dp(const model *md) {
    const hp_graph *g = md->g;
    hp_mesh m = mesh("dp=2");
    plan pl = make_plan(g, &m, 0, -1);
    hp_propagation p;
    CHECK_OK(hp_propagate(&p, g, &m, pl.fixed, pl.is_fixed));
    /* every forward activation batch-split, the loss a sum of shares */
    int bad = 0;
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->kind != HP_V_ACT) continue;
        bad += !is(&p.val[v], v == md->io.loss ? "P(sum)@dp" : "S(0)@dp", &m);
    }
    CHECK(bad == 0);
    /* every parameter gradient Partial(sum), its target Replicate */
    int ids[64], np = hp_graph_params(g, ids, 64);
    CHECK(np == 4 + 12 * md->c.L);
    for (int i = 0; i < np; i++) {
        int gv = g->vals[ids[i]].grad;
        CHECK(gv >= 0 && is(&p.val[gv], "P(sum)@dp", &m));
        hp_layout t;
        CHECK_OK(hp_param_grad_target(&t, &p, g, gv));
        CHECK(is(&t, "R@dp", &m));
    }
    /* no communication anywhere in forward or backward */
    CHECK(count_comm(&p, g, &m, HP_PHASE_FWD, "", NULL) == 0);
    CHECK(count_comm(&p, g, &m, HP_PHASE_BWD, "", NULL) == 0);
    CHECK(p.comm_bytes == 0);
    hp_propagation_free(&p);
    plan_free(&pl);
}

/* ---- (c), (d) Megatron tensor parallel, alone or with data parallel ---- */
static void check_megatron(const model *md, const hp_mesh *m, int dp_axis, int tp_axis) {
    const hp_graph *g = md->g;
    plan pl = make_plan(g, m, dp_axis, tp_axis);
    hp_propagation p;
    CHECK_OK(hp_propagate(&p, g, m, pl.fixed, pl.is_fixed));
    /* "S(0)@dp,X@tp" on the 2-D mesh, "X@tp" on the 1-D one */
    char want[64];
#define W(x) (snprintf(want, sizeof want, "%s%s@tp", dp_axis >= 0 ? "S(0)@dp," : "", x), want)
#define WL(x) (snprintf(want, sizeof want, "%s%s@tp", dp_axis >= 0 ? "P(sum)@dp," : "", x), want)

    int emb = consumer(g, &hp_op_embedding, md->io.tokens);
    CHECK(emb >= 0 && is(&p.val[g->nodes[emb].out[0]], W("P(sum)"), m));
    for (int l = 0; l < md->c.L; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "h.%d.attn.qkv.weight", l);
        int qkv = node_with_param(g, &hp_op_linear, 1, nm);
        CHECK(qkv >= 0);
        int qkv_out = g->nodes[qkv].out[0];
        CHECK(is(&p.val[qkv_out], W("S(3)"), m));
        int att = consumer(g, &hp_op_attention, qkv_out);
        CHECK(is(&p.val[g->nodes[att].out[0]], W("S(2)"), m) && is(&p.val[g->nodes[att].out[1]], W("S(1)"), m));
        snprintf(nm, sizeof nm, "h.%d.attn.proj.weight", l);
        int proj = node_with_param(g, &hp_op_linear, 1, nm);
        int proj_out = g->nodes[proj].out[0];
        CHECK(is(&p.val[proj_out], W("P(sum)"), m));
        /* the bias made Partial locally (it stays whole over dp) */
        CHECK(is(&p.need[proj][2], dp_axis >= 0 ? "R@dp,P(sum)@tp" : "P(sum)@tp", m));
        /* the residual add all-reduces the projection first */
        int add = consumer(g, &hp_op_add, proj_out);
        CHECK(add >= 0 && is(&p.need[add][input_slot(g, add, proj_out)], W("R"), m));
        CHECK(is(&p.val[g->nodes[add].out[0]], W("R"), m));
        snprintf(nm, sizeof nm, "h.%d.mlp.fc.weight", l);
        int fc = node_with_param(g, &hp_op_linear, 1, nm);
        CHECK(is(&p.val[g->nodes[fc].out[0]], W("S(2)"), m));
        snprintf(nm, sizeof nm, "h.%d.mlp.proj.weight", l);
        int mp = node_with_param(g, &hp_op_linear, 1, nm);
        int mp_out = g->nodes[mp].out[0];
        CHECK(is(&p.val[mp_out], W("P(sum)"), m));
        add = consumer(g, &hp_op_add, mp_out);
        CHECK(add >= 0 && is(&p.need[add][input_slot(g, add, mp_out)], W("R"), m));

        /* Megatron: 2 all-reduces per layer in forward, 2 in backward */
        char pre[16];
        snprintf(pre, sizeof pre, "h.%d.", l);
        int ar;
        CHECK(count_comm(&p, g, m, HP_PHASE_FWD, pre, &ar) == 2 && ar == 2);
        CHECK(count_comm(&p, g, m, HP_PHASE_BWD, pre, &ar) == 2 && ar == 2);
    }
    /* the LM head: vocabulary-parallel logits and cross-entropy */
    CHECK(is(&p.val[md->io.logits], W("S(2)"), m));
    int xe = consumer(g, &hp_op_xent, md->io.logits);
    CHECK(xent_axis(&p, g, xe) == tp_axis);
    CHECK(is(&p.val[md->io.loss], WL("R"), m));
    int nflag = 0;
    for (int i = 0; i < g->nnodes; i++) nflag += xent_axis(&p, g, i) >= 0;
    CHECK(nflag == 2); /* the cross-entropy and its backward */
    /* whole model: one more all-reduce each way (embedding output forward, the
     * final layernorm's input gradient backward). The accumulating embedding
     * backward adds its rows to the LM head's row-split wte gradient in place
     * (vocabulary parallel): no gather. */
    int ar;
    CHECK(count_comm(&p, g, m, HP_PHASE_FWD, "", &ar) == 2 * md->c.L + 1 && ar == 2 * md->c.L + 1);
    CHECK(count_comm(&p, g, m, HP_PHASE_BWD, "", &ar) == 2 * md->c.L + 1 && ar == 2 * md->c.L + 1);
    int acc = -1;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == &hp_op_embedding_bwd_acc) acc = i;
    CHECK(acc >= 0 && is(&p.need[acc][2], WL("S(0)"), m) && is(&p.val[g->nodes[acc].out[0]], WL("S(0)"), m));
    CHECK(p.comm_bytes > 0);
    /* every other parameter gradient is produced in the parameter's
     * tensor-parallel layout (Partial over dp when there is one) */
    int ids[64], np = hp_graph_params(g, ids, 64);
    for (int i = 0; i < np; i++) {
        int gv = g->vals[ids[i]].grad;
        hp_layout t;
        CHECK_OK(hp_param_grad_target(&t, &p, g, gv));
        CHECK(hp_placement_eq(p.val[gv].p[tp_axis], t.p[tp_axis]));
        if (dp_axis >= 0) CHECK(p.val[gv].p[dp_axis].kind == HP_PARTIAL);
    }
    CHECK(p.nnotes == 0);
#undef W
#undef WL
    hp_propagation_free(&p);
    plan_free(&pl);
}

/* ---- (e) plan errors ---- */
static void test_errors(void) {
    /* 3 heads of size 16 cannot be split over 2 ranks */
    model md;
    build(&md, 3, 48);
    hp_mesh m = mesh("tp=2");
    plan pl = make_plan(md.g, &m, -1, 0);
    hp_propagation p;
    CHECK_ERR(hp_propagate(&p, md.g, &m, pl.fixed, pl.is_fixed),
              "h.0.attn.attention: input 'h.0.attn.linear:0' is S(3)@tp but 3 heads of size 16 cannot be split 2 ways");
    CHECK(p.val == NULL);
    /* a parameter without a layout, a Partial parameter, a shard dim out of range */
    int wpe = hp_graph_find(md.g, "wpe");
    pl.is_fixed[wpe] = 0;
    CHECK_ERR(hp_propagate(&p, md.g, &m, pl.fixed, pl.is_fixed), "parameter 'wpe' has no layout");
    pl.is_fixed[wpe] = 1;
    pl.fixed[wpe].p[0] = hp_partial(HP_PARTIAL_SUM);
    CHECK_ERR(hp_propagate(&p, md.g, &m, pl.fixed, pl.is_fixed), "cannot be Partial");
    pl.fixed[wpe].p[0] = hp_shard(2);
    CHECK_ERR(hp_propagate(&p, md.g, &m, pl.fixed, pl.is_fixed), "'wpe'");
    plan_free(&pl);
    hp_graph_destroy(md.g);
}

/* An operator without a rule runs on Replicate inputs and is reported; the
 * zero gradient of an unused parameter takes the parameter's layout; the
 * loss seed is Replicate. */

static void test_notes_and_consts(void) {
    hp_mesh m = mesh("tp=2");
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    hp_graph_scope(g, "blk");
    int y = hp_graph_node(g, NULL, &mystery, &x, 1, NULL);
    int z = hp_gelu(g, y);
    hp_layout fixed[4];
    unsigned char is_fixed[4] = {1, 0, 0, 0};
    CHECK(g->nvals == 3);
    fixed[x] = hp_layout_replicated(&m);
    fixed[x].p[0] = hp_shard(1);
    hp_propagation p;
    CHECK_OK(hp_propagate(&p, g, &m, fixed, is_fixed));
    CHECK(p.nnotes == 1 && strstr(p.notes[0], "blk.mystery") && strstr(p.notes[0], "'mystery' has no sharding rule"));
    CHECK(is(&p.need[0][0], "R@tp", &m) && is(&p.val[y], "R@tp", &m) && is(&p.val[z], "R@tp", &m));
    CHECK_NEAR(p.comm_bytes, 2 * 4 * 16 * 4 / 2.0, 1e-9); /* one all-gather */
    hp_propagation_free(&p);
    hp_graph_destroy(g);

    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_input(g, "x", HP_F32, hp_shape3(2, 4, 16));
    int t = hp_graph_input(g, "t", HP_I32, hp_shape2(2, 4));
    int w = hp_graph_param(g, "w", hp_shape2(8, 16)), unused = hp_graph_param(g, "unused", hp_shape1(6));
    int loss = hp_xent(g, hp_linear(g, x, w, -1), t, 8, NULL);
    CHECK_OK(hp_autodiff(g, loss, &hp_op_add));
    hp_layout *fx = calloc((size_t)g->nvals, sizeof *fx);
    unsigned char *isf = calloc((size_t)g->nvals, 1);
    for (int v = 0; v < g->nvals; v++) fx[v] = hp_layout_replicated(&m);
    isf[x] = isf[t] = isf[w] = isf[unused] = 1;
    fx[unused].p[0] = hp_shard(0);
    fx[w].p[0] = hp_shard(0);
    CHECK_OK(hp_propagate(&p, g, &m, fx, isf));
    int ug = g->vals[unused].grad;
    CHECK(ug >= 0 && g->vals[ug].kind == HP_V_CONST && is(&p.val[ug], "S(0)@tp", &m));
    CHECK(is(&p.val[g->loss_seed], "R@tp", &m));
    CHECK(is(&p.val[g->vals[w].grad], "S(0)@tp", &m)); /* column parallel */
    CHECK(is(&p.val[loss], "R@tp", &m));
    hp_layout tg;
    CHECK_ERR(hp_param_grad_target(&tg, &p, g, x), "not the gradient of a parameter");
    hp_propagation_free(&p);
    free(fx);
    free(isf);
    hp_graph_destroy(g);
}

int main(void) {
    test_notes_and_consts();
    model md;
    build(&md, 4, 32);
    test_replicated(&md);
    test_dp(&md);
    hp_mesh tp = mesh("tp=2"), dptp = mesh("dp=2,tp=2");
    check_megatron(&md, &tp, -1, 0);
    check_megatron(&md, &dptp, 0, 1);
    hp_graph_destroy(md.g);
    test_errors();
    return hp_test_finish("test_propagate");
}
