#include "io/ckpt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fsutil.h"

#define STATE_MAX_BYTES ((size_t)16 << 20) /* state.json is small: a larger one is not read */

static hp_status check_state_json(const char *dir, const char *state_json) {
    hp_json *j;
    hp_status e = hp_json_parse(&j, state_json, strlen(state_json));
    if (e) return hp_error_wrap(e, "%s/%s: state is not valid JSON", dir, HP_CKPT_STATE);
    if (j->type != HP_JSON_OBJECT)
        e = hp_errorf("%s/%s: state must be a JSON object, got %s", dir, HP_CKPT_STATE, hp_json_type_name(j->type));
    hp_json_free(j);
    return e;
}

static hp_status write_into(const char *tmp, const hp_named_tensor *weights, int nw, const hp_named_tensor *opt,
                            int no, const char *state_json) {
    char *p = hp_fs_join(tmp, HP_CKPT_MODEL);
    hp_status e = hp_safetensors_write(p, weights, nw, NULL);
    free(p);
    if (e) return e;
    p = hp_fs_join(tmp, HP_CKPT_OPTIM);
    e = hp_safetensors_write(p, opt, no, NULL);
    free(p);
    if (e) return e;
    p = hp_fs_join(tmp, HP_CKPT_STATE); /* last: it marks the directory complete (io/ckpt_dir) */
    e = hp_fs_write_atomic(p, state_json, strlen(state_json));
    free(p);
    return e;
}

hp_status hp_ckpt_state_write(const char *tmp, const char *dir, const char *state_json) {
    HP_TRY(check_state_json(dir, state_json));
    char *p = hp_fs_join(tmp, HP_CKPT_STATE);
    hp_status e = hp_fs_write_atomic(p, state_json, strlen(state_json));
    free(p);
    return e;
}

hp_status hp_ckpt_save(const char *dir, const hp_named_tensor *weights, int nw, const hp_named_tensor *opt_state,
                       int no, const char *state_json) {
    if (!dir || !*dir) return hp_errorf("checkpoint: empty directory name");
    HP_TRY(check_state_json(dir, state_json));
    hp_ckpt_stage s;
    HP_TRY(hp_ckpt_stage_begin(&s, dir));
    hp_status e = write_into(s.tmp, weights, nw, opt_state, no, state_json);
    if (e) {
        hp_ckpt_stage_abort(&s);
        return e;
    }
    return hp_ckpt_stage_commit(&s);
}

void hp_ckpt_close(hp_ckpt *ck) {
    hp_safetensors_close(ck->model);
    hp_safetensors_close(ck->optim);
    hp_ckpt_shards_close(ck->shards);
    hp_json_free(ck->state);
    free(ck->state_text);
    memset(ck, 0, sizeof *ck);
}

/* The sharded format: every data file is of state.json's step (when it has
 * one; format 1 records no steps). */
static hp_status check_steps(const hp_ckpt *ck, const char *dir) {
    const hp_ckpt_index *ix = hp_ckpt_shards_index(ck->shards);
    const hp_json *v = hp_json_get(ck->state, "step");
    if (ix->version < 2 || !v || v->type != HP_JSON_NUMBER || !v->is_int) return HP_OK;
    for (int f = 0; f < ix->nfiles; f++)
        if (ix->files[f].step != v->ival)
            return hp_errorf("%s/%s: files[%d] '%s'.step: %lld, but %s says step %lld (files from another checkpoint)",
                             dir, HP_CKPT_INDEX, f, ix->files[f].name, (long long)ix->files[f].step, HP_CKPT_STATE,
                             (long long)v->ival);
    return HP_OK;
}

void hp_ckpt_set_verify(hp_ckpt *ck, int on) {
    if (ck->model) hp_safetensors_set_verify(ck->model, on);
    if (ck->optim) hp_safetensors_set_verify(ck->optim, on);
    if (ck->shards) hp_ckpt_shards_set_verify(ck->shards, on);
}

static hp_status open_ckpt(hp_ckpt *ck, const char *dir, int with_optim) {
    memset(ck, 0, sizeof *ck);
    struct stat sb;
    if (stat(dir, &sb) != 0) return hp_errorf("%s: cannot open checkpoint: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return hp_errorf("%s: not a checkpoint directory", dir);
    char *p = hp_fs_join(dir, HP_CKPT_INDEX);
    int sharded = hp_fs_exists(p);
    free(p);
    p = hp_fs_join(dir, HP_CKPT_MODEL);
    hp_status e = HP_OK;
    if (sharded) {
        e = hp_ckpt_shards_open(&ck->shards, dir);
    } else {
        e = hp_safetensors_open(&ck->model, p);
        if (e && !hp_fs_exists(p)) { /* neither format's files (e.g. a save that never reached its commit) */
            hp_status w = hp_errorf("%s (and no %s: not a complete checkpoint)", hp_status_msg(e), HP_CKPT_INDEX);
            hp_status_free(e);
            e = w;
        }
    }
    free(p);
    if (!e && !sharded && with_optim) {
        p = hp_fs_join(dir, HP_CKPT_OPTIM);
        e = hp_safetensors_open(&ck->optim, p);
        free(p);
    }
    if (!e) {
        p = hp_fs_join(dir, HP_CKPT_STATE);
        size_t n;
        e = hp_fs_read_bounded(&ck->state_text, &n, p, STATE_MAX_BYTES);
        if (!e) {
            e = hp_json_parse(&ck->state, ck->state_text, n);
            if (e)
                e = hp_error_wrap(e, "%s", p);
            else if (ck->state->type != HP_JSON_OBJECT)
                e = hp_errorf("%s: expected a JSON object, got %s", p, hp_json_type_name(ck->state->type));
        }
        free(p);
    }
    if (!e && sharded) e = check_steps(ck, dir);
    if (e) hp_ckpt_close(ck);
    return e;
}

hp_status hp_ckpt_open(hp_ckpt *ck, const char *dir) { return open_ckpt(ck, dir, 1); }
hp_status hp_ckpt_open_weights(hp_ckpt *ck, const char *dir) { return open_ckpt(ck, dir, 0); }

hp_status hp_ckpt_read(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype, const hp_shape *shape,
                       void *dst) {
    if (ck->shards) {
        hp_region whole = hp_region_whole(shape);
        return hp_ckpt_shards_read(ck->shards, name, dtype, shape, &whole, dst);
    }
    return hp_safetensors_read_into(g == HP_CKPT_GROUP_OPTIM ? ck->optim : ck->model, name, dtype, shape, dst);
}

static hp_status read_region(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype,
                             const hp_shape *shape, const hp_region *region, void *dst, int deferred) {
    if (ck->shards) return hp_ckpt_shards_read(ck->shards, name, dtype, shape, region, dst);
    const hp_safetensors *f = g == HP_CKPT_GROUP_OPTIM ? ck->optim : ck->model;
    const hp_safetensors_entry *en = hp_safetensors_find(f, name);
    /* the whole tensor's checks (name, dtype, shape) with a zero-byte read */
    if (!en || !en->has_dtype || en->dtype != dtype || !hp_shape_eq(&en->shape, shape))
        return hp_safetensors_read_into(f, name, dtype, shape, NULL);
    char why[200];
    if (hp_region_invalid(why, sizeof why, region, shape))
        return hp_errorf("%s: tensor '%s': the region to read is not in the tensor: %s", hp_safetensors_path(f), name,
                         why);
    size_t es = hp_dtype_size(dtype);
    if (deferred && region->kind == HP_REGION_FLAT)
        return hp_safetensors_read_span(f, en, dst, (size_t)region->begin * es, (size_t)region->end * es);
    HP_TRY(hp_safetensors_verify(f, en)); /* the whole tensor, once */
    hp_region whole = hp_region_whole(shape);
    hp_region_copy(dst, region, en->data, &whole, shape, es);
    return HP_OK;
}

hp_status hp_ckpt_read_region(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype,
                              const hp_shape *shape, const hp_region *region, void *dst) {
    return read_region(ck, g, name, dtype, shape, region, dst, 0);
}

hp_status hp_ckpt_read_region_deferred(const hp_ckpt *ck, hp_ckpt_group g, const char *name, hp_dtype dtype,
                                       const hp_shape *shape, const hp_region *region, void *dst) {
    return read_region(ck, g, name, dtype, shape, region, dst, 1);
}

hp_status hp_ckpt_verify_deferred(const hp_ckpt *ck) {
    if (ck->model) HP_TRY(hp_safetensors_verify_spans(ck->model));
    if (ck->optim) HP_TRY(hp_safetensors_verify_spans(ck->optim));
    return HP_OK;
}
