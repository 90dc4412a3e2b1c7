/* parallel/fsdp, the compile's FSDP pass, checked on every rank of a plan:
 *  - units: one per block plus root by default, or the plan's; each unit's
 *    parameters 64-byte aligned inside it, the unit a multiple of 16 x
 *    members floats, its shards equal and 64-byte aligned, units apart;
 *  - the managed gradients are not reduced by lowering (no redistribution),
 *    each unit has one gather pair and one reduction pair (plus the
 *    replicas' wait under HSDP), and the schedule puts every gather wait
 *    before the first forward reader of the unit, its start no later, every
 *    reduction start after the last backward node touching the unit;
 *  - the optimizer's pieces over all members tile every managed parameter
 *    exactly once (no element missing, none twice), with the parameter's own
 *    weight decay rule (AdamW pieces of matrices decay, of vectors not);
 *  - the plan's text form carries the fsdp and unit lines and parses back. */
#include <string.h>

#include "fixture.h"
#include "models/gpt2_plan.h"
#include "parallel/compile.h"

static int count_op(const hp_graph *g, const hp_opdef *op) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) n += g->nodes[i].op == op;
    return n;
}

static int touches_unit(const hp_compiled *c, const hp_node *n, int u, int grads) {
    const hp_graph *g = c->rg.g;
    for (int k = 0; k < c->fsdp.nparams; k++) {
        if (c->fsdp.unit_of[k] != u) continue;
        int ids[256];
        hp_graph_params(g, ids, 256);
        int v = grads ? g->vals[ids[k]].grad : ids[k];
        for (int q = 0; q < hp_node_nin_all(n); q++)
            if (hp_node_input(g, n, q) == v) return 1;
        for (int q = 0; q < n->nout; q++)
            if (n->out[q] == v) return 1;
    }
    return 0;
}

/* Schedule positions of the FSDP nodes against the unit's readers: gathered before its first reader, reduced
 * after the last node that writes its gradients (readers of its parameters may follow: the reduction does not
 * touch them, parallel/wgrad_first). */
static void check_places(const hp_compiled *c) {
    const hp_graph *g = c->rg.g;
    const hp_schedule *s = &c->sched;
    for (int u = 0; u < c->fsdp.nunits; u++) {
        int gs = -1, gw = -1, rs = -1, first_read = -1, last_touch = -1;
        for (int k = 0; k < s->n; k++) {
            const hp_node *n = &g->nodes[s->order[k]];
            int mine = n->op->communicates && n->a.i[0] == u;
            if (n->op == &hp_op_fsdp_gather_start && mine) gs = k;
            else if (n->op == &hp_op_fsdp_gather_wait && mine) gw = k;
            else if (n->op == &hp_op_fsdp_reduce_start && mine) rs = k;
            else if (n->op->communicates && strncmp(n->op->name, "fsdp", 4) == 0) continue;
            else if (n->phase == HP_PHASE_FWD && first_read < 0 && touches_unit(c, n, u, 0)) first_read = k;
            else if (n->phase == HP_PHASE_BWD && touches_unit(c, n, u, 1)) last_touch = k; /* its gradients */
        }
        CHECK(gs >= 0 && gw > gs && first_read > gw);
        CHECK(rs > last_touch && last_touch >= 0);
    }
}

/* Every managed parameter's pieces over the ranks tile it exactly once. */
static void check_pieces(hp_compiled *cs, int n, const hp_graph *model) {
    int ids[256], np = hp_graph_params(model, ids, 256);
    for (int k = 0; k < np; k++) {
        if (cs[0].fsdp.unit_of[k] < 0) continue;
        int64_t numel = hp_val_numel(cs[0].rg.g, ids[k]); /* local ids equal the global ones for params */
        unsigned char *seen = calloc((size_t)numel, 1);
        for (int r = 0; r < n; r++) {
            const hp_graph *g = cs[r].rg.g;
            for (int v = 0; v < g->nvals; v++) {
                const hp_value *x = &g->vals[v];
                if (x->view_of != ids[k] || g->vals[x->view_of].kind != HP_V_PARAM) continue;
                for (int64_t e = 0; e < hp_val_numel(g, v); e++) seen[x->view_offset + e]++;
            }
        }
        int64_t bad = 0;
        for (int64_t e = 0; e < numel; e++) bad += seen[e] != 1;
        CHECK(bad == 0);
        free(seen);
    }
}

static void check_layout(const hp_compiled *c) {
    const hp_fsdp_plan *f = &c->fsdp;
    size_t end = 0;
    for (int u = 0; u < f->nunits; u++) {
        const hp_fsdp_unit *un = &f->units[u];
        CHECK(un->offset == end && un->offset % HP_FSDP_ALIGN == 0);
        CHECK(un->size == un->shard * (size_t)f->members && un->shard % HP_FSDP_ALIGN == 0);
        end = un->offset + un->size;
    }
    for (int k = 0; k < f->nparams; k++) {
        CHECK(f->offset[k] % HP_FSDP_ALIGN == 0);
        if (f->unit_of[k] >= 0) {
            const hp_fsdp_unit *un = &f->units[f->unit_of[k]];
            CHECK(f->offset[k] >= un->offset && f->offset[k] < un->offset + un->size);
        } else {
            CHECK(f->offset[k] >= end);
        }
    }
}

int main(void) {
    const int B = 8, T = 8;
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    oc.decay_vectors = 0; /* GPT-2 style: matrices decay, vectors do not */
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};

    /* ---- FSDP 4, default units ---- */
    hp_plan plan;
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 4, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp level=3 prefetch=1", "test"));
    hp_compiled cs[4];
    for (int r = 0; r < 4; r++) {
        CHECK_OK(hp_compile(&cs[r], model, &plan, r, &o));
        const hp_compiled *c = &cs[r];
        CHECK(c->fsdp.level == 3 && c->fsdp.members == 4 && c->fsdp.me == r && c->fsdp.nunits == 3);
        CHECK(!strcmp(c->fsdp.units[0].name, "root") && !strcmp(c->fsdp.units[1].name, "h.0") &&
              !strcmp(c->fsdp.units[2].name, "h.1"));
        check_layout(c);
        const hp_graph *lg = c->rg.g;
        int bwd_redist = 0; /* the managed gradients are FSDP's to reduce: lowering leaves them */
        for (int i = 0; i < lg->nnodes; i++)
            bwd_redist += lg->nodes[i].phase == HP_PHASE_BWD && (lg->nodes[i].op == &hp_op_redistribute ||
                                                                 lg->nodes[i].op == &hp_op_redistribute_start);
        CHECK(bwd_redist == 0);
        CHECK(count_op(lg, &hp_op_fsdp_gather_start) == 3 && count_op(lg, &hp_op_fsdp_gather_wait) == 3);
        CHECK(count_op(lg, &hp_op_fsdp_reduce_start) == 3 && count_op(lg, &hp_op_fsdp_reduce_wait) == 3);
        CHECK(count_op(lg, &hp_op_fsdp_allreduce_wait) == 0);
        check_places(c);
    }
    check_pieces(cs, 4, model);
    /* weight decay follows the parameter, not the piece's (1-D) shape */
    {
        const hp_graph *g = cs[1].rg.g;
        const hp_node *ad = NULL;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == &hp_op_adamw_update) ad = &g->nodes[i];
        CHECK(ad != NULL);
        if (ad) {
            const unsigned char *dec = hp_graph_blob_at(g, (long)ad->a.i[1]);
            for (int t = 0; t < ad->nxin / 4; t++) {
                const hp_value *pv = &g->vals[g->xin[ad->xin_at + 4 * t]];
                CHECK(pv->view_of >= 0 && pv->shape.ndim == 1);
                CHECK(dec[t] == (g->vals[pv->view_of].shape.ndim >= 2));
            }
        }
    }
    for (int r = 0; r < 4; r++) hp_compiled_free(&cs[r]);

    /* ---- text form round trip ---- */
    CHECK_OK(hp_plan_add_fsdp_unit(&plan, "blocks", "h.*", "test"));
    CHECK_OK(hp_plan_add_fsdp_unit(&plan, "rest", "*", "test"));
    char text[4096];
    hp_plan_str(text, sizeof text, &plan);
    CHECK(strstr(text, "fsdp: shard=dp level=3 reshard=on prefetch=1 reduce=fp32 gather=fp32 style=hyperpar\n") != NULL);
    CHECK(strstr(text, "unit blocks: h.*\nunit rest: *\n") != NULL);
    hp_plan back;
    CHECK_OK(hp_plan_parse(&back, text, "round"));
    char text2[4096];
    hp_plan_str(text2, sizeof text2, &back);
    CHECK(!strcmp(text, text2));
    /* the plan's units: two, blocks first */
    hp_compiled c2;
    CHECK_OK(hp_compile(&c2, model, &back, 2, &o));
    CHECK(c2.fsdp.nunits == 2 && !strcmp(c2.fsdp.units[0].name, "blocks") && c2.fsdp.units[0].nparams == 24);
    check_layout(&c2);
    check_places(&c2);
    hp_compiled_free(&c2);
    hp_plan_free(&back);
    hp_plan_free(&plan);

    /* ---- units by bytes: runs in the forward's first-use order up to 16 KiB, small neighbours joined ---- */
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=16K", "test"));
    hp_plan_str(text, sizeof text, &plan);
    CHECK(strstr(text, " style=hyperpar unit_bytes=16384\n") != NULL);
    CHECK_OK(hp_plan_parse(&back, text, "round"));
    hp_plan_str(text2, sizeof text2, &back);
    CHECK(!strcmp(text, text2) && back.fsdp.unit_bytes == 16384);
    hp_plan_free(&back);
    {
        static const char *const want[] = {"wte", "wpe+4", "h.0.attn.proj.weight+3", "h.0.mlp.fc.weight+1",
                                           "h.0.mlp.proj.weight+3", "h.1.attn.qkv.weight+1", "h.1.attn.proj.weight+3",
                                           "h.1.mlp.fc.weight+1", "h.1.mlp.proj.weight+3"};
        hp_compiled cb;
        CHECK_OK(hp_compile(&cb, model, &plan, 1, &o));
        const hp_fsdp_plan *f = &cb.fsdp;
        CHECK(f->nunits == 9);
        for (int u = 0; u < f->nunits && u < 9; u++) CHECK(!strcmp(f->units[u].name, want[u]));
        /* every unit within the budget but for one parameter larger than it, small ones (<= 1 KiB) aside */
        int ids[256], np = hp_graph_params(model, ids, 256);
        CHECK(np == f->nparams);
        for (int u = 0; u < f->nunits; u++) {
            size_t sum = 0;
            int nbig = 0;
            for (int k = 0; k < np; k++) {
                if (f->unit_of[k] != u) continue;
                size_t b = (size_t)hp_val_numel(model, ids[k]) * 4;
                sum += b;
                nbig += b > 1024;
            }
            CHECK(sum <= 16384 || nbig == 1);
        }
        check_layout(&cb);
        check_places(&cb);
        hp_compiled_free(&cb);
    }
    /* units by bytes and named units exclude each other; a byte count must be one */
    hp_status bad = hp_plan_add_fsdp_unit(&plan, "blocks", "h.*", "test:9");
    CHECK(bad && strstr(hp_status_msg(bad), "test:9: unit 'blocks': the fsdp line (test) sizes its units by bytes"));
    hp_status_free(bad);
    hp_plan_free(&plan);
    CHECK_OK(hp_plan_gpt2_dp_tp(&plan, 2, 1));
    bad = hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=8X", "p:1");
    CHECK(bad && strstr(hp_status_msg(bad), "p:1: fsdp unit_bytes=8X: expected a byte count >= 1"));
    hp_status_free(bad);
    bad = hp_plan_set_fsdp(&plan, "shard=dp unit_bytes=0", "p:1");
    CHECK(bad && strstr(hp_status_msg(bad), "p:1: fsdp unit_bytes=0: expected a byte count"));
    hp_status_free(bad);
    hp_plan_free(&plan);
    bad = hp_plan_parse(&back, "mesh: dp=2\nunit a: h.*\nfsdp: shard=dp unit_bytes=1M\n", "u.plan");
    CHECK(bad && strstr(hp_status_msg(bad), "u.plan:3: fsdp unit_bytes=1048576: the plan names its units (u.plan:2: unit a)"));
    hp_status_free(bad);

    /* ---- HSDP 2 x 2 x TP 2: replicas' all-reduce waits, pieces per shard group ---- */
    CHECK_OK(hp_plan_gpt2(&plan, 2, 2, 2));
    CHECK_OK(hp_plan_set_fsdp(&plan, "shard=dp replicate=rep", "test"));
    hp_compiled h[8];
    for (int r = 0; r < 8; r++) {
        CHECK_OK(hp_compile(&h[r], model, &plan, r, &o));
        CHECK(h[r].fsdp.members == 2 && h[r].fsdp.replicas == 2);
        CHECK(count_op(h[r].rg.g, &hp_op_fsdp_allreduce_wait) == h[r].fsdp.nunits);
        check_layout(&h[r]);
        check_places(&h[r]);
    }
    /* ranks 0 and 2 (rep 0, dp 0 and 1, tp 0) tile the TP-rank-0 pieces */
    hp_compiled pair[2] = {h[0], h[2]};
    check_pieces(pair, 2, model);
    for (int r = 0; r < 8; r++) hp_compiled_free(&h[r]);
    hp_plan_free(&plan);
    hp_graph_destroy(model);
    return hp_test_finish("test_fsdp");
}
