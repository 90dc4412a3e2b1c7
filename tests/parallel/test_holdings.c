/* parallel/holdings, the compile's table of who holds what, checked on every
 * rank of each plan of a small GPT-2 (AdamW): one rank, DP, TP, DP x TP,
 * FSDP levels 1, 2, 3 (ZeRO-1/2, FSDP), HSDP, FSDP x TP, gather=bf16 (a bf16
 * mirror), transient gathered units (the shard group spans supernodes), and
 * Muon under DP; and a small MoE model (moe-tiny) under FSDP / ZeRO x EP,
 * whose expert stacks, split along ep, are in split units (sharded over dp,
 * reduced over dp only). Compiled per rank as `hyperpar plan` does (no
 * communicator). For every parameter and state tensor, over the ranks:
 *  - the distinct current pieces tile the tensor exactly once, and so do
 *    the distinct loaded pieces;
 *  - each piece's replicas are exactly the ranks whose tables list the same
 *    piece (same box and part), in ascending order, this rank among them;
 *  - every piece lies inside its buffer: a parameter's inside its place in
 *    the store (and the store's total), a state's inside its value;
 *  - every trained parameter has its optimizer's states somewhere;
 *  - the store: FSDP's layout and flags, or 16-float aligned in order;
 *  - units of flat parts (FSDP's units) and the pieces of the reduced
 *    gradients: each parameter held as parts names its unit and its place in
 *    it; each gradient piece is the rank's current part of the parameter,
 *    inside the unit's reduced range (its value), held by its replicas;
 *    over the ranks the distinct gradient pieces tile each such parameter
 *    exactly once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "models/zoo.h"
#include "parallel/compile.h"
#include "testutil.h"

/* The global row-major index of element e of a piece's box. */
static int64_t global_index(const hp_holding *p, const hp_shape *g, int64_t e) {
    int64_t idx = 0, rest = e;
    int64_t coord[HP_MAX_DIMS];
    for (int d = p->box.ndim - 1; d >= 0; d--) coord[d] = rest % p->box.d[d], rest /= p->box.d[d];
    for (int d = 0; d < g->ndim; d++) idx = idx * g->d[d] + p->start[d] + coord[d];
    return idx;
}

static int same_piece(const hp_holding *a, const hp_holding *b) {
    if (a->box.ndim != b->box.ndim || a->lo != b->lo || a->hi != b->hi || a->current != b->current) return 0;
    for (int d = 0; d < a->box.ndim; d++)
        if (a->box.d[d] != b->box.d[d] || a->start[d] != b->start[d]) return 0;
    return 1;
}

/* Rank q's piece of tensor `name` equal to p (in current-ness and geometry), or NULL. */
static const hp_holding *find_same(const hp_holdings *h, const char *name, const hp_holding *p) {
    int t = hp_holdings_find(h, name);
    if (t < 0) return NULL;
    for (int i = 0; i < h->tensors[t].count; i++) {
        const hp_holding *x = &h->pieces[h->tensors[t].first + i];
        if (same_piece(x, p) && x->loaded == p->loaded) return x;
    }
    return NULL;
}

/* Over the n ranks' tables: tensor `name`'s distinct pieces of one kind
 * (which 0: current, 1: loaded, 2: of its reduced gradient) cover every
 * element exactly once. */
static void check_tiles(const hp_compiled *cs, int n, const char *name, int which) {
    const hp_shape *g = NULL;
    for (int r = 0; r < n && !g; r++) {
        int t = hp_holdings_find(&cs[r].hold, name);
        if (t >= 0) g = &cs[r].hold.tensors[t].shape;
    }
    int64_t numel = hp_shape_numel(g);
    unsigned char *seen = calloc((size_t)numel, 1);
    for (int r = 0; r < n; r++) {
        const hp_holdings *h = &cs[r].hold;
        int t = hp_holdings_find(h, name);
        if (t < 0) continue;
        CHECK(hp_shape_eq(&h->tensors[t].shape, g));
        int np = which == 2 ? h->tensors[t].grad >= 0 : h->tensors[t].count;
        for (int i = 0; i < np; i++) {
            const hp_holding *p = which == 2 ? &h->grads[h->tensors[t].grad] : &h->pieces[h->tensors[t].first + i];
            if (which < 2 && !(which ? p->loaded : p->current)) continue;
            /* a distinct piece: counted at its first replica only */
            CHECK(p->nreplicas >= 1);
            if (h->replicas[p->first_replica] != r) continue;
            for (int64_t e = p->lo; e < p->hi; e++) seen[global_index(p, g, e)]++;
        }
    }
    int64_t bad = 0;
    for (int64_t e = 0; e < numel; e++) bad += seen[e] != 1;
    if (bad) printf("  '%s' (%s): %lld of %lld elements not held exactly once\n", name,
                    which == 2 ? "reduced gradient" : which ? "loaded" : "current",
                    (long long)bad, (long long)numel);
    CHECK(bad == 0);
    free(seen);
}

/* The units of flat parts and the reduced gradients' pieces. */
static void check_units(const hp_compiled *c) {
    const hp_holdings *h = &c->hold;
    const hp_fsdp_plan *f = &c->fsdp;
    CHECK(h->nunits == (f->level ? f->nunits : 0));
    for (int u = 0; u < h->nunits; u++) {
        const hp_held_unit *x = &h->units[u];
        CHECK(!strcmp(x->name, f->units[u].name) && x->shard == f->units[u].shard && x->member == f->me);
        /* a split unit's (experts split along the replicate axis): final at the reduce-scatter, no replicas */
        CHECK(x->grad == f->units[u].grad_shard && x->replicas == (f->units[u].split ? 1 : f->replicas));
        CHECK(f->units[u].reduce_node[2] < 0 || (f->replicas > 1 && !f->units[u].split));
        CHECK(x->grad >= 0 && x->grad < c->rg.g->nvals && hp_val_numel(c->rg.g, x->grad) == (int64_t)x->shard);
    }
    int ngrads = 0;
    for (int t = 0; t < h->ntensors; t++) {
        const hp_held_tensor *x = &h->tensors[t];
        CHECK((x->unit >= 0) == x->parts && x->unit < h->nunits);
        if (x->is_state) CHECK(x->grad < 0 && x->unit == h->tensors[x->param].unit);
        if (x->is_state || x->unit < 0) {
            CHECK(x->grad < 0);
            continue;
        }
        CHECK(x->unit_at == f->offset[x->fsdp] - f->units[x->unit].offset);
        if (x->grad < 0) continue;
        ngrads++;
        CHECK(x->grad < h->ngrads);
        const hp_holding *g = &h->grads[x->grad], *cur = NULL;
        for (int i = 0; i < x->count; i++)
            if (h->pieces[x->first + i].current) cur = &h->pieces[x->first + i];
        CHECK(cur != NULL && g->tensor == t && g->part && g->current && g->place == HP_HOLD_VALUE);
        if (!cur) continue;
        const hp_held_unit *un = &h->units[x->unit];
        CHECK(g->lo == cur->lo && g->hi == cur->hi && hp_shape_eq(&g->box, &cur->box) && g->local == un->grad);
        CHECK(g->at == x->unit_at + (size_t)g->lo - un->shard * (size_t)un->member);
        /* every replica group's ranks hold the piece (and ranks that compute it alike, e.g. along tp) */
        CHECK(g->at + (size_t)hp_holding_numel(g) <= un->shard && g->nreplicas % un->replicas == 0);
    }
    CHECK(ngrads == h->ngrads);
}

/* Each piece's replica list matches the other tables. */
static void check_replicas(const hp_compiled *cs, int n) {
    for (int r = 0; r < n; r++) {
        const hp_holdings *h = &cs[r].hold;
        CHECK(h->rank == r);
        for (int i = 0; i < h->npieces; i++) {
            const hp_holding *p = &h->pieces[i];
            const char *name = h->tensors[p->tensor].name;
            int mine = 0;
            for (int j = 0; j < p->nreplicas; j++) {
                int q = h->replicas[p->first_replica + j];
                CHECK(q >= 0 && q < n && (j == 0 || q > h->replicas[p->first_replica + j - 1]));
                mine += q == r;
                const hp_holding *x = find_same(&cs[q].hold, name, p);
                CHECK(x != NULL);
                if (!x) continue;
                CHECK(x->nreplicas == p->nreplicas &&
                      !memcmp(&cs[q].hold.replicas[x->first_replica], &h->replicas[p->first_replica],
                              sizeof(int) * (size_t)p->nreplicas));
            }
            CHECK(mine == 1);
            /* and no rank outside the list holds it */
            for (int q = 0; q < n; q++) {
                int listed = 0;
                for (int j = 0; j < p->nreplicas; j++) listed |= h->replicas[p->first_replica + j] == q;
                if (!listed) CHECK(find_same(&cs[q].hold, name, p) == NULL);
            }
        }
    }
}

/* Every piece inside its buffer; the store's layout. */
static void check_places(const hp_compiled *c) {
    const hp_holdings *h = &c->hold;
    const hp_graph *lg = c->rg.g;
    const hp_held_store *s = &h->store;
    int ids[512], np = hp_graph_params(lg, ids, 512);
    CHECK(s->nparams == np);
    const hp_fsdp_plan *f = &c->fsdp;
    if (f->level) {
        CHECK(s->total == f->total && s->mirror == f->gather_bf16 && (s->nspans > 0) == f->transient);
        CHECK(s->shared_axis == (s->shared ? f->shard_axis : -1) && (!s->nspans || s->nslots == f->nslots));
        for (int j = 0; j < s->nspans; j++) CHECK(s->span[j][0] < s->span[j][1] && s->span[j][1] <= s->total);
        CHECK(s->shared == (f->level == 3 && f->style == HP_FSDP_STYLE_HYPERPAR) && s->parts);
    } else {
        CHECK(!s->mirror && !s->shared && !s->nspans && !s->parts && s->shared_axis == -1);
    }
    for (int t = 0; t < h->ntensors; t++) {
        const hp_held_tensor *x = &h->tensors[t];
        CHECK(x->parts == (x->fsdp >= 0) && x->parts == h->tensors[x->param].parts);
        for (int i = 0; i < x->count; i++) CHECK(!h->pieces[x->first + i].part || x->parts);
    }
    for (int k = 0; k < np; k++) {
        size_t end = s->offset[k] + (size_t)hp_val_numel(lg, ids[k]);
        CHECK(end <= s->total && (!f->level || s->offset[k] == f->offset[k]));
        if (!f->level) CHECK(s->offset[k] % 16 == 0 && (k == 0 || s->offset[k] >= s->offset[k - 1]));
    }
    for (int i = 0; i < h->npieces; i++) {
        const hp_holding *p = &h->pieces[i];
        const hp_held_tensor *t = &h->tensors[p->tensor];
        int64_t n = hp_holding_numel(p);
        CHECK(p->lo >= 0 && p->lo < p->hi && p->hi <= hp_shape_numel(&p->box));
        CHECK(p->current || p->loaded);
        if (!t->is_state) {
            CHECK(p->place == HP_HOLD_STORE && p->local >= 0 && p->local < np);
            if (p->place != HP_HOLD_STORE || p->local < 0 || p->local >= np) continue;
            CHECK(!strcmp(lg->vals[ids[p->local]].name, t->name));
            CHECK(hp_shape_eq(&lg->vals[ids[p->local]].shape, &p->box));
            CHECK(p->at == s->offset[p->local] + (size_t)p->lo && p->at + (size_t)n <= s->total);
        } else {
            CHECK(p->place == HP_HOLD_VALUE && p->local >= 0 && p->local < lg->nvals);
            if (p->place != HP_HOLD_VALUE || p->local < 0 || p->local >= lg->nvals) continue;
            CHECK(lg->vals[p->local].kind == HP_V_STATE && !strcmp(lg->vals[p->local].name, t->name));
            CHECK((int64_t)p->at + n <= hp_val_numel(lg, p->local));
            CHECK(!h->tensors[t->param].is_state && h->tensors[t->param].v == t->v);
        }
    }
}

/* The names of every tensor any rank holds; each must tile. */
static void check_plan(const char *what, const hp_graph *model, const hp_plan *plan, int n, const hp_compile_opts *o,
                       int want_level) {
    printf("%s\n", what);
    hp_compiled *cs = calloc((size_t)n, sizeof *cs);
    for (int r = 0; r < n; r++) CHECK_OK(hp_compile(&cs[r], model, plan, r, o));
    CHECK(cs[0].fsdp.level == want_level);
    for (int r = 0; r < n; r++) check_places(&cs[r]), check_units(&cs[r]);
    check_replicas(cs, n);
    int nseen = 0;
    char(*seen)[HP_NAME_LEN] = NULL;
    for (int r = 0; r < n; r++) {
        const hp_holdings *h = &cs[r].hold;
        for (int t = 0; t < h->ntensors; t++) {
            int dup = 0;
            for (int s = 0; s < nseen && !dup; s++) dup = !strcmp(seen[s], h->tensors[t].name);
            if (dup) continue;
            seen = realloc(seen, sizeof *seen * (size_t)(nseen + 1));
            memcpy(seen[nseen++], h->tensors[t].name, HP_NAME_LEN);
            check_tiles(cs, n, h->tensors[t].name, 0);
            check_tiles(cs, n, h->tensors[t].name, 1);
            if (h->tensors[t].unit >= 0 && !h->tensors[t].is_state) check_tiles(cs, n, h->tensors[t].name, 2);
        }
    }
    /* every trained parameter's states (AdamW: m and v; Muon: at least one) are somewhere */
    const hp_graph *g = cs[0].global;
    for (int t = 0; t < cs[0].hold.ntensors; t++) {
        const hp_held_tensor *p = &cs[0].hold.tensors[t];
        if (p->is_state || g->vals[p->v].grad < 0) continue;
        int states = 0;
        for (int s = 0; s < nseen; s++) {
            const char *dot = strrchr(seen[s], '.');
            size_t pre = strlen(seen[s]) - strlen(p->name);
            states += strlen(seen[s]) > strlen(p->name) && !strcmp(seen[s] + pre, p->name) && dot &&
                      seen[s][pre - 1] == '.';
        }
        CHECK(states >= 1);
        if (o->optim->kind == HP_OPT_ADAMW) CHECK(states == 2);
    }
    free(seen);
    for (int r = 0; r < n; r++) hp_compiled_free(&cs[r]);
    free(cs);
}

static void fsdp_plan(const char *what, const hp_graph *model, int replicas, int dp, int tp, const char *settings,
                      const hp_compile_opts *o, int level) {
    hp_plan plan;
    CHECK_OK(replicas > 1 ? hp_plan_gpt2(&plan, replicas, dp, tp) : hp_plan_gpt2_dp_tp(&plan, dp, tp));
    if (settings) CHECK_OK(hp_plan_set_fsdp(&plan, settings, "test"));
    check_plan(what, model, &plan, replicas * dp * tp, o, level);
    hp_plan_free(&plan);
}

/* moe-tiny over dp x ep with FSDP at `level` (replicate=ep, as --fsdp N --ep M plans it): every trainable
 * parameter is managed; the expert stacks (and only they) are in split units, each unit of one kind, a split
 * unit's parameters each rank's own experts (their box along ep), and no rank outside the shard group holds
 * the same part of an expert (the tiles and replicas are checked by check_plan). */
static void moe_plan(const char *what, const hp_graph *model, int dp, int ep, const char *settings,
                     const hp_compile_opts *o, int level) {
    hp_plan plan;
    CHECK_OK(hp_plan_model_ep(&plan, "moe", 1, 1, dp, ep, 1));
    CHECK_OK(hp_plan_set_fsdp(&plan, settings, "test"));
    check_plan(what, model, &plan, dp * ep, o, level);
    hp_compiled c;
    CHECK_OK(hp_compile(&c, model, &plan, dp * ep - 1, o));
    const hp_fsdp_plan *f = &c.fsdp;
    int nsplit = 0, nexp = 0;
    for (int u = 0; u < f->nunits; u++) nsplit += f->units[u].split;
    for (int k = 0; k < f->nparams; k++) {
        const hp_value *v = &c.global->vals[f->gval[k]];
        int expert = strstr(v->name, ".moe.experts.") != NULL;
        nexp += expert;
        CHECK(v->grad < 0 || f->unit_of[k] >= 0);
        if (f->unit_of[k] >= 0) CHECK(f->units[f->unit_of[k]].split == expert);
    }
    CHECK(nexp > 0 && nsplit > 0);
    /* a split unit's piece on this rank: its experts' box (E / ep of them), one dp member's shard of it */
    const hp_holdings *h = &c.hold;
    for (int t = 0; t < h->ntensors; t++) {
        const hp_held_tensor *x = &h->tensors[t];
        if (x->is_state || !strstr(x->name, ".moe.experts.")) continue;
        for (int i = 0; i < x->count; i++) {
            const hp_holding *p = &h->pieces[x->first + i];
            CHECK(p->box.d[0] * ep == x->shape.d[0] && p->start[0] == p->box.d[0] * (ep - 1));
            /* its shard: this rank's alone; levels 1, 2: the whole box too, loaded, as its dp peer's */
            CHECK(p->nreplicas == (p->part ? 1 : dp) && p->current == p->part);
        }
    }
    hp_compiled_free(&c);
    hp_plan_free(&plan);
}

int main(void) {
    hp_kernels_init();
    const int B = 8, T = 8;
    hp_gpt2_config mc = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    hp_graph *model;
    hp_gpt2_io io;
    CHECK_OK(hp_graph_create(&model));
    CHECK_OK(hp_gpt2_build(model, &io, &mc, B, T));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    oc.decay_vectors = 0;
    hp_compile_opts o = {.train = 1, .optim = &oc, .max_norm = 1.0f, .schedule = {.overlap = 1, .max_inflight = 4}};

    check_plan("one rank", model, NULL, 1, &o, 0);
    fsdp_plan("dp 4", model, 1, 4, 1, NULL, &o, 0);
    fsdp_plan("tp 2", model, 1, 1, 2, NULL, &o, 0);
    fsdp_plan("dp 2 x tp 2", model, 1, 2, 2, NULL, &o, 0);
    fsdp_plan("zero-1 over dp 4", model, 1, 4, 1, "shard=dp level=1", &o, 1);
    fsdp_plan("zero-2 over dp 4", model, 1, 4, 1, "shard=dp level=2", &o, 2);
    fsdp_plan("fsdp over dp 4", model, 1, 4, 1, "shard=dp level=3", &o, 3);
    fsdp_plan("fsdp over dp 3 (uneven)", model, 1, 3, 1, "shard=dp level=3", &o, 3);
    fsdp_plan("fsdp2 style over dp 2", model, 1, 2, 1, "shard=dp level=3 style=fsdp2", &o, 3);
    fsdp_plan("hsdp 2 x 2", model, 2, 2, 1, "shard=dp replicate=rep", &o, 3);
    fsdp_plan("fsdp 2 x tp 2", model, 1, 2, 2, "shard=dp level=3", &o, 3);
    fsdp_plan("zero-2 2 x tp 2", model, 1, 2, 2, "shard=dp level=2", &o, 2);
    fsdp_plan("hsdp 2 x 2 x tp 2", model, 2, 2, 2, "shard=dp replicate=rep", &o, 3);
    {
        hp_compile_opts b = o;
        b.dtype = HP_BF16;
        fsdp_plan("bf16, fsdp gather=bf16 over dp 2", model, 1, 2, 1, "shard=dp level=3 gather=bf16", &b, 3);
        fsdp_plan("bf16, zero-2 gather=bf16 over dp 2", model, 1, 2, 1, "shard=dp level=2 gather=bf16", &b, 2);
    }
    {
        hp_compile_opts t = o;
        t.supernode_ranks = 2; /* the shard group of 4 spans two supernodes: transient units */
        fsdp_plan("fsdp over dp 4, two supernodes", model, 1, 4, 1, "shard=dp level=3", &t, 3);
    }
    {
        hp_optim_config mu = oc;
        mu.kind = HP_OPT_MUON;
        hp_compile_opts m = o;
        m.optim = &mu;
        fsdp_plan("muon, dp 2", model, 1, 2, 1, NULL, &m, 0);
    }
    hp_graph_destroy(model);
    {
        hp_model_config mo;
        const hp_model_family *fam = hp_model_family_of("moe-tiny");
        CHECK(fam != NULL);
        CHECK_OK(fam->preset(&mo, "moe-tiny"));
        CHECK_OK(hp_graph_create(&model));
        CHECK_OK(fam->build(model, &mo, B, T));
        moe_plan("moe: fsdp 2 x ep 2", model, 2, 2, "shard=dp replicate=ep level=3", &o, 3);
        moe_plan("moe: zero-2 2 x ep 2", model, 2, 2, "shard=dp replicate=ep level=2", &o, 2);
        moe_plan("moe: zero-1 2 x ep 2", model, 2, 2, "shard=dp replicate=ep level=1", &o, 1);
        moe_plan("moe: fsdp 2 x ep 4, unit_bytes", model, 2, 4, "shard=dp replicate=ep level=3 unit_bytes=65536", &o, 3);
        hp_graph_destroy(model);
    }
    return hp_test_finish("test_holdings");
}
