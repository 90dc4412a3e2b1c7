/* Deliberately wrong plans on a small differentiated GPT-2, caught by layout
 * propagation with one-line messages that name the operator, the tensors and
 * the layouts found and needed; and the rule behind most of them: parameters
 * never move between ranks. The built-in data / Megatron plans propagate with
 * every parameter consumed where it lives (or sliced / made Partial locally
 * from a Replicate copy). */
#include "core/autodiff.h"
#include "layout/plan.h"
#include "layout/propagate.h"
#include "layout/redist.h"
#include "ops/ops.h"
#include "testutil.h"

/* The layout room's tests link only the rooms below layout, so the GPT-2
 * builder is compiled in here. */
#include "models/gpt2.h"
#include "models/gpt2_plan.h"

typedef struct {
    hp_graph *g;
    hp_gpt2_io io;
    hp_gpt2_config c;
} model;

static void build(model *md, int L, int NH, int C) {
    md->c = (hp_gpt2_config){.L = L, .NH = NH, .C = C, .V = 100, .Vp = 128, .maxT = 16};
    CHECK_OK(hp_gpt2_config_check(&md->c));
    CHECK_OK(hp_graph_create(&md->g));
    CHECK_OK(hp_gpt2_build(md->g, &md->io, &md->c, 4, 8));
    CHECK_OK(hp_autodiff(md->g, md->io.loss, &hp_op_add));
}

/* Layouts of every parameter and input from plan p, then propagation. */
static hp_status propagate_plan(hp_propagation *out, const model *md, const hp_plan *p) {
    const hp_graph *g = md->g;
    hp_layout *fixed = calloc((size_t)g->nvals, sizeof *fixed);
    unsigned char *is_fixed = calloc((size_t)g->nvals, 1);
    HP_ASSERT(fixed && is_fixed);
    hp_status st = HP_OK;
    for (int v = 0; v < g->nvals && !st; v++) {
        const hp_value *val = &g->vals[v];
        fixed[v] = hp_layout_replicated(&p->mesh);
        if (val->kind != HP_V_PARAM && val->kind != HP_V_INPUT) continue;
        st = hp_plan_layout_of(&fixed[v], p, val->name, val->kind == HP_V_INPUT, val->shape.ndim);
        is_fixed[v] = 1;
    }
    if (!st) st = hp_propagate(out, g, &p->mesh, fixed, is_fixed);
    free(fixed);
    free(is_fixed);
    return st;
}

static hp_status propagate_text(hp_propagation *out, const model *md, const char *text) {
    hp_plan p;
    HP_TRY(hp_plan_parse(&p, text, "test.plan"));
    hp_status st = propagate_plan(out, md, &p);
    hp_plan_free(&p);
    return st;
}

/* Every parameter is consumed in its own layout or one made from it by local
 * steps only (slice, to-partial); returns the number consumed otherwise and
 * counts in *local the parameter inputs converted locally. */
static int params_moved(const hp_propagation *p, const hp_graph *g, const hp_mesh *m, int *local) {
    int moved = 0;
    *local = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k];
            if (g->vals[v].kind != HP_V_PARAM || !hp_propagation_redistributes(p, g, i, k)) continue;
            hp_redist r;
            CHECK_OK(hp_redist_plan(&r, &g->vals[v].shape, &p->val[v], &p->need[i][k], m));
            int comm = 0;
            for (int s = 0; s < r.nsteps; s++)
                comm |= r.step[s].kind != HP_RD_SLICE && r.step[s].kind != HP_RD_TO_PARTIAL;
            if (comm) {
                char b1[160], b2[160];
                fprintf(stderr, "  %s moves '%s': %s -> %s\n", n->name, g->vals[v].name,
                        hp_layout_str(b1, sizeof b1, &p->val[v], m), hp_layout_str(b2, sizeof b2, &p->need[i][k], m));
            }
            moved += comm;
            *local += !comm;
        }
    }
    return moved;
}

/* The built-in plans: no parameter moves anywhere, forward or backward. */
static void test_builtin_plans(const model *md) {
    int shapes[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}};
    for (int s = 0; s < 5; s++) {
        hp_plan p;
        CHECK_OK(hp_plan_gpt2_dp_tp(&p, shapes[s][0], shapes[s][1]));
        hp_propagation pr;
        CHECK_OK(propagate_plan(&pr, md, &p));
        int local;
        CHECK(params_moved(&pr, md->g, &p.mesh, &local) == 0);
        /* row-parallel biases are made Partial locally under tensor parallelism */
        CHECK(shapes[s][1] == 1 || local > 0);
        hp_propagation_free(&pr);
        hp_plan_free(&p);
    }
}

static void test_contraction_conflicts(const model *md) {
    hp_propagation p;
    /* the MLP-up weight on its contraction dim, its bias on its rows */
    CHECK_ERR(propagate_text(&p, md, "mesh: tp=2\nparam h.*.mlp.fc.weight: S(1)@tp\nparam h.*.mlp.fc.bias: S(0)@tp\n"),
              "propagate: h.0.mlp.linear: parameter 'h.0.mlp.fc.bias' is S(0)@tp where the operator needs "
              "P(sum)@tp or R@tp (with parameter 'h.0.mlp.fc.weight' S(1)@tp): no strategy on mesh axis 'tp' fits "
              "without moving a parameter across ranks");
    CHECK(p.val == NULL);
    /* the fused QKV on its contraction dim (dim 2 of [3, C, C]) is row
     * parallel: allowed with a Replicate bias (made Partial locally) ... */
    CHECK_OK(propagate_text(&p, md, "mesh: tp=2\nparam h.*.attn.qkv.weight: S(2)@tp\n"));
    hp_mesh tp2;
    CHECK_OK(hp_mesh_parse(&tp2, "tp=2"));
    int local;
    CHECK(params_moved(&p, md->g, &tp2, &local) == 0 && local > 0);
    int qkvw = hp_graph_find(md->g, "h.0.attn.qkv.weight"), qkv = -1;
    for (int i = 0; i < md->g->nnodes && qkv < 0; i++)
        if (md->g->nodes[i].op == &hp_op_linear && md->g->nodes[i].in[1] == qkvw) qkv = i;
    CHECK(qkv >= 0 && p.val[md->g->nodes[qkv].out[0]].p[0].kind == HP_PARTIAL);
    CHECK(p.need[qkv][2].p[0].kind == HP_PARTIAL); /* the bias */
    hp_propagation_free(&p);
    /* ... but not with a bias split by heads */
    CHECK_ERR(propagate_text(&p, md, "mesh: tp=2\nparam h.*.attn.qkv.weight: S(2)@tp\nparam h.*.attn.qkv.bias: S(1)@tp\n"),
              "h.0.attn.linear: parameter 'h.0.attn.qkv.bias' is S(1)@tp where the operator needs P(sum)@tp or "
              "R@tp (with parameter 'h.0.attn.qkv.weight' S(2)@tp)");
    /* a weight split on its contraction dim by both axes, its input split by
     * batch on dp: the input cannot be re-split, the weight cannot move */
    CHECK_ERR(propagate_text(&p, md,
                             "mesh: dp=2,tp=2\ninput *: S(0)@dp\nparam h.*.mlp.fc.weight: S(1)@dp,S(1)@tp\n"),
              "h.0.mlp.linear: parameter 'h.0.mlp.fc.weight' is S(1)@dp,S(1)@tp where the operator needs "
              "R@dp,S(1)@tp (with input 'h.0.mlp.layernorm:0' S(0)@dp,R@tp): no strategy on mesh axis 'dp'");
}

static void test_other_errors(const model *md) {
    hp_propagation p;
    /* layer norm weights are used whole */
    CHECK_ERR(propagate_text(&p, md, "mesh: tp=2\nparam h.0.ln1.weight: S(0)@tp\n"),
              "h.0.attn.layernorm: parameter 'h.0.ln1.weight' is S(0)@tp where the operator needs R@tp: no strategy "
              "on mesh axis 'tp' fits without moving a parameter across ranks");
    /* positions split by position: added to whole sequences */
    CHECK_ERR(propagate_text(&p, md, "mesh: tp=2\nparam wpe: S(0)@tp\n"),
              "embed.add_pos: parameter 'wpe' is S(0)@tp where the operator needs R@tp");
    /* heads that cannot be split evenly (3 heads of 16 over 2 ranks) */
    model odd;
    build(&odd, 1, 3, 48);
    hp_plan pl;
    CHECK_OK(hp_plan_gpt2_dp_tp(&pl, 1, 2));
    CHECK_ERR(propagate_plan(&p, &odd, &pl), "is S(3)@tp but 3 heads of size 16 cannot be split 2 ways");
    hp_plan_free(&pl);
    hp_graph_destroy(odd.g);
    /* plan-file mistakes are reported by the plan, with the line */
    CHECK_ERR(hp_plan_parse(&pl, "mesh: dp=2\nparam wte: S(0)@pp\n", "bad.plan"),
              "bad.plan:2: param 'wte': layout 'S(0)@pp': unknown axis 'pp' (mesh dp=2)");
    CHECK_OK(hp_plan_parse(&pl, "mesh: dp=2\nparam wte: S(3)@dp\n", "bad.plan"));
    CHECK_ERR(propagate_plan(&p, md, &pl), "bad.plan:2");
    CHECK_ERR(propagate_plan(&p, md, &pl), "'wte'");
    hp_plan_free(&pl);
}

int main(void) {
    model md;
    build(&md, 2, 4, 32);
    test_builtin_plans(&md);
    test_contraction_conflicts(&md);
    test_other_errors(&md);
    hp_graph_destroy(md.g);
    return hp_test_finish("test_plan_errors");
}
