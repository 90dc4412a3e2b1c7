/* api/run_dir: the run directory (see the header). */
#include "api/run_dir.h"

#include <cblas.h>
#include <gnu/libc-version.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "io/fsutil.h"
#include "io/json.h"

struct hp_api_run {
    char *dir;
    int lead; /* this process writes the files */
    char *command, *metrics, *trace, *ckpt_dir, *mesh;
    char started[32];
    long steps, start_step, last_step, trace_steps;
    int ranks;
    int over_ranks, over_threads, over_cores; /* over_ranks > 0: more compute threads than cores */
};

void hp_api_run_oversubscribed(hp_api_run *r, int ranks, int threads_per_rank, int cores) {
    r->over_ranks = ranks, r->over_threads = threads_per_rank, r->over_cores = cores;
}

static void utc_now(char *buf, size_t n) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

hp_status hp_run_dir_default(char *buf, int n, const char *parent) {
    if (n < 32) return hp_errorf("hp_run_dir_default: buffer of %d bytes is too small", n);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    const char *p = parent && parent[0] ? parent : "runs";
    for (int k = 1; k < 1000; k++) {
        int w = k == 1 ? snprintf(buf, (size_t)n, "%s/%s", p, stamp) : snprintf(buf, (size_t)n, "%s/%s-%d", p, stamp, k);
        if (w < 0 || w >= n) return hp_errorf("hp_run_dir_default: '%s' makes a name longer than %d bytes", p, n - 1);
        if (!hp_fs_exists(buf)) return HP_OK;
    }
    return hp_errorf("%s/%s: 999 run directories of this second exist", p, stamp);
}

/* path made absolute against the working directory (NULL stays NULL). */
static hp_status absolute(char **out, const char *path) {
    *out = NULL;
    if (!path || !path[0]) return HP_OK;
    if (path[0] == '/') return hp_api_strdup(out, path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return hp_errorf("run directory: cannot read the working directory");
    *out = hp_fs_join(cwd, path);
    return *out ? HP_OK : hp_errorf("run directory: out of memory");
}

static hp_status write_json(const hp_api_run *r, const char *name, hp_jw *w) {
    char *text = NULL, *path = hp_fs_join(r->dir, name);
    size_t len = 0;
    hp_status st = path ? hp_jw_finish(&text, &len, w) : hp_errorf("%s/%s: out of memory", r->dir, name);
    if (!st) {
        text[len] = 0;
        char *nl = realloc(text, len + 2);
        if (nl) text = nl, text[len++] = '\n';
        st = hp_fs_write_atomic(path, text, len);
    }
    hp_jw_free(w);
    free(text), free(path);
    return st;
}

static void kv_str(hp_jw *w, const char *k, const char *v) {
    hp_jw_key(w, k);
    if (v) hp_jw_string(w, v);
    else hp_jw_null(w);
}

static void kv_int(hp_jw *w, const char *k, int64_t v) {
    hp_jw_key(w, k);
    hp_jw_int(w, v);
}

static void kv_num(hp_jw *w, const char *k, double v) {
    hp_jw_key(w, k);
    hp_jw_double(w, v);
}

static hp_status write_run(const hp_api_run *r, const char *status, const char *error) {
    if (!r->lead) return HP_OK;
    hp_jw w;
    hp_jw_init(&w);
    char now[32];
    utc_now(now, sizeof now);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    hp_jw_object_begin(&w);
    kv_str(&w, "format", "hyperpar-run-1");
    kv_str(&w, "status", status);
    if (error) kv_str(&w, "error", error);
    kv_str(&w, "command", r->command);
    kv_str(&w, "started", r->started);
    kv_str(&w, "updated", now);
    kv_int(&w, "steps", r->steps);
    kv_int(&w, "start_step", r->start_step);
    kv_int(&w, "last_step", r->last_step);
    kv_str(&w, "mesh", r->mesh);
    kv_int(&w, "ranks", r->ranks);
    kv_str(&w, "metrics", r->metrics);
    kv_str(&w, "trace", r->trace);
    if (r->trace) kv_int(&w, "trace_steps", r->trace_steps), kv_int(&w, "trace_first_step", r->start_step + 1);
    if (r->trace) { /* the files the ranks write: PREFIX.rankN.json (runtime/trace) */
        hp_jw_key(&w, "trace_files");
        hp_jw_array_begin(&w);
        for (int k = 0; k < r->ranks; k++) {
            char path[4200]; /* a path longer than PATH_MAX could not have been written */
            snprintf(path, sizeof path, "%s.rank%d.json", r->trace, k);
            hp_jw_string(&w, path);
        }
        hp_jw_array_end(&w);
    }
    kv_str(&w, "ckpt_dir", r->ckpt_dir);
    if (r->over_ranks > 0) {
        hp_jw_key(&w, "oversubscribed");
        hp_jw_object_begin(&w);
        kv_int(&w, "ranks", r->over_ranks);
        kv_int(&w, "threads_per_rank", r->over_threads);
        kv_int(&w, "cores", r->over_cores);
        hp_jw_object_end(&w);
    }
    kv_num(&w, "peak_rss_mb", (double)ru.ru_maxrss / 1024.0);
    kv_str(&w, "hyperpar", hp_version());
    hp_jw_object_end(&w);
    return write_json(r, "run.json", &w);
}

static hp_status write_config(const hp_api_run *r, const hp_train_config *c) {
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "settings");
    hp_jw_array_begin(&w);
    for (int i = 0; i < c->run_nsettings; i++) {
        const hp_run_setting *s = &c->run_settings[i];
        hp_jw_object_begin(&w);
        kv_str(&w, "key", s->key ? s->key : "");
        kv_str(&w, "value", s->value ? s->value : "");
        kv_str(&w, "source", s->source ? s->source : "");
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    return write_json(r, "config.json", &w);
}

static const char *kernel_isa(void) {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2+fma";
#else
    return "scalar";
#endif
}

static hp_status write_machine(const hp_api_run *r, const hp_train_config *c) {
    char cpu[256], mpi[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int mlen = 0;
    hp_cpu_model(cpu, sizeof cpu);
    MPI_Get_library_version(mpi, &mlen);
    mpi[strcspn(mpi, "\n,")] = 0;
    struct utsname u;
    int have_u = uname(&u) == 0;
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    kv_str(&w, "cpu", cpu);
    kv_int(&w, "cores_online", sysconf(_SC_NPROCESSORS_ONLN));
    kv_int(&w, "threads", c->threads);
    kv_str(&w, "kernel_isa", kernel_isa());
    kv_str(&w, "openblas", openblas_get_config());
    kv_str(&w, "openblas_core", openblas_get_corename());
    kv_str(&w, "mpi", mpi);
    kv_str(&w, "compiler", __VERSION__);
    kv_str(&w, "libc", gnu_get_libc_version());
    if (have_u) {
        char os[400];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        kv_str(&w, "os", os);
    }
    kv_str(&w, "hyperpar", hp_version());
    hp_jw_object_end(&w);
    return write_json(r, "machine.json", &w);
}

static void shape(hp_jw *w, const char *k, const int64_t *d, int n) {
    hp_jw_key(w, k);
    hp_jw_array_begin(w);
    for (int i = 0; i < n; i++) hp_jw_int(w, d[i]);
    hp_jw_array_end(w);
}

static void plan_rank(hp_jw *w, const hp_plan_rank_report *k) {
    hp_jw_object_begin(w);
    kv_int(w, "rank", k->rank);
    hp_jw_key(w, "tensors");
    hp_jw_array_begin(w);
    for (int i = 0; i < k->ntensors; i++) {
        const hp_plan_tensor *t = &k->tensors[i];
        hp_jw_object_begin(w);
        kv_str(w, "name", t->name);
        kv_str(w, "kind", t->kind);
        shape(w, "shape", t->shape, t->ndim);
        kv_str(w, "layout", t->layout);
        shape(w, "local_shape", t->local_shape, t->ndim);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    hp_jw_key(w, "collectives");
    hp_jw_array_begin(w);
    for (int i = 0; i < k->ncollectives; i++) {
        const hp_plan_collective *c = &k->collectives[i];
        hp_jw_object_begin(w);
        kv_str(w, "phase", c->phase);
        kv_str(w, "where", c->where);
        kv_str(w, "steps", c->steps);
        kv_str(w, "groups", c->groups);
        kv_num(w, "bytes", c->bytes);
        hp_jw_key(w, "communicates");
        hp_jw_bool(w, c->communicates);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    hp_jw_key(w, "totals");
    hp_jw_array_begin(w);
    for (int i = 0; i < k->ntotals; i++) {
        hp_jw_object_begin(w);
        kv_str(w, "phase", k->totals[i].phase);
        kv_str(w, "kind", k->totals[i].kind);
        kv_int(w, "count", k->totals[i].count);
        kv_num(w, "bytes", k->totals[i].bytes);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    const hp_plan_memory *m = &k->memory;
    hp_jw_key(w, "memory");
    hp_jw_object_begin(w);
    kv_num(w, "params", m->params), kv_num(w, "grads", m->grads), kv_num(w, "optimizer", m->optimizer);
    kv_num(w, "activations", m->activations), kv_num(w, "scratch", m->scratch), kv_num(w, "inputs", m->inputs);
    kv_num(w, "total", m->total);
    hp_jw_object_end(w);
    hp_jw_object_end(w);
}

static hp_status write_plan(const hp_api_run *r, const hp_train_config *c, const hp_model *m) {
    hp_shard_plan *own = NULL;
    const hp_shard_plan *plan = c->plan;
    if (!plan) {
        HP_TRY(hp_shard_plan_gpt2(&own, 1, 1));
        plan = own;
    }
    hp_plan_report_config pc;
    hp_plan_report_config_default(&pc);
    pc.model = (hp_model_config){.layers = m->cfg.L, .heads = m->cfg.NH, .channels = m->cfg.C, .vocab = m->cfg.V, .max_seq = m->cfg.maxT};
    pc.batch = m->B, pc.seq = m->T;
    pc.plan = plan;
    pc.all_ranks = 1;
    pc.optimizer = c->optimizer == HP_OPTIMIZER_MUON ? "muon" : "adamw";
    pc.muon_params = c->muon_params, pc.adamw_params = c->adamw_params, pc.muon_balance = c->muon_balance;
    pc.grad_clip = c->grad_clip, pc.overlap = c->overlap, pc.threads = c->threads;
    pc.bf16 = c->bf16, pc.bf16_params_all = c->bf16_params_all; /* the program that runs */
    hp_plan_report *rep = NULL;
    hp_status st = hp_plan_report_create(&rep, &pc);
    hp_shard_plan_free(own);
    if (st) return hp_error_wrap(st, "%s/plan.json", r->dir);
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    kv_str(&w, "mesh", c->plan ? rep->mesh : "1 rank (no plan)");
    kv_int(&w, "nranks", rep->nranks);
    kv_str(&w, "plan", c->plan ? rep->plan_text : NULL);
    kv_str(&w, "optimizer", rep->optimizer);
    kv_int(&w, "nparams", rep->nparams);
    kv_int(&w, "batch", rep->batch), kv_int(&w, "seq", rep->seq);
    hp_jw_key(&w, "passes");
    hp_jw_array_begin(&w);
    for (int i = 0; i < rep->npasses; i++) {
        hp_jw_object_begin(&w);
        kv_str(&w, "name", rep->passes[i].name);
        kv_str(&w, "note", rep->passes[i].note);
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_key(&w, "ranks");
    hp_jw_array_begin(&w);
    for (int i = 0; i < rep->nreported; i++) plan_rank(&w, &rep->ranks[i]);
    hp_jw_array_end(&w);
    hp_jw_key(&w, "notes");
    hp_jw_array_begin(&w);
    for (int i = 0; i < rep->nnotes; i++) hp_jw_string(&w, rep->notes[i]);
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    hp_plan_report_free(rep);
    return write_json(r, "plan.json", &w);
}

hp_status hp_api_run_create(hp_api_run **out, const hp_train_config *c) {
    *out = NULL;
    hp_api_run *r = calloc(1, sizeof *r);
    if (!r) return hp_errorf("run directory: out of memory");
    hp_status st = hp_api_strdup(&r->dir, c->run_dir);
    if (!st) st = hp_fs_mkdir_p(r->dir);
    if (st) {
        hp_api_run_free(r);
        return st;
    }
    *out = r;
    return HP_OK;
}

hp_status hp_api_run_start(hp_api_run *r, const hp_train_config *c, const hp_model *m, const char *metrics,
                           int ranks, const char *mesh, long start_step) {
    r->lead = 1;
    utc_now(r->started, sizeof r->started);
    r->steps = c->steps, r->start_step = start_step, r->last_step = start_step, r->ranks = ranks;
    r->trace_steps = c->trace_steps;
    HP_TRY(hp_api_strdup(&r->command, c->run_command));
    HP_TRY(hp_api_strdup(&r->mesh, mesh));
    HP_TRY(absolute(&r->metrics, metrics));
    HP_TRY(absolute(&r->trace, c->trace));
    HP_TRY(absolute(&r->ckpt_dir, c->ckpt_dir));
    HP_TRY(write_config(r, c));
    HP_TRY(write_machine(r, c));
    if (!m->custom) HP_TRY(write_plan(r, c, m)); /* the plan report describes GPT-2 models only */
    return write_run(r, "running", NULL);
}

hp_status hp_api_run_progress(hp_api_run *r, long step, int refresh) {
    if (step > r->last_step) r->last_step = step;
    return refresh ? write_run(r, "running", NULL) : HP_OK;
}

hp_status hp_api_run_finish(hp_api_run *r, hp_status st) {
    hp_status w = write_run(r, st ? "failed" : "done", st ? hp_status_msg(st) : NULL);
    if (st) {
        hp_status_free(w);
        return st;
    }
    return w;
}

void hp_api_run_free(hp_api_run *r) {
    if (!r) return;
    free(r->dir), free(r->command), free(r->metrics), free(r->trace), free(r->ckpt_dir), free(r->mesh);
    free(r);
}
