/* api/ckpt_state: checkpoint state.json of API runs (see the header). */
#include "api/ckpt_state.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "io/llmc.h"
#include "models/gpt2_config.h"

hp_status hp_api_state_json(char **out, long step, const hp_model *m, const hp_data_state *ds, const char *optimizer,
                            int nargs, const char *const *keys, const char *const *values,
                            const hp_ckpt_lineage *lineage) {
    const hp_gpt2_config *c = &m->cfg;
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "format"), hp_jw_string(&w, "hyperpar-train-1");
    hp_jw_key(&w, "step"), hp_jw_int(&w, step);
    hp_jw_key(&w, "model"), hp_gpt2_config_to_json(&w, c);
    if (m->custom) hp_jw_key(&w, "model_kind"), hp_jw_string(&w, "written"); /* absent: GPT-2 */
    hp_jw_key(&w, "data"), hp_data_state_to_json(&w, ds);
    if (nargs > 0) {
        hp_jw_key(&w, "args");
        hp_jw_object_begin(&w);
        for (int i = 0; i < nargs; i++) hp_jw_key(&w, keys[i]), hp_jw_string(&w, values[i]);
        hp_jw_object_end(&w);
    } else {
        hp_jw_key(&w, "batch"), hp_jw_int(&w, m->B);
        hp_jw_key(&w, "seq"), hp_jw_int(&w, m->T);
        hp_jw_key(&w, "optimizer"), hp_jw_string(&w, optimizer);
    }
    if (lineage) hp_ckpt_lineage_to_json(&w, lineage);
    hp_jw_object_end(&w);
    size_t len;
    return hp_jw_finish(out, &len, &w);
}

/* A run directory's newest checkpoint: in its ckpt/ (where a run keeps its
 * checkpoints by default), else in the ckpt_dir its run.json names. */
static hp_status run_dir_ckpt(char **dir, const char *run_dir) {
    char *in = hp_fs_join(run_dir, "ckpt");
    if (!in) return hp_errorf("%s: out of memory", run_dir);
    if (hp_fs_exists(in)) {
        hp_status e = hp_ckpt_find(dir, in);
        free(in);
        return e;
    }
    free(in);
    char *path = hp_fs_join(run_dir, "run.json"), *text = NULL;
    if (!path) return hp_errorf("%s: out of memory", run_dir);
    size_t n;
    hp_json *js = NULL;
    const char *ck = NULL;
    hp_status e = hp_fs_read_bounded(&text, &n, path, 1 << 20);
    if (!e) e = hp_json_parse(&js, text, n);
    if (!e) {
        const hp_json *v = hp_json_get(js, "ckpt_dir");
        if (v && v->type == HP_JSON_STRING && v->str[0]) ck = v->str;
        else e = hp_errorf("%s: a run directory whose run kept no checkpoints (it ran with --ckpt-dir none)", run_dir);
    } else {
        e = hp_error_wrap(e, "%s", path);
    }
    if (!e) e = hp_ckpt_find(dir, ck);
    hp_json_free(js);
    free(text);
    free(path);
    return e;
}

hp_status hp_api_ckpt_dir(char **dir, const char *path) {
    char probe[1100];
    struct stat st;
    if (stat(path, &st) != 0) return hp_errorf("%s: cannot open the checkpoint: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return hp_errorf("%s: not a directory (a checkpoint, or a checkpoint directory's parent with 'latest')", path);
    snprintf(probe, sizeof probe, "%s/%s", path, HP_CKPT_STATE);
    if (stat(probe, &st) == 0) {
        *dir = strdup(path);
        return *dir ? HP_OK : hp_errorf("%s: out of memory", path);
    }
    snprintf(probe, sizeof probe, "%s/run.json", path);
    if (stat(probe, &st) == 0) return run_dir_ckpt(dir, path);
    return hp_ckpt_find(dir, path);
}

#define STATE_FORMAT "hyperpar-train-1"

/* An optional integer field in [lo, hi]. */
static hp_status check_range(const hp_json *st, const char *key, int64_t lo, int64_t hi) {
    if (!hp_json_get(st, key)) return HP_OK;
    int64_t x;
    HP_TRY(hp_json_get_int(&x, st, key));
    if (x < lo || x > hi) return hp_errorf("key '%s': %lld is outside [%lld, %lld]", key, (long long)x, (long long)lo, (long long)hi);
    return HP_OK;
}

/* Every field of a state.json (an object) this library reads. */
static hp_status check_state(const hp_json *st) {
    const hp_json *f = hp_json_get(st, "format");
    if (!f) return hp_errorf("missing key 'format' (expected \"" STATE_FORMAT "\")");
    if (f->type != HP_JSON_STRING || strcmp(f->str, STATE_FORMAT))
        return hp_errorf("key 'format': expected \"" STATE_FORMAT "\", got %s%s%s",
                         f->type == HP_JSON_STRING ? "\"" : "", f->type == HP_JSON_STRING ? f->str : hp_json_type_name(f->type),
                         f->type == HP_JSON_STRING ? "\"" : "");
    int64_t step;
    HP_TRY(hp_json_get_int(&step, st, "step"));
    if (step < 0) return hp_errorf("key 'step': %lld is negative", (long long)step);
    if (step > HP_API_MAX_STEP)
        return hp_errorf("key 'step': %lld is above the limit of %lld", (long long)step, (long long)HP_API_MAX_STEP);
    const hp_json *m = hp_json_get(st, "model");
    if (!m) return hp_errorf("missing key 'model'");
    if (m->type != HP_JSON_OBJECT) return hp_errorf("key 'model': expected an object, got %s", hp_json_type_name(m->type));
    hp_gpt2_config c;
    hp_status e = hp_gpt2_config_from_json(&c, m);
    if (e) return hp_error_wrap(e, "model");
    const hp_json *mk = hp_json_get(st, "model_kind");
    if (mk && (mk->type != HP_JSON_STRING || (strcmp(mk->str, "gpt2") && strcmp(mk->str, "written"))))
        return hp_errorf("key 'model_kind': expected \"gpt2\" or \"written\", got %s",
                         mk->type == HP_JSON_STRING ? mk->str : hp_json_type_name(mk->type));
    const hp_json *dj = hp_json_get(st, "data");
    if (!dj) return hp_errorf("missing key 'data'");
    if (dj->type != HP_JSON_OBJECT) return hp_errorf("key 'data': expected an object, got %s", hp_json_type_name(dj->type));
    hp_data_state ds;
    e = hp_data_state_from_json(&ds, dj);
    if (e) return hp_error_wrap(e, "data");
    if (ds.epoch > step) return hp_errorf("data: key 'epoch': %lld is more than the step %lld (an epoch takes a step at least)",
                                          (long long)ds.epoch, (long long)step);
    const hp_json *args = hp_json_get(st, "args");
    if (args && args->type != HP_JSON_OBJECT)
        return hp_errorf("key 'args': expected an object, got %s", hp_json_type_name(args->type));
    for (int i = 0; args && i < args->n; i++)
        if (args->items[i].type != HP_JSON_STRING)
            return hp_errorf("args: key '%s': expected a string, got %s", args->keys[i], hp_json_type_name(args->items[i].type));
    hp_ckpt_lineage lin;
    HP_TRY(hp_ckpt_lineage_from_json(&lin, st));
    if (hp_json_get(st, "saved_ns")) HP_TRY(check_range(st, "saved_ns", 0, INT64_MAX));
    HP_TRY(check_range(st, "batch", 1, INT32_MAX));
    HP_TRY(check_range(st, "seq", 1, INT32_MAX));
    const hp_json *o = hp_json_get(st, "optimizer");
    if (o && o->type != HP_JSON_STRING) return hp_errorf("key 'optimizer': expected a string, got %s", hp_json_type_name(o->type));
    return HP_OK;
}

hp_status hp_api_ckpt_open(hp_ckpt *ck, char **dir, const char *path, int with_optim) {
    HP_TRY(hp_api_ckpt_dir(dir, path));
    hp_status st = with_optim ? hp_ckpt_open(ck, *dir) : hp_ckpt_open_weights(ck, *dir);
    if (!st) {
        st = check_state(ck->state);
        if (st) {
            st = hp_error_wrap(st, "%s/%s", *dir, HP_CKPT_STATE);
            hp_ckpt_close(ck);
        }
    }
    if (st) {
        free(*dir);
        *dir = NULL;
    }
    return st;
}

/* 1 when the checkpoint's model was written with the model-building API
 * (state.json's model_kind "written"; absent or "gpt2": GPT-2). */
static int written_model(const hp_ckpt *ck) {
    const hp_json *mk = hp_json_get(ck->state, "model_kind");
    return mk && mk->type == HP_JSON_STRING && !strcmp(mk->str, "written");
}

hp_status hp_api_ckpt_gpt2(const hp_ckpt *ck, const char *dir, const char *what) {
    if (!written_model(ck)) return HP_OK;
    return hp_errorf("%s/state.json: the model was written with the model-building API (model_kind \"written\"), "
                     "not GPT-2: %s reads GPT-2 checkpoints only", dir, what);
}

/* Optional integer key `key` must equal `want` when present. */
static hp_status check_int(const hp_ckpt *ck, const char *dir, const char *key, long want) {
    if (!hp_json_get(ck->state, key)) return HP_OK;
    int64_t x;
    hp_status st = hp_json_get_int(&x, ck->state, key);
    if (st) return hp_error_wrap(st, "%s/state.json", dir);
    if (x != want)
        return hp_errorf("%s/state.json: %s %lld differs from the run's %ld", dir, key, (long long)x, want);
    return HP_OK;
}

hp_status hp_api_ckpt_resume(long *step, const hp_ckpt *ck, const char *dir, const hp_model *m, const char *optimizer,
                             long steps, hp_data *train) {
    if (written_model(ck) && !m->custom) /* (one without the key, older, is read as before) */
        return hp_errorf("%s/state.json: the checkpoint's model is one written with the model-building API, the "
                         "run's GPT-2", dir);
    hp_gpt2_config c;
    HP_TRY(hp_ckpt_model_config(&c, ck, dir));
    const hp_gpt2_config *r = &m->cfg;
    if (c.L != r->L || c.NH != r->NH || c.C != r->C || c.V != r->V || c.Vp != r->Vp || c.maxT != r->maxT)
        return hp_errorf("%s/state.json: model (L=%d NH=%d C=%d V=%d maxT=%d) differs from the run's (L=%d NH=%d C=%d "
                         "V=%d maxT=%d)",
                         dir, c.L, c.NH, c.C, c.V, c.maxT, r->L, r->NH, r->C, r->V, r->maxT);
    HP_TRY(check_int(ck, dir, "batch", m->B));
    HP_TRY(check_int(ck, dir, "seq", m->T));
    const hp_json *o = hp_json_get(ck->state, "optimizer");
    if (o && (o->type != HP_JSON_STRING || strcmp(o->str, optimizer)))
        return hp_errorf("%s/state.json: optimizer '%s' differs from the run's '%s'", dir,
                         o->type == HP_JSON_STRING ? o->str : "?", optimizer);
    int64_t s;
    hp_status st = hp_json_get_int(&s, ck->state, "step"); /* checked when opened */
    if (st) return hp_error_wrap(st, "%s/state.json", dir);
    if (s > steps)
        return hp_errorf("%s/state.json: key 'step': %lld is past the run's last step %ld (steps)", dir, (long long)s,
                         steps);
    *step = (long)s;
    const hp_json *dj = hp_json_get(ck->state, "data");
    hp_data_state ds;
    st = dj ? hp_data_state_from_json(&ds, dj) : hp_errorf("missing key 'data'");
    if (!st) st = hp_data_set_state(train, &ds);
    return st ? hp_error_wrap(st, "%s/state.json: data", dir) : HP_OK;
}

/* ---- hp_ckpt_info: a checkpoint's state.json for programs ---- */

struct hp_ckpt_info {
    hp_ckpt ck;
    char *dir;
    long step;
    hp_gpt2_config model;
    int nargs; /* -1: no "args" object */
    const char **keys, **values; /* [nargs], into ck.state */
};

hp_status hp_ckpt_info_open(hp_ckpt_info **out, const char *path) {
    *out = NULL;
    if (!path || !path[0]) return hp_errorf("hp_ckpt_info_open: path is empty");
    hp_ckpt_info *ci = calloc(1, sizeof *ci);
    if (!ci) return hp_errorf("%s: out of memory", path);
    ci->nargs = -1;
    hp_status st = hp_api_ckpt_open(&ci->ck, &ci->dir, path, 0);
    if (st) {
        free(ci);
        return st;
    }
    st = hp_ckpt_model_config(&ci->model, &ci->ck, ci->dir);
    int64_t step = 0;
    if (!st) {
        st = hp_json_get_int(&step, ci->ck.state, "step");
        if (st) st = hp_error_wrap(st, "%s/state.json", ci->dir);
        else if (step < 0) st = hp_errorf("%s/state.json: step %lld is negative", ci->dir, (long long)step);
    }
    ci->step = (long)step;
    const hp_json *args = st ? NULL : hp_json_get(ci->ck.state, "args");
    if (args && args->type == HP_JSON_OBJECT) {
        ci->keys = calloc((size_t)args->n + 1, sizeof *ci->keys);
        ci->values = calloc((size_t)args->n + 1, sizeof *ci->values);
        if (!ci->keys || !ci->values) st = hp_errorf("%s/state.json: out of memory", ci->dir);
        ci->nargs = 0;
        for (int i = 0; !st && i < args->n; i++) { /* strings only: checked when opened */
            ci->keys[ci->nargs] = args->keys[i], ci->values[ci->nargs] = args->items[i].str;
            ci->nargs++;
        }
    }
    if (st) {
        hp_ckpt_info_free(ci);
        return st;
    }
    *out = ci;
    return HP_OK;
}

void hp_ckpt_info_free(hp_ckpt_info *ci) {
    if (!ci) return;
    hp_ckpt_close(&ci->ck);
    free(ci->keys), free(ci->values);
    free(ci->dir);
    free(ci);
}

const char *hp_ckpt_info_dir(const hp_ckpt_info *ci) { return ci->dir; }
long hp_ckpt_info_step(const hp_ckpt_info *ci) { return ci->step; }

void hp_ckpt_info_model(const hp_ckpt_info *ci, hp_model_config *out) {
    *out = (hp_model_config){.layers = ci->model.L, .heads = ci->model.NH, .channels = ci->model.C,
                             .vocab = ci->model.V, .max_seq = ci->model.maxT};
}

int hp_ckpt_info_nargs(const hp_ckpt_info *ci) { return ci->nargs; }

void hp_ckpt_info_arg(const hp_ckpt_info *ci, int i, const char **key, const char **value) {
    int ok = i >= 0 && i < ci->nargs;
    *key = ok ? ci->keys[i] : NULL;
    *value = ok ? ci->values[i] : NULL;
}

hp_status hp_model_config_llmc(hp_model_config *out, const char *llmc_path) {
    if (!llmc_path || !llmc_path[0]) return hp_errorf("hp_model_config_llmc: path is empty");
    hp_llmc_header h;
    HP_TRY(hp_llmc_read_header(&h, llmc_path));
    hp_gpt2_config c = {h.L, h.NH, h.C, h.V, h.Vp, h.maxT};
    hp_status st = hp_gpt2_config_check(&c);
    if (st) return hp_error_wrap(st, "%s", llmc_path);
    *out = (hp_model_config){.layers = c.L, .heads = c.NH, .channels = c.C, .vocab = c.V, .max_seq = c.maxT};
    return HP_OK;
}
