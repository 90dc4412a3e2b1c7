#include "runtime/dist_ckpt.h"

#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "io/ckpt_convert.h"
#include "io/fsutil.h"
#include "parallel/piece.h"
#include "runtime/ckpt_pieces.h"

/* One whole tensor of the checkpoint: a parameter or an optimizer state. */
typedef struct {
    char *name;     /* as stored: the parameter's name, or "adamw.m.<param>" etc. */
    int v;          /* global graph value of the (underlying) parameter */
    int ls;         /* states: the value in rank 0's local graph (-1: found by name, flat parts) */
    int is_state;   /* 0: model.safetensors; 1: optim.safetensors */
    int part;       /* 1: ranks hold flat parts of its boxes (the table's hp_holding.part: FSDP's shards) */
    hp_shape shape; /* global */
    size_t off;     /* floats into the whole buffer of its file (rank 0's process) */
} entry;

typedef struct {
    hp_shape shape;
    int64_t off[HP_MAX_DIMS];
} piece;

struct hp_dist_ckpt {
    hp_dist *d;
    const hp_graph *g;
    hp_comm_world *w;
    int nh, world;
    int lead;      /* 1: this process hosts rank 0 (it assembles and writes) */
    int multiproc; /* 1: ranks live in more than one process */
    int ne, np;    /* entries; the first np are parameters */
    entry *e;
    int *lk;             /* [ne][nh]: index in the hosted rank's param store, or its state value */
    unsigned char *own;  /* [ne][world]: 1 when that rank delivers its piece */
    int remote;          /* 1: some owner lives outside rank 0's process */
    size_t model_floats, state_floats;
    int64_t stage_floats; /* the largest remote piece */
    float *whole_model, *whole_state, *stage; /* rank 0's process, from the first save */
    hp_named_tensor *nt;                      /* [ne] */
    int failed;                               /* this process failed (agreement) */
    const char *dir;                          /* the checkpoint being saved (messages) */
    hp_ckpt_format format;                    /* of saves */
    hp_ckpt_fault fault;                      /* tests: a sharded save that stops before its commit */
    hp_ckpt_pieces *pieces;                   /* the sharded format, from its first use */
    int parts;                                /* 1: some tensor is held in flat parts (the table's) */
    int partial;                              /* 1: some rank holds nothing of some tensor (the table's) */
};

/* The pieces rank q holds of entry e, by the compile's table (hosted rank 0's:
 * its rules give every rank's pieces); returns how many (at most 2). */
static int held_of(hp_holding *out, const hp_dist_ckpt *c, const entry *e, int q) {
    const hp_holdings *h = &hp_dist_rank_at(c->d, 0)->c.hold;
    int t = 0;
    while (t < h->ntensors && (h->tensors[t].is_state || h->tensors[t].v != e->v)) t++;
    return t < h->ntensors ? hp_holdings_pieces_for(out, h, t, e->is_state, q) : 0;
}

static int is_lead_host(const hp_dist_ckpt *c, int rank) {
    if (!c->multiproc) return 1;
    return hp_comm_supernode_of(c->w, rank) == hp_comm_supernode_of(c->w, 0);
}

static void piece_of(piece *p, const hp_dist_ckpt *c, const entry *e, int rank) {
    memset(p, 0, sizeof *p);
    hp_local_shape(&p->shape, p->off, &e->shape, &hp_dist_propagation(c->d)->val[e->v], hp_dist_mesh(c->d), rank);
}

static int same_piece(const piece *a, const piece *b) {
    if (a->shape.ndim != b->shape.ndim) return 0;
    for (int i = 0; i < a->shape.ndim; i++)
        if (a->shape.d[i] != b->shape.d[i] || a->off[i] != b->off[i]) return 0;
    return 1;
}

static int same_shape(const hp_shape *a, const hp_shape *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

/* The hosted rank's buffer for entry i. */
static float *local_ptr(const hp_dist_ckpt *c, int i, int local_index) {
    int k = c->lk[(size_t)i * (size_t)c->nh + (size_t)local_index];
    if (k < 0) return NULL; /* FSDP: a state of a parameter this rank's shards miss */
    hp_dist_rank *r = hp_dist_rank_at(c->d, local_index);
    if (!c->e[i].is_state) return hp_param_ptr(&r->ps, k);
    return hp_program_data(r->prog, k);
}

static float *whole_ptr(const hp_dist_ckpt *c, const entry *e) {
    return (e->is_state ? c->whole_state : c->whole_model) + e->off;
}

/* 1 when the ranks hold parameter i (graph order) in flat parts of their boxes (hosted rank 0's table). */
static int held_in_parts(const hp_dist_ckpt *c, int i) {
    const hp_holdings *h = &hp_dist_rank_at(c->d, 0)->c.hold;
    return i < h->ntensors && h->tensors[i].parts;
}

/* Flat parts (FSDP): a rank holds the states of only the parameters its parts touch, so
 * the states of each parameter are named from any hosted rank that has
 * them; a parameter no hosted rank touches gets the prefixes of a trained
 * parameter of the same optimizer (AdamW's "adamw.m.", "adamw.v." when
 * every state seen is AdamW's). */
static hp_status list_part_states(hp_dist_ckpt *c) {
    const hp_graph *g = c->g;
    int all_adamw = 1, seen = 0;
    for (int li = 0; li < c->nh; li++) {
        const hp_graph *lg = hp_dist_rank_at(c->d, li)->c.rg.g;
        for (int v = 0; v < lg->nvals; v++)
            if (lg->vals[v].kind == HP_V_STATE) seen = 1, all_adamw &= !strncmp(lg->vals[v].name, "adamw.", 6);
    }
    for (int i = 0; i < c->np; i++) {
        int v = c->e[i].v, found = 0;
        for (int li = 0; li < c->nh && !found; li++) {
            const hp_rank_graph *rg = &hp_dist_rank_at(c->d, li)->c.rg;
            const hp_graph *lg = rg->g;
            for (int s = 0; s < lg->nvals; s++)
                if (lg->vals[s].kind == HP_V_STATE && lg->vals[s].state_of == rg->map[v]) {
                    c->e[c->ne++] = (entry){strdup(lg->vals[s].name), v, -1, 1, c->e[i].part, g->vals[v].shape, 0};
                    found = 1;
                }
        }
        if (found || g->vals[v].grad < 0 || !seen) continue; /* untrained, or no optimizer */
        if (!all_adamw)
            return hp_errorf("checkpoint: no rank of this process holds a piece of '%s', and with Muon its "
                             "optimizer states cannot be named here",
                             g->vals[v].name);
        static const char *const prefix[2] = {"adamw.m.", "adamw.v."};
        for (int k = 0; k < 2; k++) {
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%s%.*s", prefix[k], (int)(HP_NAME_LEN - 1 - strlen(prefix[k])), g->vals[v].name);
            c->e[c->ne++] = (entry){strdup(nm), v, -1, 1, c->e[i].part, g->vals[v].shape, 0};
        }
    }
    for (int i = 0; i < c->ne; i++)
        if (!c->e[i].name) return hp_errorf("checkpoint: out of memory");
    return HP_OK;
}

/* The entry list: parameters in graph order, then optimizer states grouped by
 * parameter in the same order, each parameter's in the order the optimizer
 * phase made them (m, then v): the single-process files' order. States are
 * found by the parameter they belong to (state_of), in rank 0's local graph. */
static hp_status list_entries(hp_dist_ckpt *c) {
    const hp_graph *g = c->g;
    const hp_rank_graph *rg = &hp_dist_rank_at(c->d, 0)->c.rg;
    const hp_graph *lg = rg->g;
    int np = hp_graph_params(g, NULL, 0), ns = 0, ns_all = 0;
    for (int v = 0; v < lg->nvals; v++) ns += lg->vals[v].kind == HP_V_STATE;
    for (int li = 0; li < c->nh; li++) {
        const hp_graph *l = hp_dist_rank_at(c->d, li)->c.rg.g;
        for (int v = 0; v < l->nvals; v++) ns_all += l->vals[v].kind == HP_V_STATE;
    }
    int *ids = malloc(sizeof(int) * (size_t)(np + 1));
    c->e = calloc((size_t)(np + (c->parts || c->partial ? ns_all + 2 * np : ns) + 1), sizeof *c->e);
    if (!ids || !c->e) {
        free(ids);
        return hp_errorf("checkpoint: out of memory");
    }
    hp_graph_params(g, ids, np);
    for (int i = 0; i < np; i++) {
        const hp_value *v = &g->vals[ids[i]];
        c->e[c->ne++] = (entry){strdup(v->name), ids[i], -1, 0, c->parts && held_in_parts(c, i), v->shape, 0};
    }
    c->np = c->ne;
    if (c->parts || c->partial) { /* states named from whichever hosted rank holds them */
        free(ids);
        return list_part_states(c);
    }
    for (int i = 0; i < np; i++) {
        int lp = rg->map[ids[i]];
        for (int v = 0; v < lg->nvals; v++)
            if (lg->vals[v].kind == HP_V_STATE && lg->vals[v].state_of == lp)
                c->e[c->ne++] = (entry){strdup(lg->vals[v].name), ids[i], v, 1, 0, g->vals[ids[i]].shape, 0};
    }
    hp_status st = c->ne == np + ns ? HP_OK
                                    : hp_errorf("checkpoint: %d optimizer states belong to no parameter", np + ns - c->ne);
    for (int i = 0; i < c->ne && !st; i++)
        if (!c->e[i].name) st = hp_errorf("checkpoint: out of memory");
    free(ids);
    return st;
}

/* Where each entry lives in every hosted rank (checked against its piece). */
static hp_status find_local(hp_dist_ckpt *c) {
    for (int li = 0; li < c->nh; li++) {
        hp_dist_rank *r = hp_dist_rank_at(c->d, li);
        const hp_graph *lg = r->c.rg.g;
        for (int i = 0; i < c->ne; i++) {
            const entry *e = &c->e[i];
            piece p;
            piece_of(&p, c, e, r->rank);
            int k = -1;
            hp_shape have = {0};
            if (!e->is_state) {
                k = hp_param_store_find(&r->ps, e->name);
                if (k >= 0) have = r->ps.shape[k];
            } else if (e->ls >= 0 && e->ls < lg->nvals && lg->vals[e->ls].kind == HP_V_STATE &&
                       lg->vals[e->ls].state_of == r->c.rg.map[e->v]) {
                k = e->ls;
                have = lg->vals[k].shape;
            } else if (e->ls < 0) { /* FSDP: by name; a rank whose shards miss the parameter has none */
                for (int v = 0; v < lg->nvals && k < 0; v++)
                    if (lg->vals[v].kind == HP_V_STATE && lg->vals[v].state_of == r->c.rg.map[e->v] &&
                        !strcmp(lg->vals[v].name, e->name))
                        k = v, have = lg->vals[v].shape;
            }
            if (e->is_state && e->part) { /* the state holds the rank's part of the piece, flat */
                hp_holding part[2];
                int64_t n = held_of(part, c, e, r->rank) ? hp_holding_numel(&part[0]) : 0;
                p.shape = hp_shape1(n);
                if (k < 0 && n == 0) k = -2; /* nothing to hold */
            }
            hp_holding none[2];
            if (k == -1 && c->partial && !held_of(none, c, e, r->rank)) k = -2; /* the table gives it none */
            if (k == -1) return hp_errorf("checkpoint: rank %d has no tensor '%s'", r->rank, e->name);
            if (k >= 0 && !same_shape(&have, &p.shape))
                return hp_errorf("checkpoint: rank %d's piece of '%s' does not have its layout's shape", r->rank,
                                 e->name);
            c->lk[(size_t)i * (size_t)c->nh + (size_t)li] = k;
        }
    }
    return HP_OK;
}

/* One owner per distinct piece, preferring ranks of rank 0's process; the
 * owned pieces must tile the tensor. */
static hp_status assign_owners(hp_dist_ckpt *c) {
    piece *seen = malloc(sizeof *seen * (size_t)c->world);
    if (!seen) return hp_errorf("checkpoint: out of memory");
    hp_status st = HP_OK;
    for (int i = 0; i < c->ne && !st; i++) {
        entry *e = &c->e[i];
        unsigned char *own = c->own + (size_t)i * (size_t)c->world;
        int nseen = 0;
        int64_t covered = 0, numel = hp_shape_numel(&e->shape);
        for (int pass = 0; pass < 2; pass++)
            for (int q = 0; q < c->world; q++) {
                if (is_lead_host(c, q) != (pass == 0)) continue;
                hp_holding none[2];
                if (c->partial && !held_of(none, c, e, q)) continue; /* rank q holds nothing of it */
                piece p;
                piece_of(&p, c, e, q);
                int64_t n = hp_shape_numel(&p.shape);
                int dup = 0;
                for (int s = 0; s < nseen && !dup; s++) dup = same_piece(&seen[s], &p);
                if (n == 0 || dup) continue;
                seen[nseen++] = p;
                own[q] = 1;
                covered += n;
                if (pass == 1) {
                    c->remote = 1;
                    if (n > c->stage_floats) c->stage_floats = n;
                }
            }
        if (covered != numel)
            st = hp_errorf("checkpoint: the pieces of '%s' do not tile it (%lld distinct elements of %lld)", e->name,
                           (long long)covered, (long long)numel);
        size_t *total = e->is_state ? &c->state_floats : &c->model_floats;
        e->off = *total;
        *total += (size_t)numel;
    }
    free(seen);
    return st;
}

hp_status hp_dist_ckpt_create(hp_dist_ckpt **out, hp_dist *d) {
    *out = NULL;
    hp_dist_ckpt *c = calloc(1, sizeof *c);
    if (!c) return hp_errorf("checkpoint: out of memory");
    c->d = d, c->g = hp_dist_global(d), c->w = hp_dist_world(d);
    c->nh = hp_dist_nranks(d);
    c->world = hp_comm_world_size(c->w);
    c->multiproc = hp_comm_uses_mpi(c->w) && hp_comm_supernodes(c->w) > 1;
    c->lead = hp_comm_world_rank(c->w, 0) != NULL;
    if (c->nh > 0) c->parts = hp_dist_rank_at(d, 0)->c.hold.store.parts;
    if (c->nh > 0) c->partial = hp_dist_rank_at(d, 0)->c.hold.partial;
    hp_status st = c->nh > 0 ? list_entries(c) : hp_errorf("checkpoint: this process hosts no rank");
    if (!st) {
        c->lk = calloc((size_t)c->ne * (size_t)c->nh + 1, sizeof *c->lk);
        c->own = calloc((size_t)c->ne * (size_t)c->world + 1, 1);
        c->nt = calloc((size_t)c->ne + 1, sizeof *c->nt);
        if (!c->lk || !c->own || !c->nt) st = hp_errorf("checkpoint: out of memory");
    }
    if (!st) st = find_local(c);
    if (!st) st = assign_owners(c);
    if (st) {
        hp_dist_ckpt_destroy(c);
        return st;
    }
    *out = c;
    return HP_OK;
}

void hp_dist_ckpt_destroy(hp_dist_ckpt *c) {
    if (!c) return;
    for (int i = 0; i < c->ne; i++) free(c->e[i].name);
    free(c->e);
    free(c->lk), free(c->own), free(c->nt);
    free(c->whole_model), free(c->whole_state), free(c->stage);
    hp_ckpt_pieces_destroy(c->pieces);
    free(c);
}

void hp_dist_ckpt_set_format(hp_dist_ckpt *c, hp_ckpt_format format, hp_ckpt_fault fault) {
    c->format = format, c->fault = fault;
}

/* Rank q's pieces of entry i as the compile's table says (hosted ranks: at
 * their buffers): for saving the parts it keeps current, for loading the
 * parts a load fills; a box whole, or a flat part of it (FSDP's shards) as a
 * flat range of the tensor or, inside a tensor-parallel box, as the boxes of
 * that range. Returns how many. */
static int pieces_of(hp_ckpt_held *out, const hp_dist_ckpt *c, int i, int q, int li, int for_save) {
    const entry *e = &c->e[i];
    hp_holding held[2];
    int nh = held_of(held, c, e, q), n = 0;
    float *data = li >= 0 ? local_ptr(c, i, li) : NULL;
    for (int j = 0; j < nh; j++) {
        const hp_holding *p = &held[j];
        if (!(for_save ? p->current : p->loaded)) continue;
        hp_region box = hp_region_box(p->start, &p->box);
        if (!p->part) {
            out[n++] = (hp_ckpt_held){e->name, box, data};
            continue;
        }
        float *at = data && !e->is_state ? data + p->lo : data; /* a state holds just [lo, hi) */
        if (hp_shape_eq(&p->box, &e->shape)) {
            out[n++] = (hp_ckpt_held){e->name, hp_region_flat(p->lo, p->hi), at};
            continue;
        }
        hp_region parts[2 * HP_MAX_DIMS];
        int np = hp_region_flat_boxes(parts, &box, p->lo, p->hi, &e->shape);
        for (int k = 0; k < np; k++) {
            out[n++] = (hp_ckpt_held){e->name, parts[k], at};
            if (at) at += hp_region_numel(&parts[k], &e->shape);
        }
    }
    return n;
}

int hp_dist_ckpt_param_pieces(hp_ckpt_held *out, int *index, hp_shape *shape, const hp_dist_ckpt *c,
                              const char *name, int q, int for_save) {
    return hp_dist_ckpt_tensor_pieces(out, index, shape, c, name, q, for_save, 0);
}

int hp_dist_ckpt_tensor_pieces(hp_ckpt_held *out, int *index, hp_shape *shape, const hp_dist_ckpt *c,
                               const char *name, int q, int for_save, int states) {
    int i = 0, n = states ? c->ne : c->np;
    while (i < n && strcmp(c->e[i].name, name)) i++;
    if (i == n) return -1;
    int li = -1;
    for (int k = 0; k < c->nh; k++)
        if (hp_dist_rank_at(c->d, k)->rank == q) li = k;
    *index = i;
    *shape = c->e[i].shape;
    return pieces_of(out, c, i, q, li, for_save);
}

/* The sharded format's view of every rank: what it writes from and what it
 * loads into (runtime/ckpt_pieces). */
static hp_status make_pieces(hp_dist_ckpt *c) {
    if (c->pieces) return HP_OK;
    size_t per = (size_t)c->ne * 2 * HP_MAX_DIMS;
    hp_ckpt_tensor_desc *t = calloc((size_t)c->ne + 1, sizeof *t);
    hp_ckpt_held *held = calloc(per * (size_t)c->world * 2 + 1, sizeof *held);
    hp_ckpt_rank_pieces *rp = calloc((size_t)c->world * 2, sizeof *rp);
    hp_status st = t && held && rp ? HP_OK : hp_errorf("checkpoint: out of memory");
    for (int i = 0; i < c->ne && !st; i++)
        t[i] = (hp_ckpt_tensor_desc){c->e[i].name, c->e[i].is_state ? HP_CKPT_GROUP_OPTIM : HP_CKPT_GROUP_MODEL,
                                     HP_F32, c->e[i].shape};
    for (int q = 0; q < c->world && !st; q++) {
        int li = -1;
        for (int k = 0; k < c->nh; k++)
            if (hp_dist_rank_at(c->d, k)->rank == q) li = k;
        for (int s = 0; s < 2; s++) { /* 0: save, 1: load */
            hp_ckpt_held *h = held + ((size_t)q * 2 + (size_t)s) * per;
            int n = 0;
            for (int i = 0; i < c->ne; i++) n += pieces_of(h + n, c, i, q, li, s == 0);
            rp[(size_t)s * (size_t)c->world + (size_t)q] = (hp_ckpt_rank_pieces){n, h};
        }
    }
    if (!st) st = hp_ckpt_pieces_create(&c->pieces, c->d, t, c->ne, rp, rp + c->world);
    free(t), free(held), free(rp);
    return st;
}

/* Per rank: deliver the owned pieces; rank 0 also receives the remote ones. */
static hp_status save_rank(hp_dist_rank *r, void *c_) {
    hp_dist_ckpt *c = c_;
    hp_comm_group *wg = hp_comm_world_group(c->w);
    hp_comm_rank *cr = r->c.rg.ctx.comm;
    int in_lead = is_lead_host(c, r->rank);
    for (int i = 0; i < c->ne; i++) {
        const entry *e = &c->e[i];
        if (!c->own[(size_t)i * (size_t)c->world + (size_t)r->rank]) continue;
        float *src = local_ptr(c, i, r->local_index);
        if (in_lead) {
            hp_dist_insert_value(c->d, r, e->v, whole_ptr(c, e), src);
        } else {
            piece p;
            piece_of(&p, c, e, r->rank);
            HP_TRY(hp_comm_send(cr, wg, src, hp_shape_numel(&p.shape), HP_F32, hp_comm_group_index(wg, 0)));
        }
    }
    if (r->rank != 0 || !c->remote) return HP_OK;
    for (int i = 0; i < c->ne; i++) {
        const entry *e = &c->e[i];
        for (int q = 0; q < c->world; q++) {
            if (!c->own[(size_t)i * (size_t)c->world + (size_t)q] || is_lead_host(c, q)) continue;
            piece p;
            piece_of(&p, c, e, q);
            HP_TRY(hp_comm_recv(cr, wg, c->stage, hp_shape_numel(&p.shape), HP_F32, hp_comm_group_index(wg, q)));
            hp_piece_insert(whole_ptr(c, e), c->stage, sizeof(float), &e->shape, &p.shape, p.off);
        }
    }
    return HP_OK;
}

/* Every process learns whether any process failed (one vote per process). */
static hp_status agree_rank(hp_dist_rank *r, void *c_) {
    hp_dist_ckpt *c = c_;
    float mine = r->local_index == 0 && c->failed ? 1.0f : 0.0f, total = 0;
    HP_TRY(hp_comm_all_reduce(r->c.rg.ctx.comm, hp_comm_world_group(c->w), &total, &mine, 1, HP_F32, HP_COMM_SUM));
    if (total > 0 && !c->failed) return hp_errorf("checkpoint %s: another process failed to save it", c->dir);
    return HP_OK;
}

/* Under mpirun: this process's status st, or an error when another failed. */
static hp_status agree(hp_dist_ckpt *c, hp_status st, const char *dir) {
    if (!c->multiproc) return st;
    c->failed = st != HP_OK;
    c->dir = dir;
    hp_status agreed = hp_dist_run(c->d, agree_rank, c);
    if (st) {
        hp_status_free(agreed);
        return st;
    }
    return agreed;
}

static hp_status alloc_whole(hp_dist_ckpt *c, const char *dir) {
    if (c->whole_model) return HP_OK;
    c->whole_model = malloc(sizeof(float) * (c->model_floats + 1));
    c->whole_state = malloc(sizeof(float) * (c->state_floats + 1));
    c->stage = malloc(sizeof(float) * (size_t)(c->stage_floats + 1));
    if (!c->whole_model || !c->whole_state || !c->stage) {
        free(c->whole_model), free(c->whole_state), free(c->stage);
        c->whole_model = c->whole_state = c->stage = NULL;
        return hp_errorf("checkpoint %s: cannot allocate %zu MB for the whole tensors", dir,
                         (c->model_floats + c->state_floats) * sizeof(float) >> 20);
    }
    return HP_OK;
}

/* With keep_last > 0, rank 0's process deletes the run dir's step_* of lineage lin beyond the keep_last newest. */
static hp_status retain(const hp_dist_ckpt *c, const char *dir, int keep_last, const hp_ckpt_lineage *lin) {
    if (!c->lead || keep_last <= 0) return HP_OK;
    char *run_dir = hp_fs_dirname(dir);
    if (!run_dir) return hp_errorf("%s: out of memory", dir);
    int removed;
    hp_status st = hp_ckpt_retain(&removed, run_dir, keep_last, lin);
    free(run_dir);
    return st;
}

/* Flat parts (FSDP) in the single format: no rank holds its parameters current
 * beyond its parts, so every rank writes its pieces (the sharded format, beside dir as
 * dir.tmp-pieces: a stage's name, so what a crash leaves is removed by
 * recovery), and rank 0's process makes them whole (io/ckpt_convert) and
 * drops them. */
static hp_status save_parts_single(hp_dist_ckpt *c, const char *dir, const char *state_json) {
    size_t n = strlen(dir);
    char *pieces = malloc(n + 16);
    if (!pieces) return hp_errorf("checkpoint: out of memory");
    snprintf(pieces, n + 16, "%s.tmp-pieces", dir);
    hp_status st = hp_ckpt_pieces_save(c->pieces, pieces, state_json, 0, c->fault);
    if (!st && c->lead) {
        hp_ckpt ck;
        st = hp_ckpt_open(&ck, pieces);
        if (!st) {
            st = hp_ckpt_convert_dir(dir, &ck, 0);
            hp_ckpt_close(&ck);
        }
        hp_status r = hp_fs_remove_tree(pieces);
        if (!st) st = r;
        else hp_status_free(r);
        if (!st) st = hp_ckpt_set_latest(dir);
    }
    free(pieces);
    return st;
}

hp_status hp_dist_ckpt_save(hp_dist_ckpt *c, const char *dir, const char *state_json, int keep_last,
                            const hp_ckpt_lineage *lin) {
    if (c->format == HP_CKPT_SHARDED || c->parts) {
        HP_TRY(agree(c, make_pieces(c), dir));
        hp_status st = c->format == HP_CKPT_SHARDED ? hp_ckpt_pieces_save(c->pieces, dir, state_json, 1, c->fault)
                                                    : save_parts_single(c, dir, state_json);
        if (!st) st = retain(c, dir, keep_last, lin);
        return agree(c, st, dir);
    }
    /* every process learns of a failure before anyone waits on the failed one */
    HP_TRY(agree(c, c->lead ? alloc_whole(c, dir) : HP_OK, dir));
    hp_status st = hp_dist_run(c->d, save_rank, c);
    if (!st && c->lead) {
        for (int i = 0; i < c->ne; i++)
            c->nt[i] = (hp_named_tensor){c->e[i].name, HP_F32, c->e[i].shape, whole_ptr(c, &c->e[i])};
        st = hp_ckpt_save(dir, c->nt, c->np, c->nt + c->np, c->ne - c->np, state_json);
        if (!st) st = hp_ckpt_set_latest(dir); /* the save is committed */
        if (!st) st = retain(c, dir, keep_last, lin);
    }
    return agree(c, st, dir);
}

hp_status hp_dist_ckpt_load(hp_dist_ckpt *c, const hp_ckpt *ck, int with_state) {
    if (ck->shards || c->parts) {
        HP_TRY(make_pieces(c));
        return hp_ckpt_pieces_load(c->pieces, ck, with_state);
    }
    int64_t most = 1;
    for (int i = 0; i < c->ne; i++)
        if (hp_shape_numel(&c->e[i].shape) > most) most = hp_shape_numel(&c->e[i].shape);
    float *buf = malloc(sizeof(float) * (size_t)most);
    if (!buf) return hp_errorf("checkpoint: out of memory");
    hp_status st = HP_OK;
    for (int i = 0; i < c->ne && !st; i++) {
        const entry *e = &c->e[i];
        if (e->is_state && !with_state) continue;
        st = hp_safetensors_read_into(e->is_state ? ck->optim : ck->model, e->name, HP_F32, &e->shape, buf);
        for (int li = 0; li < c->nh && !st; li++) {
            float *dst = local_ptr(c, i, li); /* NULL: the rank holds none of it (another pipeline stage's) */
            if (dst) hp_dist_scatter_value(c->d, hp_dist_rank_at(c->d, li), e->v, dst, buf);
        }
    }
    free(buf);
    return st;
}
