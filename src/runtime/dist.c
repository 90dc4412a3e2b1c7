#include "runtime/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/piece.h"

struct hp_dist {
    hp_dist_config cfg;
    hp_propagation prop;
    hp_mesh_comm *mc;
    hp_pool *ranks_pool; /* one thread per hosted rank */
    int n;
    hp_dist_rank *r;
    hp_status *st; /* [n]: each rank's status in hp_dist_run (allocated once) */
};

static void destroy_rank(hp_dist_rank *r) {
    hp_program_destroy(r->prog);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
    hp_rank_graph_free(&r->rg);
}

hp_status hp_dist_create(hp_dist **out, const hp_dist_config *cfg) {
    *out = NULL;
    int world = hp_comm_world_size(cfg->world);
    if (hp_mesh_size(&cfg->mesh) != world) {
        char mb[128];
        return hp_errorf("mesh '%s' has %d ranks but the world has %d", hp_mesh_str(mb, sizeof mb, &cfg->mesh),
                         hp_mesh_size(&cfg->mesh), world);
    }
    hp_dist *d = calloc(1, sizeof *d);
    if (!d) return hp_errorf("dist: out of memory");
    d->cfg = *cfg;
    hp_status st = hp_propagate(&d->prop, cfg->g, &d->cfg.mesh, cfg->layouts, cfg->fixed);
    if (!st) st = hp_mesh_comm_create(&d->mc, cfg->world, &d->cfg.mesh);
    int first = 0;
    hp_comm_hosted_ranks(cfg->world, &first, &d->n);
    if (!st) {
        d->r = calloc((size_t)d->n, sizeof *d->r);
        d->st = calloc((size_t)d->n, sizeof *d->st);
        if (!d->r || !d->st) st = hp_errorf("dist: out of memory");
    }
    if (!st) st = hp_pool_create(&d->ranks_pool, d->n);
    for (int i = 0; i < d->n && !st; i++) {
        hp_dist_rank *r = &d->r[i];
        r->rank = first + i;
        r->local_index = i;
        st = hp_compile_rank(&r->rg, cfg->g, &d->prop, &d->cfg.mesh, r->rank);
        if (st) break;
        r->rg.ctx.comm = hp_comm_world_rank(cfg->world, r->rank);
        r->rg.ctx.mc = d->mc;
        r->rg.ctx.mesh = &d->cfg.mesh;
        st = hp_rank_ctx_alloc(&r->rg.ctx);
        if (!st) st = hp_param_store_create(&r->ps, r->rg.g);
        if (!st) st = hp_pool_create(&r->pool, cfg->threads_per_rank > 0 ? cfg->threads_per_rank : 1);
        if (!st) st = hp_program_create_rank(&r->prog, r->rg.g, &r->ps, r->pool, &r->rg.ctx);
    }
    if (st) {
        hp_dist_destroy(d);
        return st;
    }
    *out = d;
    return HP_OK;
}

void hp_dist_destroy(hp_dist *d) {
    if (!d) return;
    for (int i = 0; i < d->n && d->r; i++) destroy_rank(&d->r[i]);
    free(d->r);
    free(d->st);
    hp_pool_destroy(d->ranks_pool);
    hp_mesh_comm_destroy(d->mc);
    hp_propagation_free(&d->prop);
    free(d);
}

int hp_dist_nranks(const hp_dist *d) { return d->n; }
hp_dist_rank *hp_dist_rank_at(hp_dist *d, int i) { return &d->r[i]; }
const hp_propagation *hp_dist_propagation(const hp_dist *d) { return &d->prop; }
const hp_mesh *hp_dist_mesh(const hp_dist *d) { return &d->cfg.mesh; }
hp_comm_world *hp_dist_world(const hp_dist *d) { return d->cfg.world; }

typedef struct {
    hp_dist *d;
    hp_dist_fn fn;
    void *ctx;
} run_ctx;

static void run_task(void *c_, int tid, int nt) {
    run_ctx *c = c_;
    (void)nt;
    c->d->st[tid] = c->fn(&c->d->r[tid], c->ctx);
}

hp_status hp_dist_run(hp_dist *d, hp_dist_fn fn, void *ctx) {
    run_ctx c = {d, fn, ctx};
    hp_pool_run(d->ranks_pool, run_task, &c);
    hp_status first = HP_OK;
    for (int i = 0; i < d->n; i++) {
        if (!first)
            first = d->st[i];
        else
            hp_status_free(d->st[i]);
        d->st[i] = HP_OK;
    }
    return first;
}

static void piece_of(hp_dist *d, hp_dist_rank *r, int v, hp_shape *local, int64_t *off) {
    memset(off, 0, sizeof(int64_t) * HP_MAX_DIMS);
    hp_local_shape(local, off, &d->cfg.g->vals[v].shape, &d->prop.val[v], &d->cfg.mesh, r->rank);
}

void hp_dist_scatter_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_local, const void *src_global) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS];
    piece_of(d, r, v, &local, off);
    const hp_value *gv = &d->cfg.g->vals[v];
    hp_piece_extract(dst_local, src_global, hp_dtype_size(gv->dtype), &gv->shape, &local, off);
}

void hp_dist_insert_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_global, const void *src_local) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS];
    piece_of(d, r, v, &local, off);
    const hp_value *gv = &d->cfg.g->vals[v];
    hp_piece_insert(dst_global, src_local, hp_dtype_size(gv->dtype), &gv->shape, &local, off);
}

hp_status hp_dist_scatter_params(hp_dist *d, const hp_param_store *global) {
    const hp_graph *g = d->cfg.g;
    for (int i = 0; i < d->n; i++) {
        hp_dist_rank *r = &d->r[i];
        for (int k = 0; k < r->ps.n; k++) {
            int gi = hp_param_store_find(global, r->ps.name[k]);
            int v = hp_graph_find(g, r->ps.name[k]);
            if (gi < 0 || v < 0) return hp_errorf("dist: parameter '%s' is missing from the model", r->ps.name[k]);
            hp_dist_scatter_value(d, r, v, hp_param_ptr(&r->ps, k), hp_param_ptr(global, gi));
        }
    }
    return HP_OK;
}

hp_status hp_dist_layouts_from_plan(hp_layout *layouts, unsigned char *fixed, const hp_plan *p, const hp_graph *g) {
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        fixed[v] = 0;
        layouts[v] = hp_layout_replicated(&p->mesh);
        if (val->kind != HP_V_PARAM && val->kind != HP_V_INPUT) continue;
        HP_TRY(hp_plan_layout_of(&layouts[v], p, val->name, val->kind == HP_V_INPUT, val->shape.ndim));
        layouts[v] = hp_layout_canonical(&layouts[v], &p->mesh); /* size-1 axes: nothing to shard */
        fixed[v] = 1;
    }
    return HP_OK;
}
