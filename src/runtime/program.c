#include "runtime/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/memplan.h"
#include "core/timing.h"
#include "kernels/backend.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

typedef struct {
    const hp_node *node;
    hp_tensor *in; /* nin + nxin tensors, in p->ins */
    hp_tensor out[HP_MAX_OUT];
} step;

struct hp_program {
    const hp_graph *g;
    hp_param_store *ps;
    hp_pool *pool;
    hp_kctx kctx;
    hp_status err; /* kctx.err points here */
    double *prof;  /* [2] compute, communication seconds; NULL: off */
    hp_step_hook hook;
    void *hook_ctx;
    step *steps[HP_NPHASES];
    int nsteps[HP_NPHASES];
    hp_tensor *ins; /* every step's input tensors */
    void **ptr;     /* per value */
    char *arena;
    float *grads;
    char *persist;  /* inputs and constants */
    hp_gemm_ctx *gemm; /* oneDNN engine and streams of the rank (when a node uses them) */
    void **state;      /* [g->nnodes] nodes' prepared state */
    hp_program_info info;
    const hp_allocator *mem; /* of arena, grads, persist and scratch, whose sizes follow */
    size_t arena_n, grads_n, persist_n, scratch_n;
    /* created for an action list (hp_program_create_actions): the list, each action's activation slot, and
     * per action kind k, chunk c and slot s the steps it runs, kst[(k * nchunks + c) * nslots + s][0 .. kn[same]) */
    hp_action *acts;
    int nacts, nmicro, nslots, nchunks;
    int *act_slot;
    step **kst;
    int *kn;
    hp_tensor *kins;
};

#define NKINDS (HP_ACT_OPT + 1)

typedef hp_action_expansion expansion;

static int uses_gemm(const hp_graph *g) {
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op->uses_gemm && g->nodes[i].op->uses_gemm(g, &g->nodes[i])) return 1;
    return 0;
}

/* Every step's prepare hook, once, on its resolved tensors (oneDNN primitives
 * for its shapes: the steady state creates none). */
static hp_status prepare_steps(hp_program *p) {
    const hp_graph *g = p->g;
    if (uses_gemm(g)) {
        HP_TRY(hp_gemm_ctx_create(&p->gemm, p->pool));
        p->kctx.gemm = p->gemm;
    }
    p->state = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *p->state);
    if (!p->state) return hp_errorf("program: out of memory");
    p->kctx.state = p->state;
    for (int ph = 0; ph < HP_NPHASES; ph++)
        for (int i = 0; i < p->nsteps[ph]; i++) {
            const step *s = &p->steps[ph][i];
            if (!s->node->op->prepare) continue;
            HP_TRY(s->node->op->prepare(&p->state[s->node - g->nodes], &p->kctx, s->node, s->in, s->out));
        }
    return HP_OK;
}

long hp_program_gemm_creations(const hp_program *p) { return p->gemm ? hp_gemm_ctx_creations(p->gemm) : 0; }

static size_t value_bytes(const hp_graph *g, int v) {
    return (size_t)hp_val_numel(g, v) * hp_dtype_size(g->vals[v].dtype);
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

hp_status hp_program_create(hp_program **out, const hp_graph *g, hp_param_store *ps, hp_pool *pool) {
    return hp_program_create_ordered(out, g, NULL, 0, NULL, ps, pool, NULL);
}

hp_status hp_program_create_rank(hp_program **out, const hp_graph *g, hp_param_store *ps, hp_pool *pool,
                                 void *rank_ctx) {
    return hp_program_create_ordered(out, g, NULL, 0, NULL, ps, pool, rank_ctx);
}

hp_status hp_program_create_ordered(hp_program **out, const hp_graph *g, const int *order_in, int norder,
                                    const hp_memplan *mem, hp_param_store *ps, hp_pool *pool, void *rank_ctx) {
    return hp_program_create_on(out, NULL, g, order_in, norder, mem, ps, pool, rank_ctx);
}

static hp_status build_kind_steps(hp_program *p, const int *order, int norder, const expansion *ex);

static hp_status create_impl(hp_program **out, const hp_program_backend *be, const hp_graph *g, const int *order_in,
                             int norder, const hp_memplan *mem, hp_param_store *ps, hp_pool *pool, void *rank_ctx,
                             const expansion *ex) {
    *out = NULL;
    hp_kernels_init(); /* BLAS single-threaded inside each pool thread: the pool decides the cores */
    if (hp_graph_status(g)) return hp_errorf("program: the graph has an error: %s", hp_status_msg(hp_graph_status(g)));
    HP_TRY(hp_param_store_check(ps, g));
    hp_program *p = calloc(1, sizeof *p);
    if (!p) return hp_errorf("program: out of memory");
    p->g = g;
    p->ps = ps;
    p->mem = be && be->mem ? be->mem : hp_allocator_host();
    p->kctx.kern = be && be->kern ? be->kern : hp_kbackend_from_env();
    p->pool = pool;
    int nslots = ex ? ex->nslots : 1;
    p->ptr = calloc((size_t)g->nvals * (size_t)nslots, sizeof *p->ptr);
    int *order = malloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
    hp_memplan plan = {0};
    hp_status st = HP_OK;
    if (!p->ptr || !order) {
        st = hp_errorf("program: out of memory");
        goto fail;
    }
    if (!order_in) norder = g->nnodes;
    for (int i = 0; i < norder; i++) order[i] = order_in ? order_in[i] : i;
    for (int i = 1; i < norder; i++)
        if (g->nodes[order[i]].phase < g->nodes[order[i - 1]].phase) {
            st = hp_errorf("program: step %d ('%s') runs in an earlier phase than the step before it", i,
                           g->nodes[order[i]].name);
            goto fail;
        }
    if (mem) {
        plan.offset = malloc(sizeof(size_t) * (size_t)(g->nvals ? g->nvals : 1));
        if (!plan.offset) {
            st = hp_errorf("program: out of memory");
            goto fail;
        }
        memcpy(plan.offset, mem->offset, sizeof(size_t) * (size_t)g->nvals);
        plan.arena_bytes = mem->arena_bytes;
        plan.naive_bytes = mem->naive_bytes;
        plan.peak_bytes = mem->peak_bytes;
    } else if (ex) {
        st = hp_memplan_build_slots(&plan, g, ex->nodes, ex->tenure, ex->n, ex->slot_of, ex->ntenures, ex->nslots);
        if (st) goto fail;
    } else {
        st = hp_memplan_build(&plan, g, order, norder);
        if (st) goto fail;
    }
    p->info.arena_bytes = plan.arena_bytes;
    p->info.naive_bytes = plan.naive_bytes;
    p->info.peak_bytes = plan.peak_bytes;

    /* Persistent storage: parameters (store), their gradients (flat, same
     * layout), inputs and constants (one block). */
    int has_bwd = 0, pi = 0;
    for (int i = 0; i < g->nnodes; i++) has_bwd |= g->nodes[i].phase == HP_PHASE_BWD;
    size_t gtotal = hp_param_grad_floats(g, ps->offset, ps->total); /* FSDP's gradients are views */
    if (has_bwd) {
        p->grads_n = gtotal * sizeof(float);
        p->grads = hp_allocator_alloc(p->mem, p->grads_n);
        if (!p->grads) {
            st = hp_errorf("program: cannot allocate %zu MB of gradients", gtotal * 4 >> 20);
            goto fail;
        }
        p->info.grad_bytes = gtotal * sizeof(float);
    }
    size_t persist = 0;
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->kind == HP_V_PARAM) {
            p->ptr[v] = hp_param_ptr(ps, pi++);
            continue;
        }
        if (val->view_of >= 0 || val->mirror_of >= 0 || val->store_slot >= 0) continue;
        if (val->grad_of >= 0 && g->vals[val->grad_of].kind == HP_V_PARAM && val->persistent) continue;
        if (val->persistent) persist += round64(value_bytes(g, v));
    }
    p->persist_n = persist, p->arena_n = plan.arena_bytes;
    p->persist = hp_allocator_alloc(p->mem, persist);
    p->arena = hp_allocator_alloc(p->mem, plan.arena_bytes);
    if (!p->persist || !p->arena) {
        st = hp_errorf("program: cannot allocate the %zu MB activation arena", plan.arena_bytes >> 20);
        goto fail;
    }
    p->info.input_bytes = persist;
    size_t at = 0;
    pi = 0;
    for (int v = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->kind == HP_V_PARAM || val->view_of >= 0) continue;
        if (val->mirror_of >= 0) { /* a parameter's bf16 copy in the store's mirror (FSDP gather=bf16) */
            int idx = hp_param_store_find(ps, g->vals[val->mirror_of].name);
            if (!ps->data16 || idx < 0 || val->dtype != HP_BF16) {
                st = hp_errorf("program: '%s' lives in the parameter store's bf16 mirror, which it has not", val->name);
                goto fail;
            }
            p->ptr[v] = ps->data16 + ps->offset[idx];
            continue;
        }
        if (val->store_slot >= 0) { /* an FSDP unit's compute copy in one of the store's slots */
            if (val->store_slot >= ps->nslots || val->dtype != HP_F32 ||
                (size_t)hp_val_numel(g, v) > ps->slot_at[val->store_slot + 1] - ps->slot_at[val->store_slot]) {
                st = hp_errorf("program: '%s' lives in slot %d of the parameter store, which it has not", val->name,
                               val->store_slot);
                goto fail;
            }
            p->ptr[v] = ps->slots + ps->slot_at[val->store_slot];
            continue;
        }
        if (val->grad_of >= 0 && g->vals[val->grad_of].kind == HP_V_PARAM && val->persistent) {
            if (!p->grads) continue;
            int idx = hp_param_store_find(ps, g->vals[val->grad_of].name);
            p->ptr[v] = p->grads + ps->offset[idx];
            continue;
        }
        if (val->persistent) {
            p->ptr[v] = p->persist + at;
            at += round64(value_bytes(g, v));
        } else if (plan.offset[v] != HP_MEMPLAN_NONE) {
            p->ptr[v] = p->arena + plan.offset[v];
        }
    }
    for (int s = 1; s < nslots; s++) /* the other activation slots: the arena's values their own, the rest shared */
        for (int v = 0; v < g->nvals; v++) {
            size_t o = plan.offset[(size_t)s * (size_t)g->nvals + (size_t)v];
            p->ptr[s * g->nvals + v] = g->vals[v].persistent || g->vals[v].view_of >= 0 || o == HP_MEMPLAN_NONE
                                           ? p->ptr[v]
                                           : p->arena + o;
        }
    for (int s = 0; s < nslots; s++) /* views: into their base's storage */
        for (int v = 0; v < g->nvals; v++) {
            const hp_value *val = &g->vals[v];
            void *base = val->view_of >= 0 ? p->ptr[s * g->nvals + val->view_of] : NULL;
            if (base)
                p->ptr[s * g->nvals + v] = (char *)base + (size_t)val->view_offset * hp_dtype_size(val->dtype);
        }
    if (g->loss_seed >= 0) ((float *)p->ptr[g->loss_seed])[0] = 1.0f;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].init >= 0 && p->ptr[v])
            memcpy(p->ptr[v], hp_graph_blob_at(g, g->vals[v].init), value_bytes(g, v));

    /* Scratch: the largest any node needs. */
    size_t scratch = 0;
    int nt = hp_pool_size(pool);
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->op->scratch) {
            size_t s = n->op->scratch(g, n, nt);
            if (s > scratch) scratch = s;
        }
    }
    p->kctx.graph = g;
    p->kctx.pool = pool;
    p->kctx.rank = rank_ctx;
    p->kctx.err = &p->err;
    p->scratch_n = scratch * sizeof(float);
    p->kctx.scratch = hp_allocator_alloc(p->mem, p->scratch_n);
    if (!p->kctx.scratch) {
        st = hp_errorf("program: cannot allocate %zu MB of scratch", scratch * 4 >> 20);
        goto fail;
    }
    p->info.scratch_bytes = scratch * sizeof(float);

    /* Steps in the given order, with every tensor resolved. */
    size_t nins = 0;
    for (int i = 0; i < norder; i++) nins += (size_t)hp_node_nin_all(&g->nodes[order[i]]);
    p->ins = calloc(nins ? nins : 1, sizeof *p->ins);
    if (!p->ins) {
        st = hp_errorf("program: out of memory");
        goto fail;
    }
    for (int ph = 0; ph < HP_NPHASES; ph++) {
        p->steps[ph] = calloc((size_t)(norder ? norder : 1), sizeof(step));
        if (!p->steps[ph]) {
            st = hp_errorf("program: out of memory");
            goto fail;
        }
    }
    hp_tensor *next_in = p->ins;
    for (int i = 0; i < norder; i++) {
        const hp_node *n = &g->nodes[order[i]];
        int ph = n->phase;
        step *s = &p->steps[ph][p->nsteps[ph]++];
        s->node = n;
        s->in = next_in;
        next_in += hp_node_nin_all(n);
        for (int k = 0; k < hp_node_nin_all(n); k++) {
            int v = hp_node_input(g, n, k);
            s->in[k] = (hp_tensor){g->vals[v].dtype, g->vals[v].shape, p->ptr[v]};
        }
        for (int k = 0; k < n->nout; k++) {
            int v = n->out[k];
            if (v >= 0) s->out[k] = (hp_tensor){g->vals[v].dtype, g->vals[v].shape, p->ptr[v]};
        }
        if (n->op->flops) p->info.flops[ph] += n->op->flops(g, n);
        if (n->op->bytes) p->info.bytes[ph] += n->op->bytes(g, n);
    }
    for (int ph = 0; ph < HP_NPHASES; ph++) p->info.nsteps[ph] = p->nsteps[ph];
    if (ex) st = build_kind_steps(p, order, norder, ex);
    if (st) goto fail;
    st = prepare_steps(p);
    if (st) goto fail;
    hp_memplan_free(&plan);
    free(order);
    *out = p;
    return HP_OK;
fail:
    hp_memplan_free(&plan);
    free(order);
    hp_program_destroy(p);
    return st;
}

hp_status hp_program_create_on(hp_program **out, const hp_program_backend *be, const hp_graph *g, const int *order_in,
                               int norder, const hp_memplan *mem, hp_param_store *ps, hp_pool *pool, void *rank_ctx) {
    return create_impl(out, be, g, order_in, norder, mem, ps, pool, rank_ctx, NULL);
}

/* Per action kind and slot, the steps of the order that the kind runs, their tensors those of the slot. */
static hp_status build_kind_steps(hp_program *p, const int *order, int norder, const expansion *ex) {
    const hp_graph *g = p->g;
    int S = ex->nslots;
    p->nslots = S, p->nacts = ex->l->n, p->nmicro = ex->l->nmicro;
    p->acts = malloc(sizeof *p->acts * (size_t)(p->nacts ? p->nacts : 1));
    p->act_slot = malloc(sizeof(int) * (size_t)(p->nacts ? p->nacts : 1));
    int C = ex->l->nchunks > 1 ? ex->l->nchunks : 1;
    p->nchunks = C;
    p->kst = calloc((size_t)(NKINDS * C * S), sizeof *p->kst);
    p->kn = calloc((size_t)(NKINDS * C * S), sizeof *p->kn);
    size_t nins = 0;
    for (int i = 0; i < norder; i++) nins += (size_t)hp_node_nin_all(&g->nodes[order[i]]);
    p->kins = calloc(nins * 2 * (size_t)S + 1, sizeof *p->kins); /* a node runs in two kinds (its part, backward),
                                                                   * of its one chunk */
    if (!p->acts || !p->act_slot || !p->kst || !p->kn || !p->kins) return hp_errorf("program: out of memory");
    memcpy(p->acts, ex->l->act, sizeof *p->acts * (size_t)p->nacts);
    memcpy(p->act_slot, ex->act_slot, sizeof(int) * (size_t)p->nacts);
    hp_tensor *next_in = p->kins;
    for (int k = 0; k < NKINDS; k++)
        for (int c = 0; c < C; c++)
        for (int s = 0; s < S; s++) {
            int ks = (k * C + c) * S + s;
            step *st = p->kst[ks] = calloc((size_t)(norder ? norder : 1), sizeof(step));
            if (!st) return hp_errorf("program: out of memory");
            void **ptr = p->ptr + (size_t)s * (size_t)g->nvals;
            hp_action a = {(hp_action_kind)k, 0, c};
            for (int i = 0; i < norder && (k != HP_ACT_OPT || c == 0); i++) { /* the optimizer: once, chunk 0's */
                const hp_node *n = &g->nodes[order[i]];
                if (!hp_action_list_runs(ex->l, &a, order[i], ex->part[order[i]])) continue;
                step *t = &st[p->kn[ks]++];
                t->node = n;
                t->in = next_in;
                next_in += hp_node_nin_all(n);
                for (int j = 0; j < hp_node_nin_all(n); j++) {
                    int v = hp_node_input(g, n, j);
                    t->in[j] = (hp_tensor){g->vals[v].dtype, g->vals[v].shape, ptr[v]};
                }
                for (int j = 0; j < n->nout; j++) {
                    int v = n->out[j];
                    if (v >= 0) t->out[j] = (hp_tensor){g->vals[v].dtype, g->vals[v].shape, ptr[v]};
                }
            }
        }
    return HP_OK;
}

hp_status hp_program_create_actions(hp_program **out, const hp_graph *g, const int *order, int norder,
                                    const hp_action_list *l, hp_param_store *ps, hp_pool *pool, void *rank_ctx) {
    *out = NULL;
    expansion ex;
    HP_TRY(hp_action_expand(&ex, g, order, norder, l));
    hp_status st = create_impl(out, NULL, g, order, norder, NULL, ps, pool, rank_ctx, &ex);
    hp_action_expansion_free(&ex);
    return st;
}

void hp_program_destroy(hp_program *p) {
    if (!p) return;
    if (p->kst)
        for (int i = 0; i < NKINDS * p->nchunks * p->nslots; i++) free(p->kst[i]);
    free(p->kst), free(p->kn), free(p->kins), free(p->acts), free(p->act_slot);
    if (p->state)
        for (int i = 0; i < p->g->nnodes; i++)
            if (p->state[i] && p->g->nodes[i].op->release) p->g->nodes[i].op->release(p->state[i]);
    free(p->state);
    hp_gemm_ctx_destroy(p->gemm);
    for (int ph = 0; ph < HP_NPHASES; ph++) free(p->steps[ph]);
    free(p->ins);
    free(p->ptr);
    if (p->mem) {
        hp_allocator_free(p->mem, p->arena, p->arena_n);
        hp_allocator_free(p->mem, p->grads, p->grads_n);
        hp_allocator_free(p->mem, p->persist, p->persist_n);
        hp_allocator_free(p->mem, p->kctx.scratch, p->scratch_n);
    }
    hp_status_free(p->err);
    free(p);
}

hp_status hp_program_run(hp_program *p, hp_phase phase) {
    return hp_program_run_range(p, phase, 0, p->nsteps[phase]);
}

int hp_program_num_steps(const hp_program *p, hp_phase phase) { return p->nsteps[phase]; }

const hp_node *hp_program_step_node(const hp_program *p, hp_phase phase, int i) { return p->steps[phase][i].node; }

void hp_program_profile(hp_program *p, double *acc) { p->prof = acc; }

void hp_program_set_hook(hp_program *p, hp_step_hook hook, void *ctx) {
    p->hook = hook;
    p->hook_ctx = ctx;
}

/* The slow path: profiling or a step hook (tracing) is on. */
static hp_status run_observed(hp_program *p, step *s, int begin, int end) {
    for (int i = begin; i < end; i++) {
        double t0 = hp_now();
        s[i].node->op->run(&p->kctx, s[i].node, s[i].in, s[i].out);
        double t1 = hp_now();
        if (p->prof) p->prof[s[i].node->op->communicates ? 1 : 0] += t1 - t0;
        if (p->hook) p->hook(p->hook_ctx, s[i].node, t0, t1);
        if (p->err) return hp_errorf("%s: %s", s[i].node->name, hp_status_msg(p->err));
    }
    return HP_OK;
}

static hp_status run_steps(hp_program *p, step *s, int begin, int end) {
    if (p->err) return hp_errorf("program: an earlier step failed: %s", hp_status_msg(p->err));
    if (p->prof || p->hook) return run_observed(p, s, begin, end);
    for (int i = begin, n = end; i < n; i++) {
        s[i].node->op->run(&p->kctx, s[i].node, s[i].in, s[i].out);
        if (p->err) return hp_errorf("%s: %s", s[i].node->name, hp_status_msg(p->err));
    }
    return HP_OK;
}

hp_status hp_program_run_range(hp_program *p, hp_phase phase, int begin, int end) {
    int ph = phase;
    if (end > p->nsteps[ph]) end = p->nsteps[ph];
    return run_steps(p, p->steps[ph], begin, end);
}

/* Micro-batch m's loss x into the binary tree lv (micro-batch 0's at lv[0]):
 * x closes the levels of m's trailing 1 bits, earlier sums on the left, and
 * lands on the next level; returns that partial sum (the whole tree's when m
 * is the last of a power-of-two count). */
static float tree_add(float *lv, float x, int m) {
    int t = 0;
    for (; (unsigned)m >> t & 1u; t++) x = lv[t] + x;
    if (t < 13) lv[t] = x;
    return x;
}

static hp_status run_opt(hp_program *p, const hp_step_io *io) {
    if (!io || !io->opt_seconds) return hp_program_run(p, HP_PHASE_OPT);
    double *prof = p->prof, t0 = hp_now(); /* the optimizer is its own column */
    p->prof = NULL;
    hp_status st = hp_program_run(p, HP_PHASE_OPT);
    p->prof = prof;
    *io->opt_seconds += hp_now() - t0;
    return st;
}

/* A program created for an action list runs that list only. */
static int planned_for(const hp_program *p, const hp_action_list *l) {
    if (l->n != p->nacts || l->nmicro != p->nmicro) return 0;
    for (int i = 0; i < l->n; i++)
        if (l->act[i].kind != p->acts[i].kind || l->act[i].micro != p->acts[i].micro ||
            l->act[i].chunk != p->acts[i].chunk)
            return 0;
    return 1;
}

hp_status hp_program_run_actions(hp_program *p, float *loss, const hp_action_list *l, const hp_step_io *io) {
    float lv[13], sum = 0;
    int fed = -1, nfwd = 0, last_fwd = -1;
    int fwd_only = 1; /* forwards alone (an evaluation) run in slot 0 of a program planned for another list */
    for (int i = 0; i < l->n; i++) fwd_only &= l->act[i].kind == HP_ACT_FWD;
    if (p->acts && !planned_for(p, l) && !fwd_only)
        return hp_errorf("program: created for another action list (%d actions, %d micro-batches)", p->nacts, p->nmicro);
    int in_slot0 = p->acts && !planned_for(p, l);
    /* model chunks: the loss is read after its own chunk's forwards only */
    int lp = l->loss >= 0 ? p->g->vals[l->loss].producer : -1, lchunk = l->chunk_of && lp >= 0 ? l->chunk_of[lp] : -1;
    for (int i = 0; i < l->n; i++) {
        const hp_action *a = &l->act[i];
        if (p->acts) { /* the list the arena was planned for: every action in its micro-batch's slot */
            if (a->micro >= 0 && a->micro != fed && io && io->inputs) {
                HP_TRY(io->inputs(io->ctx, a->micro));
                fed = a->micro;
            }
            int slot = in_slot0 ? 0 : p->act_slot[i];
            int ks = ((int)a->kind * p->nchunks + (a->chunk < p->nchunks ? a->chunk : 0)) * p->nslots + slot;
            if (a->kind == HP_ACT_OPT && io && io->opt_seconds) {
                double *prof = p->prof, t0 = hp_now();
                p->prof = NULL;
                hp_status st = run_steps(p, p->kst[ks], 0, p->kn[ks]);
                p->prof = prof;
                *io->opt_seconds += hp_now() - t0;
                HP_TRY(st);
            } else {
                HP_TRY(run_steps(p, p->kst[ks], 0, p->kn[ks]));
            }
            int counted = a->kind == HP_ACT_FWD && l->loss >= 0 && (lchunk < 0 || a->chunk == lchunk);
            if (counted) {
                float x = ((const float *)p->ptr[(size_t)slot * (size_t)p->g->nvals + (size_t)l->loss])[0];
                sum = l->tree ? tree_add(lv, x, a->micro) : nfwd ? sum + x : x;
            }
            nfwd += counted;
            continue;
        }
        /* one activation slot: a backward needs its micro-batch's forward to be the last one run */
        if (a->kind != HP_ACT_FWD && a->kind != HP_ACT_OPT && a->micro != last_fwd)
            return hp_errorf("program: action %d: micro-batch %d's backward after micro-batch %d's forward "
                             "(one micro-batch in flight at a time)", i, a->micro, last_fwd);
        if (a->micro >= 0 && a->micro != fed && io && io->inputs) {
            HP_TRY(io->inputs(io->ctx, a->micro));
            fed = a->micro;
        }
        switch (a->kind) {
        case HP_ACT_FWD:
            HP_TRY(hp_program_run(p, HP_PHASE_FWD));
            if (l->loss >= 0) {
                float x = ((const float *)p->ptr[l->loss])[0];
                sum = l->tree ? tree_add(lv, x, a->micro) : nfwd ? sum + x : x;
            }
            nfwd++, last_fwd = a->micro;
            break;
        case HP_ACT_BWD: HP_TRY(hp_program_run(p, HP_PHASE_BWD)); break;
        case HP_ACT_OPT: HP_TRY(run_opt(p, io)); break;
        default: return hp_errorf("program: action %d: backward split into input and weight parts is not built", i);
        }
    }
    if (l->nmicro > 1) sum /= (float)l->nmicro;
    if (loss) *loss = sum;
    return HP_OK;
}

void *hp_program_data(const hp_program *p, int value) { return p->ptr[value]; }
float *hp_program_grads(const hp_program *p) { return p->grads; }
const hp_program_info *hp_program_get_info(const hp_program *p) { return &p->info; }
const hp_graph *hp_program_graph(const hp_program *p) { return p->g; }
