#include "io/ckpt_convert.h"

#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"

/* One tensor of the source and, once read, its whole data. */
typedef struct {
    const char *name;
    hp_ckpt_group group;
    hp_dtype dtype;
    hp_shape shape;
    const void *data; /* whole; mapped (single format) or `own` */
    void *own;
} tensor;

static hp_status list_single(tensor *ts, int *n, const hp_safetensors *f, hp_ckpt_group g) {
    for (int i = 0; i < hp_safetensors_count(f); i++) {
        const hp_safetensors_entry *e = hp_safetensors_entry_at(f, i);
        if (!e->has_dtype)
            return hp_errorf("%s: tensor '%s': dtype %s cannot be converted", hp_safetensors_path(f), e->name,
                             e->dtype_name);
        HP_TRY(hp_safetensors_verify(f, e)); /* its bytes are used as mapped: checked first */
        ts[(*n)++] = (tensor){e->name, g, e->dtype, e->shape, e->data, NULL};
    }
    return HP_OK;
}

static hp_status list_tensors(tensor **out, int *n, const hp_ckpt *ck) {
    *n = 0;
    int most = ck->shards ? hp_ckpt_shards_index(ck->shards)->ntensors
                          : hp_safetensors_count(ck->model) + hp_safetensors_count(ck->optim);
    tensor *ts = *out = calloc((size_t)most + 1, sizeof *ts);
    if (!ts) return hp_errorf("checkpoint conversion: out of memory");
    if (!ck->shards) {
        HP_TRY(list_single(ts, n, ck->model, HP_CKPT_GROUP_MODEL));
        return list_single(ts, n, ck->optim, HP_CKPT_GROUP_OPTIM);
    }
    const hp_ckpt_index *ix = hp_ckpt_shards_index(ck->shards);
    for (int i = 0; i < ix->ntensors; i++) {
        const hp_ckpt_index_tensor *t = &ix->tensors[i];
        size_t nb = (size_t)hp_shape_numel(&t->shape) * hp_dtype_size(t->dtype);
        void *buf = malloc(nb + 1);
        if (!buf) return hp_errorf("checkpoint conversion: out of memory for '%s'", t->name);
        ts[(*n)++] = (tensor){t->name, t->group, t->dtype, t->shape, buf, buf};
        HP_TRY(hp_ckpt_read(ck, t->group, t->name, t->dtype, &t->shape, buf));
    }
    return HP_OK;
}

static hp_status write_single(const char *dst, const tensor *ts, int n, const char *state) {
    hp_named_tensor *nt = calloc((size_t)n + 1, sizeof *nt);
    if (!nt) return hp_errorf("checkpoint conversion: out of memory");
    int nw = 0;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < n; i++)
            if ((int)ts[i].group == g) nt[nw++] = (hp_named_tensor){ts[i].name, ts[i].dtype, ts[i].shape, ts[i].data};
    int nmodel = 0;
    for (int i = 0; i < n; i++) nmodel += ts[i].group == HP_CKPT_GROUP_MODEL;
    hp_status st = hp_ckpt_save(dst, nt, nmodel, nt + nmodel, n - nmodel, state);
    free(nt);
    return st;
}

static hp_status fill_sharded(const char *tmp, const char *dst, hp_ckpt_index *ix, const tensor *ts, int n,
                              const char *state, int64_t step) {
    hp_ckpt_held *held = calloc((size_t)n + 1, sizeof *held);
    if (!held || hp_ckpt_index_add_file(ix, "rank0.bin") < 0) {
        free(held);
        return hp_errorf("checkpoint conversion: out of memory");
    }
    ix->files[0].step = step;
    hp_status st = HP_OK;
    for (int i = 0; i < n && !st; i++) {
        hp_region whole = hp_region_whole(&ts[i].shape);
        int t = hp_ckpt_index_add_tensor(ix, ts[i].name, ts[i].group, ts[i].dtype, &ts[i].shape);
        if (t < 0 || hp_ckpt_index_add_piece(ix, t, 0, &whole) < 0) st = hp_errorf("checkpoint conversion: out of memory");
        held[i] = (hp_ckpt_held){ts[i].name, whole, (void *)ts[i].data};
    }
    if (!st) st = hp_ckpt_shard_write(tmp, ix, 0, held, n);
    free(held);
    char *path = hp_fs_join(tmp, HP_CKPT_INDEX);
    if (!st) st = hp_ckpt_index_write(ix, path);
    free(path);
    if (!st) st = hp_ckpt_state_write(tmp, dst, state); /* last: io/ckpt_dir's commit file */
    return st;
}

static hp_status write_sharded(const char *dst, const tensor *ts, int n, const char *state, int64_t step) {
    hp_ckpt_stage s;
    HP_TRY(hp_ckpt_stage_begin(&s, dst));
    hp_ckpt_index ix;
    hp_ckpt_index_init(&ix);
    hp_status st = fill_sharded(s.tmp, dst, &ix, ts, n, state, step);
    hp_ckpt_index_free(&ix);
    if (st) hp_ckpt_stage_abort(&s);
    else st = hp_ckpt_stage_commit(&s);
    return st;
}

hp_status hp_ckpt_convert_dir(const char *dst, const hp_ckpt *ck, int sharded) {
    tensor *ts = NULL;
    int n = 0;
    hp_status st = list_tensors(&ts, &n, ck);
    const hp_json *step = hp_json_get(ck->state, "step"); /* the data file's, as a save records it */
    int64_t s = step && step->type == HP_JSON_NUMBER && step->is_int ? step->ival : 0;
    if (!st) st = sharded ? write_sharded(dst, ts, n, ck->state_text, s) : write_single(dst, ts, n, ck->state_text);
    for (int i = 0; i < n; i++) free(ts[i].own);
    free(ts);
    return st;
}
