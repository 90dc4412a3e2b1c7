#include "runtime/ckpt_pieces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"

enum { NAME_MAX_BYTES = 4096 }; /* the temporary directory's name and (last 8 bytes) the step, as broadcast */

struct hp_ckpt_pieces {
    hp_dist *d;
    hp_comm_world *w;
    int world, nh, multiproc, lead;
    int nt;
    hp_ckpt_tensor_desc *t;    /* names owned */
    hp_ckpt_held **held;       /* [world][nheld[q]]: saved from (names point into t) */
    int *nheld;                /* [world] */
    hp_ckpt_held **lheld;      /* [world][nlheld[q]]: loaded into */
    int *nlheld;               /* [world] */
    int *file_of;              /* [world]: its file in the index, or -1 */
    hp_ckpt_index ix;
    /* one save or load */
    hp_ckpt_stage stage;       /* the lead process's, while a save runs */
    int staged;
    char *tmp;                 /* the stage's directory (every process) */
    char (*names)[NAME_MAX_BYTES]; /* [nh]: broadcast buffers */
    int xk;                    /* under mpirun: words per rank of the checksum exchange (1 + most pieces in a file) */
    uint32_t *xsend, *xrecv;   /* [nh][xk], [nh][world * xk] */
    int64_t step;              /* of the save being written */
    int failed;
    const char *dir;
    const hp_ckpt *src;
    int with_state;
};

void hp_ckpt_pieces_destroy(hp_ckpt_pieces *p) {
    if (!p) return;
    for (int i = 0; p->t && i < p->nt; i++) free((char *)p->t[i].name);
    for (int q = 0; p->held && q < p->world; q++) free(p->held[q]);
    for (int q = 0; p->lheld && q < p->world; q++) free(p->lheld[q]);
    free(p->lheld), free(p->nlheld);
    free(p->t), free(p->held), free(p->nheld), free(p->file_of), free(p->names), free(p->tmp);
    free(p->xsend), free(p->xrecv);
    hp_ckpt_index_free(&p->ix);
    free(p);
}

const hp_ckpt_index *hp_ckpt_pieces_index(const hp_ckpt_pieces *p) { return &p->ix; }

static int tensor_of(const hp_ckpt_pieces *p, const char *name) {
    for (int i = 0; i < p->nt; i++)
        if (!strcmp(p->t[i].name, name)) return i;
    return -1;
}

/* The index: tensor by tensor, rank by rank, each region not held by an
 * earlier rank (or earlier in the same rank's list) goes into the rank's file. */
static hp_status build_index(hp_ckpt_pieces *p) {
    hp_ckpt_index *ix = &p->ix;
    for (int q = 0; q < p->world; q++) p->file_of[q] = -1;
    for (int i = 0; i < p->nt; i++) {
        const hp_ckpt_tensor_desc *t = &p->t[i];
        if (hp_ckpt_index_add_tensor(ix, t->name, t->group, t->dtype, &t->shape) < 0)
            return hp_errorf("checkpoint: out of memory");
        for (int q = 0; q < p->world; q++)
            for (int k = 0; k < p->nheld[q]; k++) {
                const hp_ckpt_held *h = &p->held[q][k];
                if (h->name != t->name || hp_region_numel(&h->region, &t->shape) == 0) continue;
                int dup = 0;
                const hp_ckpt_index_tensor *it = &ix->tensors[i];
                for (int a = 0; a < it->count && !dup; a++)
                    dup = hp_region_eq(&ix->pieces[it->first + a].region, &h->region, &t->shape);
                if (dup) continue;
                if (p->file_of[q] < 0) {
                    char name[32];
                    snprintf(name, sizeof name, "rank%d.bin", q);
                    p->file_of[q] = hp_ckpt_index_add_file(ix, name);
                    if (p->file_of[q] < 0) return hp_errorf("checkpoint: out of memory");
                }
                if (hp_ckpt_index_add_piece(ix, i, p->file_of[q], &h->region) < 0)
                    return hp_errorf("checkpoint: out of memory");
            }
    }
    /* the pieces must tile every tensor */
    return hp_ckpt_index_check(ix, "checkpoint pieces");
}

/* Copies ranks[0..world) into held/nheld, names pointing into p->t. */
static hp_status copy_lists(hp_ckpt_pieces *p, hp_ckpt_held ***held, int **nheld, const hp_ckpt_rank_pieces *ranks) {
    *held = calloc((size_t)p->world, sizeof **held);
    *nheld = calloc((size_t)p->world, sizeof **nheld);
    if (!*held || !*nheld) return hp_errorf("checkpoint: out of memory");
    for (int q = 0; q < p->world; q++) {
        (*held)[q] = calloc((size_t)ranks[q].n + 1, sizeof ***held);
        if (!(*held)[q]) return hp_errorf("checkpoint: out of memory");
        (*nheld)[q] = ranks[q].n;
        for (int k = 0; k < ranks[q].n; k++) {
            int ti = tensor_of(p, ranks[q].held[k].name);
            if (ti < 0) return hp_errorf("checkpoint: rank %d holds a piece of unknown tensor '%s'", q, ranks[q].held[k].name);
            (*held)[q][k] = ranks[q].held[k];
            (*held)[q][k].name = p->t[ti].name;
        }
    }
    return HP_OK;
}

hp_status hp_ckpt_pieces_create(hp_ckpt_pieces **out, hp_dist *d, const hp_ckpt_tensor_desc *t, int nt,
                                const hp_ckpt_rank_pieces *save, const hp_ckpt_rank_pieces *load) {
    *out = NULL;
    hp_ckpt_pieces *p = calloc(1, sizeof *p);
    if (!p) return hp_errorf("checkpoint: out of memory");
    p->d = d, p->w = hp_dist_world(d);
    p->world = hp_comm_world_size(p->w);
    p->nh = hp_dist_nranks(d);
    p->multiproc = hp_comm_uses_mpi(p->w) && hp_comm_supernodes(p->w) > 1;
    p->lead = hp_dist_lead(d);
    p->nt = nt;
    hp_ckpt_index_init(&p->ix);
    p->t = calloc((size_t)nt + 1, sizeof *p->t);
    p->file_of = calloc((size_t)p->world, sizeof *p->file_of);
    p->names = calloc((size_t)p->nh + 1, sizeof *p->names);
    hp_status st = p->t && p->file_of && p->names ? HP_OK : hp_errorf("checkpoint: out of memory");
    for (int i = 0; i < nt && !st; i++) {
        p->t[i] = t[i];
        p->t[i].name = strdup(t[i].name);
        if (!p->t[i].name) st = hp_errorf("checkpoint: out of memory");
    }
    if (!st) st = copy_lists(p, &p->held, &p->nheld, save);
    if (!st) st = copy_lists(p, &p->lheld, &p->nlheld, load ? load : save);
    if (!st) st = build_index(p);
    if (!st && p->multiproc) { /* the checksums of other processes' files reach the lead through an all-gather */
        int *per = calloc((size_t)p->ix.nfiles + 1, sizeof *per);
        if (!per) st = hp_errorf("checkpoint: out of memory");
        for (int k = 0; per && k < p->ix.npieces; k++) per[p->ix.pieces[k].file]++;
        p->xk = 1;
        for (int f = 0; per && f < p->ix.nfiles; f++)
            if (per[f] + 1 > p->xk) p->xk = per[f] + 1;
        free(per);
        p->xsend = calloc((size_t)p->nh * (size_t)p->xk + 1, sizeof *p->xsend);
        p->xrecv = calloc((size_t)p->nh * (size_t)p->world * (size_t)p->xk + 1, sizeof *p->xrecv);
        if (!st && (!p->xsend || !p->xrecv)) st = hp_errorf("checkpoint: out of memory");
    }
    if (st) {
        hp_ckpt_pieces_destroy(p);
        return st;
    }
    *out = p;
    return HP_OK;
}

/* ---- agreement between processes ---- */

static hp_status vote_rank(hp_dist_rank *r, void *p_) {
    hp_ckpt_pieces *p = p_;
    float mine = r->local_index == 0 && p->failed ? 1.0f : 0.0f, total = 0;
    HP_TRY(hp_comm_all_reduce(r->c.rg.ctx.comm, hp_comm_world_group(p->w), &total, &mine, 1, HP_F32, HP_COMM_SUM));
    if (total > 0 && !p->failed) return hp_errorf("checkpoint %s: another process failed to save it", p->dir);
    return HP_OK;
}

/* Under mpirun: this process's status st, or an error when another failed. */
static hp_status agree(hp_ckpt_pieces *p, hp_status st) {
    if (!p->multiproc) return st;
    p->failed = st != HP_OK;
    hp_status agreed = hp_dist_run(p->d, vote_rank, p);
    if (st) {
        hp_status_free(agreed);
        return st;
    }
    return agreed;
}

/* The temporary directory's name from rank 0 to every rank. */
static hp_status name_rank(hp_dist_rank *r, void *p_) {
    hp_ckpt_pieces *p = p_;
    char *buf = p->names[r->local_index];
    if (r->rank == 0) {
        snprintf(buf, NAME_MAX_BYTES - 8, "%s", p->tmp);
        memcpy(buf + NAME_MAX_BYTES - 8, &p->step, 8);
    }
    hp_comm_group *wg = hp_comm_world_group(p->w);
    /* the bytes travel as f32 words (a broadcast copies them as they are) */
    return hp_comm_broadcast(r->c.rg.ctx.comm, wg, buf, NAME_MAX_BYTES / 4, HP_F32, hp_comm_group_index(wg, 0));
}

static hp_status share_tmp(hp_ckpt_pieces *p) {
    if (!p->multiproc) return HP_OK;
    HP_TRY(hp_dist_run(p->d, name_rank, p));
    if (!p->lead) {
        free(p->tmp);
        p->tmp = strdup(p->names[0]);
        memcpy(&p->step, p->names[0] + NAME_MAX_BYTES - 8, 8);
        if (!p->tmp) return hp_errorf("checkpoint %s: out of memory", p->dir);
    }
    return HP_OK;
}

/* Every rank's file and piece checksums to every process (the lead writes
 * them into pieces.json): words [crc of its file, crc of each of its pieces
 * in index order], xk per rank (the words travel as f32, copied as they are). */
static hp_status crc_rank(hp_dist_rank *r, void *p_) {
    hp_ckpt_pieces *p = p_;
    uint32_t *mine = p->xsend + (size_t)r->local_index * (size_t)p->xk;
    memset(mine, 0, sizeof *mine * (size_t)p->xk);
    int f = p->file_of[r->rank], k = 1;
    if (f >= 0) {
        mine[0] = p->ix.files[f].crc;
        for (int q = 0; q < p->ix.npieces; q++)
            if (p->ix.pieces[q].file == f) mine[k++] = p->ix.pieces[q].crc;
    }
    hp_comm_group *wg = hp_comm_world_group(p->w);
    return hp_comm_all_gather(r->c.rg.ctx.comm, wg, p->xrecv + (size_t)r->local_index * (size_t)p->world * (size_t)p->xk,
                              mine, p->xk, NULL, HP_F32);
}

static hp_status share_crcs(hp_ckpt_pieces *p) {
    if (!p->multiproc) return HP_OK; /* the ranks of one process wrote theirs into the shared index */
    HP_TRY(hp_dist_run(p->d, crc_rank, p));
    hp_comm_group *wg = hp_comm_world_group(p->w);
    for (int q = 0; q < p->world; q++) {
        int f = p->file_of[q], k = 1;
        if (f < 0) continue;
        const uint32_t *in = p->xrecv + (size_t)hp_comm_group_index(wg, q) * (size_t)p->xk;
        p->ix.files[f].crc = in[0];
        p->ix.files[f].has_crc = 1;
        for (int x = 0; x < p->ix.npieces; x++)
            if (p->ix.pieces[x].file == f) p->ix.pieces[x].crc = in[k++];
    }
    return HP_OK;
}

/* The save's step: state.json's "step" (0 without one). */
static int64_t step_of(const char *state_json) {
    hp_json *j = NULL;
    int64_t step = 0;
    if (state_json && !hp_json_parse(&j, state_json, strlen(state_json))) {
        const hp_json *v = hp_json_get(j, "step");
        if (v && v->type == HP_JSON_NUMBER && v->is_int) step = v->ival;
    }
    hp_json_free(j);
    return step;
}

/* ---- save ---- */

static hp_status write_rank(hp_dist_rank *r, void *p_) {
    hp_ckpt_pieces *p = p_;
    int f = p->file_of[r->rank];
    if (f < 0) return HP_OK;
    return hp_ckpt_shard_write(p->tmp, &p->ix, f, p->held[r->rank], p->nheld[r->rank]);
}

/* The lead's part after every file is written: pieces.json, then state.json
 * (io/ckpt_dir's commit file), then the commit. */
static hp_status commit(hp_ckpt_pieces *p, const char *dir, const char *state_json, int set_latest,
                        hp_ckpt_fault fault) {
    if (fault == HP_CKPT_FAULT_BEFORE_COMMIT) return hp_errorf("checkpoint %s: stopped before the commit (fault injected)", dir);
    char *path = hp_fs_join(p->tmp, HP_CKPT_INDEX);
    hp_status st = hp_ckpt_index_write(&p->ix, path);
    free(path);
    if (!st) st = hp_ckpt_state_write(p->tmp, dir, state_json ? state_json : "{}");
    if (!st) {
        p->staged = 0;
        st = hp_ckpt_stage_commit(&p->stage); /* removes the stage on error */
    }
    if (!st && set_latest) st = hp_ckpt_set_latest(dir);
    return st;
}

hp_status hp_ckpt_pieces_save(hp_ckpt_pieces *p, const char *dir, const char *state_json, int set_latest,
                              hp_ckpt_fault fault) {
    p->dir = dir;
    free(p->tmp);
    p->tmp = NULL;
    p->step = p->lead ? step_of(state_json) : 0; /* the others learn it with the stage's name */
    hp_status st = HP_OK;
    if (p->lead) {
        st = hp_ckpt_stage_begin(&p->stage, dir);
        p->staged = !st;
        if (!st && !(p->tmp = strdup(p->stage.tmp))) st = hp_errorf("checkpoint %s: out of memory", dir);
    }
    st = agree(p, st);
    if (!st) st = share_tmp(p);
    for (int f = 0; f < p->ix.nfiles; f++) p->ix.files[f].step = p->step, p->ix.files[f].has_crc = 0;
    if (!st) st = agree(p, hp_dist_run(p->d, write_rank, p));
    if (!st) st = agree(p, share_crcs(p));
    if (!st && p->lead) st = commit(p, dir, state_json, set_latest, fault);
    if (p->staged) { /* failed before the commit: the stage goes, unless a crash is being imitated */
        if (fault == HP_CKPT_FAULT_NONE) hp_ckpt_stage_abort(&p->stage);
        else free(p->stage.dir), free(p->stage.tmp), free(p->stage.parent);
        p->staged = 0;
    }
    free(p->tmp);
    p->tmp = NULL;
    return agree(p, st);
}

/* ---- load ---- */

static hp_status load_rank(hp_dist_rank *r, void *p_) {
    hp_ckpt_pieces *p = p_;
    for (int k = 0; k < p->nlheld[r->rank]; k++) {
        const hp_ckpt_held *h = &p->lheld[r->rank][k];
        const hp_ckpt_tensor_desc *t = &p->t[tensor_of(p, h->name)];
        if (t->group == HP_CKPT_GROUP_OPTIM && !p->with_state) continue;
        HP_TRY(hp_ckpt_read_region_deferred(p->src, t->group, h->name, t->dtype, &t->shape, &h->region, h->data));
    }
    return HP_OK;
}

hp_status hp_ckpt_pieces_load(hp_ckpt_pieces *p, const hp_ckpt *ck, int with_state) {
    p->src = ck, p->with_state = with_state;
    hp_status st = hp_dist_run(p->d, load_rank, p);
    hp_status v = hp_ckpt_verify_deferred(ck); /* the ranks' ranges of each tensor checked together */
    if (st)
        hp_status_free(v); /* the ranges are forgotten either way */
    else
        st = v;
    p->src = NULL;
    return st;
}
