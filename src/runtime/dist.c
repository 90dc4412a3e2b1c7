#include "runtime/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/launch.h"
#include "parallel/piece.h"
#include "runtime/rank_threads.h"

typedef struct {
    struct hp_dist *d;
    hp_dist_fn fn;
    void *ctx;
} run_ctx;

struct hp_dist {
    hp_dist_config cfg;
    hp_mesh mesh;
    hp_mesh_comm *mc;
    hp_rank_threads *threads; /* one per hosted rank; NULL: one rank, run on the caller's thread */
    double grace_s;           /* how long the other rank-threads may take to return after an error */
    run_ctx run;              /* the current run (here, not on the caller's stack: an abandoned thread reads it) */
    int n;
    hp_dist_rank *r;
    hp_status *st; /* [n]: each rank's status in hp_dist_run (allocated once) */
};

static void destroy_rank(hp_dist_rank *r) {
    /* collectives a failed step started and never waited for: their lanes read the
     * program's buffers and the rank's arguments until they return (a broken group
     * fails them at once; another group's by its deadline) */
    hp_rank_ctx *ctx = &r->c.rg.ctx;
    for (int s = 0; ctx->reqs && s < ctx->nslots; s++)
        if (ctx->reqs[s]) hp_status_free(hp_comm_wait(ctx->reqs[s])), ctx->reqs[s] = NULL;
    if (r->c.state.destroy) r->c.state.destroy(ctx); /* (the state's own in-flight calls: waited there) */
    hp_program_destroy(r->prog);
    hp_pool_destroy(r->pool);
    hp_param_store_free(&r->ps);
    hp_compiled_free(&r->c);
}

/* The rank's parameter store as the compile's table describes it (its
 * layout, spans, slots, bf16 mirror): the hosted ranks of one supernode that
 * differ only along the table's shared axis share the first one's (FSDP
 * level 3: the supernode's one copy of their units); otherwise each rank has
 * its own. */
static hp_status create_store(hp_dist *d, int i) {
    hp_dist_rank *r = &d->r[i];
    const hp_held_store *s = &r->c.hold.store;
    if (s->shared_axis >= 0) {
        int me[HP_MESH_MAX_DIMS], other[HP_MESH_MAX_DIMS];
        hp_mesh_coords(me, &d->mesh, r->rank);
        int sn = hp_comm_supernode_of(d->cfg.world, r->rank);
        for (int j = 0; j < i; j++) {
            hp_mesh_coords(other, &d->mesh, d->r[j].rank);
            int same = hp_comm_supernode_of(d->cfg.world, d->r[j].rank) == sn;
            for (int a = 0; a < d->mesh.ndim; a++) same &= a == s->shared_axis || me[a] == other[a];
            if (same) return hp_param_store_borrow(&r->ps, &d->r[j].ps);
        }
    }
    if (s->nspans)
        return hp_param_store_create_spans(&r->ps, r->c.rg.g, s->offset, s->total, (const size_t(*)[2])s->span,
                                           s->nspans, s->nslots, s->slot_at);
    HP_TRY(hp_param_store_create_at(&r->ps, r->c.rg.g, s->offset, s->total));
    return s->mirror ? hp_param_store_add_mirror(&r->ps) : HP_OK;
}

/* The rank's program: planned for its step's actions where micro-batches overlap (a pipeline stage's
 * schedule holds several in flight: an activation slot each) or backwards are split into their input- and
 * weight-gradient parts (zero bubble), else over its step order. */
static hp_status create_program(hp_dist_rank *r, hp_rank_ctx *ctx) {
    const hp_action_list *l = &r->c.sched.step;
    int needs = 0;
    HP_TRY(hp_action_list_needs_slots(&needs, l));
    if (needs)
        return hp_program_create_actions(&r->prog, r->c.rg.g, r->c.sched.order, r->c.sched.n, l, &r->ps, r->pool,
                                         ctx);
    return hp_program_create_ordered(&r->prog, r->c.rg.g, r->c.sched.order, r->c.sched.n, &r->c.mem, &r->ps,
                                     r->pool, ctx);
}

hp_status hp_dist_create(hp_dist **out, const hp_dist_config *cfg) {
    *out = NULL;
    hp_mesh mesh;
    if (cfg->plan)
        mesh = cfg->plan->mesh;
    else
        HP_TRY(hp_mesh_parse(&mesh, "dp=1"));
    int world = hp_comm_world_size(cfg->world);
    if (hp_mesh_size(&mesh) != world) {
        char mb[128];
        return hp_errorf("mesh '%s' has %d ranks but the world has %d", hp_mesh_str(mb, sizeof mb, &mesh),
                         hp_mesh_size(&mesh), world);
    }
    hp_dist *d = calloc(1, sizeof *d);
    if (!d) return hp_errorf("dist: out of memory");
    d->cfg = *cfg;
    d->mesh = mesh;
    hp_status st = hp_mesh_comm_create(&d->mc, cfg->world, &d->mesh);
    int first = 0;
    hp_comm_hosted_ranks(cfg->world, &first, &d->n);
    if (!st) {
        d->r = calloc((size_t)d->n, sizeof *d->r);
        d->st = calloc((size_t)d->n, sizeof *d->st);
        if (!d->r || !d->st) st = hp_errorf("dist: out of memory");
    }
    if (!st && d->n > 1) st = hp_rank_threads_create(&d->threads, d->n);
    /* After one rank's error the others get a quarter of the comm timeout (0.5 to 5 s) to return:
     * one waiting on the broken group returns within milliseconds; one that does not answer by
     * then is left running, and the error is reported without it. Under MPI the job ends
     * (MPI_Abort) after the error anyway, and the first process to abort ends the others before
     * they print: there the others get 50 ms, so the process that saw the root cause (a rank
     * missing at time T) reports before the processes stuck behind it, whose waits across
     * supernodes end later (comm: a quarter of the timeout past T). */
    d->grace_s = hp_comm_timeout_s(cfg->world) / 4;
    if (d->grace_s < 0.5) d->grace_s = 0.5;
    if (d->grace_s > 5) d->grace_s = 5;
    if (hp_comm_uses_mpi(cfg->world)) d->grace_s = 0.05;
    /* the compile knows where the supernodes end (FSDP across them gathers into transient slots) */
    hp_compile_opts co = cfg->compile;
    co.supernode_ranks = hp_comm_supernodes(cfg->world) > 1 ? hp_comm_ranks_per_supernode(cfg->world) : 0;
    for (int i = 0; i < d->n && !st; i++) {
        hp_dist_rank *r = &d->r[i];
        r->rank = first + i;
        r->local_index = i;
        st = hp_compile(&r->c, cfg->model, cfg->plan, r->rank, &co);
        if (st) break;
        hp_rank_ctx *ctx = &r->c.rg.ctx;
        ctx->comm = hp_comm_world_rank(cfg->world, r->rank);
        ctx->mc = d->mc;
        ctx->mesh = &r->c.mesh;
        ctx->world_group = hp_comm_world_group(cfg->world);
        ctx->world_size = world;
        st = hp_rank_ctx_alloc(ctx);
        if (!st) st = create_store(d, i);
        if (!st) st = hp_pool_create(&r->pool, cfg->threads_per_rank > 0 ? cfg->threads_per_rank : 1);
        if (!st && cfg->compile.deterministic) hp_pool_set_grain(r->pool, HP_DIST_DET_GRAIN);
        if (!st) st = create_program(r, ctx);
        if (!st && r->c.state.create) /* the passes' run-time state (FSDP's), made by their hook */
            st = r->c.state.create(ctx, r->c.state.arg, d->mc, r->rank, r->ps.data, r->ps.data16, r->ps.slots);
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
    hp_comm_world_end_if_failed(d->cfg.world); /* MPI after a failure: the job ends here */
    if (hp_dist_abandoned(d)) return; /* a rank-thread that did not answer may still use all of it */
    for (int i = 0; i < d->n && d->r; i++) destroy_rank(&d->r[i]);
    free(d->r);
    free(d->st);
    hp_rank_threads_destroy(d->threads);
    hp_mesh_comm_destroy(d->mc);
    free(d);
}

int hp_dist_nranks(const hp_dist *d) { return d->n; }
hp_dist_rank *hp_dist_rank_at(hp_dist *d, int i) { return &d->r[i]; }
const hp_graph *hp_dist_global(const hp_dist *d) { return d->r[0].c.global; }
const hp_propagation *hp_dist_propagation(const hp_dist *d) { return &d->r[0].c.prop; }
const hp_mesh *hp_dist_mesh(const hp_dist *d) { return &d->mesh; }
hp_comm_world *hp_dist_world(const hp_dist *d) { return d->cfg.world; }
int hp_dist_lead(const hp_dist *d) { return d->r[0].rank == 0; }

void *hp_dist_value(hp_dist_rank *r, int v) {
    int lv = r->c.rg.map[v];
    return lv >= 0 ? hp_program_data(r->prog, lv) : NULL;
}

int hp_dist_abandoned(const hp_dist *d) { return d->threads && hp_rank_threads_abandoned(d->threads) > 0; }

static hp_status run_task(void *c_, int i) {
    run_ctx *c = c_;
    return c->fn(&c->d->r[i], c->ctx);
}

hp_status hp_dist_run(hp_dist *d, hp_dist_fn fn, void *ctx) {
    if (!d->threads) return fn(&d->r[0], ctx);
    if (hp_dist_abandoned(d))
        return hp_errorf("dist: rank-threads of this process stopped answering after an earlier error");
    d->run = (run_ctx){d, fn, ctx};
    int gone = hp_rank_threads_run(d->threads, d->st, run_task, &d->run, d->grace_s);
    hp_status first = HP_OK;
    for (int i = 0; i < d->n; i++) {
        if (!first)
            first = d->st[i];
        else
            hp_status_free(d->st[i]);
        d->st[i] = HP_OK;
    }
    if (gone) {
        hp_comm_world_abandon(d->cfg.world);
        char which[256] = "";
        size_t len = 0;
        for (int i = 0, k = 0; i < d->n && len + 16 < sizeof which; i++)
            if (!hp_rank_threads_returned(d->threads, i))
                len += (size_t)snprintf(which + len, sizeof which - len, "%s%d", k++ ? ", " : "", d->r[i].rank);
        hp_status st = hp_errorf("%s (rank-thread%s %s of this process did not return within %g s after it and "
                                 "%s left running)",
                                 first ? hp_status_msg(first) : "dist: a rank-thread stopped answering",
                                 gone > 1 ? "s" : "", which, d->grace_s, gone > 1 ? "were" : "was");
        hp_status_free(first);
        return st;
    }
    return first;
}

static void piece_of(hp_dist *d, hp_dist_rank *r, int v, hp_shape *local, int64_t *off) {
    memset(off, 0, sizeof(int64_t) * HP_MAX_DIMS);
    hp_local_shape(local, off, &hp_dist_global(d)->vals[v].shape, &hp_dist_propagation(d)->val[v], &d->mesh, r->rank);
}

void hp_dist_scatter_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_local, const void *src_global) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS];
    piece_of(d, r, v, &local, off);
    const hp_value *gv = &hp_dist_global(d)->vals[v];
    hp_piece_extract(dst_local, src_global, hp_dtype_size(gv->dtype), &gv->shape, &local, off);
}

void hp_dist_insert_value(hp_dist *d, hp_dist_rank *r, int v, void *dst_global, const void *src_local) {
    hp_shape local;
    int64_t off[HP_MAX_DIMS];
    piece_of(d, r, v, &local, off);
    const hp_value *gv = &hp_dist_global(d)->vals[v];
    hp_piece_insert(dst_global, src_local, hp_dtype_size(gv->dtype), &gv->shape, &local, off);
}

hp_status hp_dist_scatter_params(hp_dist *d, const hp_param_store *global) {
    const hp_graph *g = hp_dist_global(d);
    float *tmp = NULL;
    size_t cap = 0;
    for (int i = 0; i < d->n; i++) {
        hp_dist_rank *r = &d->r[i];
        for (int k = 0; k < r->ps.n; k++) {
            int gi = hp_param_store_find(global, r->ps.name[k]);
            int v = hp_graph_find(g, r->ps.name[k]);
            if (gi < 0 || v < 0) {
                free(tmp);
                return hp_errorf("dist: parameter '%s' is missing from the model", r->ps.name[k]);
            }
            if (!r->ps.nspans) {
                hp_dist_scatter_value(d, r, v, hp_param_ptr(&r->ps, k), hp_param_ptr(global, gi));
                continue;
            }
            /* a store of spans: the piece whole in a scratch buffer, then the parts that are memory */
            size_t n = hp_param_numel(&r->ps, k);
            if (n > cap) {
                float *t = realloc(tmp, n * sizeof(float));
                if (!t) {
                    free(tmp);
                    return hp_errorf("dist: out of memory");
                }
                tmp = t, cap = n;
            }
            hp_dist_scatter_value(d, r, v, tmp, hp_param_ptr(global, gi));
            hp_param_store_copy_parts(hp_param_ptr(&r->ps, k), tmp, &r->ps, k);
        }
    }
    free(tmp);
    return HP_OK;
}

hp_status hp_dist_world_create(hp_comm_world **out, const hp_plan *plan, double timeout_s, long a2a_fuse_bytes) {
    *out = NULL;
    int n = plan ? hp_mesh_size(&plan->mesh) : 1, nprocs = 1;
    hp_comm_opts co;
    hp_comm_opts_default(&co);
    if (plan) {
        if (hp_launch_mpi_processes()) nprocs = hp_launch_mpi_processes();
        if (n % nprocs) return hp_errorf("the plan's %d ranks cannot be spread over %d processes", n, nprocs);
    } else {
        co.mpi = 0; /* one rank: no MPI */
    }
    co.ranks_per_supernode = n / nprocs;
    if (timeout_s > 0) co.timeout_s = timeout_s;
    if (a2a_fuse_bytes) co.a2a_fuse_bytes = a2a_fuse_bytes > 0 ? a2a_fuse_bytes : 0;
    return hp_comm_world_create(out, &co);
}

int hp_dist_threads_per_rank(const hp_comm_world *w, int threads) {
    int per = threads / hp_comm_ranks_per_supernode(w);
    return per > 0 ? per : 1;
}
