/* runtime/trainer: the one training loop (see the header). */
#include "runtime/trainer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/timing.h"
#include "io/ckpt_dir.h"
#include "io/outpath.h"
#include "runtime/dist_ckpt.h"
#include "runtime/metrics.h"
#include "runtime/trace_hook.h"
#include "runtime/validate_muon.h"

typedef struct {
    float loss;
    double sumsq;
    hp_trace *trace;
    hp_trace_hook hook;
    double prof[2]; /* this step's seconds in kernels and in communicating steps (forward and backward) */
    double opt_s;   /* and in the optimizer phase */
} rank_state;

struct hp_trainer {
    hp_trainer_config cfg;
    hp_comm_world *world;
    int own_world;
    hp_dist *d;
    hp_dist_ckpt *ck;
    rank_state *rs;
    int32_t *tokens, *targets;
    hp_metrics *metrics;
    hp_ckpt_lock *lock; /* the checkpoint directory's (the lead process, with ckpt_dir) */
    int lead;
    int vote;           /* 1: processes agree on output errors every step (MPI, with outputs) */
    int warned_metrics, warned_trace;
    /* per step, read by the rank threads */
    float lrs[2];
    int32_t step_t;
    int eval, validated, tracing;
    int accum; /* micro-batches per step (>= 1) */
    double flops_per_step; /* the process's ranks' programs, every micro-batch counted */
    int stall_rank; long stall_step; /* test hook HP_TEST_STALL_RANK (see stall_hook); -1: off */
    /* the validated step, between its checked forward and backward and its optimizer phase */
    hp_validator *v;
    hp_vmuon *vmuon;       /* Muon's updates to check after the optimizer phase (NULL: none) */
    hp_validate_report vrep;
};

/* Test hook: HP_TEST_STALL_RANK=R:S makes rank R's thread stop answering (it
 * sleeps 600 s) at the start of training step S (1-based), as a rank stuck
 * outside any collective would; the tests use it to check that the other
 * ranks report the timeout and the process exits without it. The hook says
 * on stderr when it stalls (the tests time the exit from that line). */
static void stall_hook_init(hp_trainer *t) {
    t->stall_rank = -1;
    const char *e = getenv("HP_TEST_STALL_RANK");
    int rank;
    long step;
    if (e && sscanf(e, "%d:%ld", &rank, &step) == 2) t->stall_rank = rank, t->stall_step = step;
}

static void stall_hook(const hp_trainer *t, const hp_dist_rank *r) {
    if (r->rank != t->stall_rank || t->step_t != t->stall_step || t->eval) return;
    fprintf(stderr, "HP_TEST_STALL_RANK: rank %d stops answering at step %ld\n", r->rank, t->stall_step);
    fflush(stderr);
    for (int i = 0; i < 600; i++) sleep(1);
}

/* ---- the step on one rank ---- */

/* The rank's pieces of micro-batch m. */
static void micro_inputs(hp_trainer *t, hp_dist_rank *r, int m) {
    size_t n = (size_t)hp_shape_numel(&t->cfg.model->vals[t->cfg.tokens].shape) * (size_t)m;
    void *tok = hp_dist_value(r, t->cfg.tokens), *tgt = hp_dist_value(r, t->cfg.targets);
    if (tok) hp_dist_scatter_value(t->d, r, t->cfg.tokens, tok, t->tokens + n); /* a stage may read neither */
    if (tgt) hp_dist_scatter_value(t->d, r, t->cfg.targets, tgt, t->targets + n);
    if (r->c.micro >= 0) {
        int32_t *mi = hp_program_data(r->prog, r->c.micro);
        mi[0] = m, mi[1] = t->accum;
    }
}

static hp_status rank_inputs(hp_dist_rank *r, void *c_) {
    hp_trainer *t = c_;
    micro_inputs(t, r, 0);
    return HP_OK;
}

typedef struct {
    hp_trainer *t;
    hp_dist_rank *r;
} feed_ctx;

static hp_status feed(void *c_, int m) {
    feed_ctx *c = c_;
    micro_inputs(c->t, c->r, m);
    return HP_OK;
}

/* Where only some ranks compute the loss (a pipeline's last stage), theirs is every rank's. */
static hp_status share_loss(hp_dist_rank *r, float *loss) {
    int root = r->c.pp.loss_rank;
    if (root < 0) return HP_OK;
    return hp_comm_broadcast(r->c.rg.ctx.comm, r->c.rg.ctx.world_group, loss, 1, HP_F32, root);
}

/* The rank's step (or evaluation step): the schedule's actions, run by the program. */
static hp_status rank_step(hp_dist_rank *r, void *c_) {
    hp_trainer *t = c_;
    rank_state *rs = r->user;
    if (t->tracing)
        hp_trace_hook_attach(&rs->hook, r->prog, r->c.rg.g, rs->trace);
    else
        hp_trace_hook_detach(r->prog);
    stall_hook(t, r);
    feed_ctx fc = {t, r};
    hp_step_io io = {feed, &fc, NULL};
    if (t->eval) {
        HP_TRY(hp_program_run_actions(r->prog, &rs->loss, &r->c.sched.eval, &io));
        return share_loss(r, &rs->loss);
    }
    const hp_optim_phase_io *oio = &r->c.optim;
    memcpy(hp_program_data(r->prog, oio->lr), t->lrs, sizeof t->lrs);
    *(int32_t *)hp_program_data(r->prog, oio->step) = t->step_t;
    io.opt_seconds = &rs->opt_s;
    if (t->validated) { /* the validation executor ran the first step's forward and backward */
        hp_action opt_act = {HP_ACT_OPT, -1, 0};
        hp_action_list opt = {&opt_act, 1, 0, -1, 0, NULL, 1};
        rs->loss = ((float *)hp_program_data(r->prog, r->c.rg.loss))[0];
        HP_TRY(hp_program_run_actions(r->prog, NULL, &opt, &io));
    } else {
        HP_TRY(hp_program_run_actions(r->prog, &rs->loss, &r->c.sched.step, &io));
        HP_TRY(share_loss(r, &rs->loss));
    }
    rs->sumsq = *(const double *)hp_program_data(r->prog, oio->sumsq);
    return HP_OK;
}

static void emit(hp_trainer *t, hp_train_event *e) {
    if ((t->lead || e->kind == HP_TRAIN_WARNING) && t->cfg.on_event) t->cfg.on_event(t->cfg.event_ctx, e);
}

static void emit_text(hp_trainer *t, hp_train_event_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void emit_text(hp_trainer *t, hp_train_event_kind kind, const char *fmt, ...) {
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hp_train_event e = {.kind = kind, .message = msg};
    emit(t, &e);
}

/* ---- set-up ---- */

static hp_status init_params(hp_trainer *t) {
    hp_param_store whole;
    HP_TRY(hp_param_store_create(&whole, t->cfg.model));
    float **ptrs = malloc(sizeof(float *) * (size_t)(whole.n ? whole.n : 1));
    hp_status st = ptrs ? HP_OK : hp_errorf("trainer: out of memory");
    if (!st) {
        for (int i = 0; i < whole.n; i++) ptrs[i] = hp_param_ptr(&whole, i);
        st = t->cfg.init ? t->cfg.init(t->cfg.init_ctx, ptrs, (const char(*)[HP_NAME_LEN])whole.name, whole.shape,
                                       whole.n)
                         : HP_OK;
    }
    if (!st) st = hp_dist_scatter_params(t->d, &whole);
    free(ptrs);
    hp_param_store_free(&whole);
    return st;
}

/* Loaded or initialised weights must be finite: a NaN would train on silently. */
static hp_status check_finite(hp_trainer *t, const char *what) {
    for (int i = 0; i < hp_dist_nranks(t->d); i++) {
        const hp_param_store *ps = &hp_dist_rank_at(t->d, i)->ps;
        for (int k = 0; k < ps->n; k++) {
            const float *p = hp_param_ptr(ps, k);
            size_t a, b; /* the parts that are memory here (FSDP across supernodes: the supernode's shards) */
            for (int q = 0; hp_param_store_part(ps, k, q, &a, &b); q++)
                for (size_t j = a; j < b; j++)
                    if (!isfinite(p[j]))
                        return hp_errorf("%s: parameter '%s' holds a non-finite value (%g at element %zu)", what,
                                         ps->name[k], (double)p[j], j);
        }
    }
    return HP_OK;
}

/* The checkpoint directory is this run's: its lock taken (a second run
 * writing there is refused, naming its pid), then recovered from a crashed
 * save (io/ckpt_dir). */
static hp_status take_ckpt_dir(hp_trainer *t) {
    const char *dir = t->cfg.ckpt_dir;
    long stale = 0;
    HP_TRY(hp_ckpt_lock_acquire(&t->lock, &stale, dir));
    if (stale > 0 && stale != (long)getpid())
        emit_text(t, HP_TRAIN_NOTE, "%s: took over the lock of pid %ld, which is no longer running", dir, stale);
    hp_ckpt_recovery r;
    HP_TRY(hp_ckpt_recover(&r, dir));
    if (r.rolled_back || r.removed || r.latest_set) {
        char latest[300] = "";
        if (r.latest_set) snprintf(latest, sizeof latest, "; latest now names %s", r.latest_name);
        emit_text(t, HP_TRAIN_NOTE,
                  "%s: recovered from an interrupted save: %d checkpoint%s moved back, %d temporar%s removed%s", dir,
                  r.rolled_back, r.rolled_back == 1 ? "" : "s", r.removed, r.removed == 1 ? "y" : "ies", latest);
    }
    /* a checkpoint past the step this run starts from is newer than what it resumed, or another run's */
    long long newest, committed = -1;
    HP_TRY(hp_ckpt_newest_step(&newest, dir));
    char *latest = NULL;
    hp_status ls = hp_ckpt_get_latest(&latest, dir);
    if (!ls) { /* the committed step: what `latest` names */
        const char *base = strrchr(latest, '/');
        if (sscanf(base ? base + 1 : latest, "step_%lld", &committed) != 1) committed = -1;
    }
    hp_status_free(ls);
    free(latest);
    /* resumed from the committed checkpoint: anything newer was never committed (a save cut off before
     * `latest` moved), and is this run's to replace */
    int uncommitted = t->cfg.start_step > 0 && committed >= 0 && committed <= t->cfg.start_step;
    if (newest > t->cfg.start_step && !t->cfg.ckpt_overwrite && !uncommitted) {
        if (t->cfg.start_step > 0)
            return hp_errorf("%s/step_%06lld is newer than step %ld this run resumes from: the run would overwrite it "
                             "(--overwrite allows that; or --ckpt-dir elsewhere)",
                             dir, newest, t->cfg.start_step);
        return hp_errorf("%s already holds another run's checkpoints (up to step_%06lld): this run would overwrite "
                         "them (--resume %s continues that run; --overwrite allows it; or --ckpt-dir elsewhere)",
                         dir, newest, dir);
    }
    if (newest > t->cfg.start_step)
        emit_text(t, HP_TRAIN_NOTE, "%s: checkpoints up to step %lld, past step %ld this run starts from, are "
                  "overwritten as the run reaches them (%s)", dir, newest, t->cfg.start_step,
                  uncommitted ? "never committed: 'latest' names an older one" : "--overwrite");
    return HP_OK;
}

/* Every process learns whether any process failed its set-up (one vote per
 * process over the world), so an error one process alone sees (an unwritable
 * metrics file on rank 0's) ends every process at once instead of leaving
 * the others in their first collective until the timeout. When one failed,
 * its message travels to the others too (a second collective, on the failure
 * path only), so every process's error names the root cause: the launcher
 * ends the job when the first process exits, which may be one that did not
 * see it. */
#define VOTE_MSG 256 /* bytes of a process's message in the exchange */
typedef struct {
    hp_trainer *t;
    int failed;
    const char *msg;  /* the failed process's own error */
    const char *what; /* "to set up the run", "at step 12" */
} vote;

static hp_status vote_rank(hp_dist_rank *r, void *c_) {
    vote *v = c_;
    float mine = r->local_index == 0 && v->failed ? 1.0f : 0.0f, total = 0;
    hp_comm_group *world = hp_comm_world_group(v->t->world);
    HP_TRY(hp_comm_all_reduce(r->c.rg.ctx.comm, world, &total, &mine, 1, HP_F32, HP_COMM_SUM));
    if (total <= 0) return HP_OK;
    int n = hp_comm_group_size(world);
    char *all = calloc((size_t)n + 1, VOTE_MSG);
    if (!all) return hp_errorf("another process failed %s (its error says why)", v->what);
    char *own = all + (size_t)n * VOTE_MSG; /* this rank's contribution */
    if (mine > 0) snprintf(own, VOTE_MSG, "%s", v->msg);
    hp_status st = hp_comm_all_gather(r->c.rg.ctx.comm, world, all, own, VOTE_MSG / 4, NULL, HP_F32); /* bytes, as floats */
    const char *why = NULL;
    for (int i = 0; !st && i < n && !why; i++)
        if (all[(size_t)i * VOTE_MSG]) why = all + (size_t)i * VOTE_MSG, all[(size_t)i * VOTE_MSG + VOTE_MSG - 1] = 0;
    if (!st && !v->failed)
        st = why ? hp_errorf("another process failed %s: %s", v->what, why)
                 : hp_errorf("another process failed %s (its error says why)", v->what);
    free(all);
    return st;
}

static int multiproc(const hp_trainer *t) { return hp_comm_uses_mpi(t->world) && hp_comm_supernodes(t->world) > 1; }

static hp_status agree(hp_trainer *t, hp_status st, const char *what) {
    if (!multiproc(t)) return st;
    vote v = {t, st != HP_OK, st ? hp_status_msg(st) : "", what};
    hp_status agreed = hp_dist_run(t->d, vote_rank, &v);
    if (st) {
        hp_status_free(agreed);
        return st;
    }
    return agreed;
}

/* The checkpoint writer and reader, made on first use. */
static hp_status ensure_ckpt(hp_trainer *t) {
    if (t->ck) return HP_OK;
    HP_TRY(hp_dist_ckpt_create(&t->ck, t->d));
    hp_dist_ckpt_set_format(t->ck, t->cfg.ckpt_sharded ? HP_CKPT_SHARDED : HP_CKPT_SINGLE, HP_CKPT_FAULT_NONE);
    return HP_OK;
}

hp_status hp_trainer_create(hp_trainer **out, const hp_trainer_config *cfg) {
    *out = NULL;
    hp_trainer *t = calloc(1, sizeof *t);
    if (!t) return hp_errorf("trainer: out of memory");
    t->cfg = *cfg;
    t->accum = cfg->compile.grad_accum > 1 ? cfg->compile.grad_accum : 1;
    stall_hook_init(t);
    hp_status st = HP_OK;
    if (t->accum > 1 && cfg->validate)
        st = hp_errorf("trainer: validation mode checks one micro-batch, and a step here has %d (%s); run --validate "
                       "without %s",
                       t->accum, cfg->compile.deterministic ? "the deterministic mode's slices" : "--grad-accum",
                       cfg->compile.deterministic ? "--deterministic" : "--grad-accum");
    if (st) {
        free(t);
        return st;
    }
    if (cfg->world)
        t->world = cfg->world;
    else
        st = hp_dist_world_create(&t->world, cfg->plan, cfg->comm_timeout, cfg->a2a_fuse_bytes), t->own_world = 1;
    if (!st) {
        hp_dist_config dc = {.model = cfg->model, .plan = cfg->plan, .world = t->world,
                             .threads_per_rank = hp_dist_threads_per_rank(t->world, cfg->threads)};
        dc.compile = cfg->compile;
        dc.compile.train = 1;
        dc.compile.optim = &t->cfg.optim;
        dc.compile.grad_accum = t->accum;
        if (cfg->validate) dc.compile.schedule.overlap = dc.compile.schedule.ep_overlap = 0; /* the validator checks every step's outputs */
        if (cfg->before_alloc) st = cfg->before_alloc(cfg->before_alloc_ctx, t->world, &dc.compile, dc.threads_per_rank);
        if (!st) st = hp_dist_create(&t->d, &dc);
    }
    if (!st) {
        t->lead = hp_dist_lead(t->d);
        int nr = hp_dist_nranks(t->d);
        t->rs = calloc((size_t)nr, sizeof *t->rs);
        if (!t->rs) st = hp_errorf("trainer: out of memory");
        for (int i = 0; i < nr && !st; i++) {
            hp_dist_rank *r = hp_dist_rank_at(t->d, i);
            r->user = &t->rs[i];
            hp_program_profile(r->prog, t->rs[i].prof); /* the metrics' step split (a clock read per step) */
            const hp_program_info *pi = hp_program_get_info(r->prog);
            t->flops_per_step += (pi->flops[HP_PHASE_FWD] + pi->flops[HP_PHASE_BWD]) * t->accum + pi->flops[HP_PHASE_OPT];
            if (cfg->trace && cfg->trace[0]) {
                long steps = cfg->trace_steps > 0 ? cfg->trace_steps : 1;
                size_t cap = (size_t)steps * (size_t)(r->c.sched.n + 8) + 64;
                int tracks = r->c.rg.ctx.nslots + 2;
                st = hp_trace_create(&t->rs[i].trace, r->rank, tracks < 64 ? tracks : 64, cap);
            }
        }
        if (!st && cfg->trace && cfg->trace[0] && nr > 1) { /* the process's ranks share one time origin */
            double origin = hp_trace_origin(t->rs[0].trace);
            for (int i = 1; i < nr; i++) hp_trace_set_origin(t->rs[i].trace, origin);
        }
    }
    if (!st) {
        const hp_value *tv = &cfg->model->vals[cfg->tokens];
        size_t n = (size_t)hp_shape_numel(&tv->shape) * (size_t)t->accum;
        t->tokens = calloc(n, sizeof(int32_t));
        t->targets = calloc(n, sizeof(int32_t));
        if (!t->tokens || !t->targets) st = hp_errorf("trainer: out of memory");
    }
    if (!st && t->lead && cfg->ckpt_dir && cfg->ckpt_dir[0]) st = take_ckpt_dir(t);
    if (!st && ((cfg->ckpt_dir && cfg->ckpt_dir[0]) || cfg->resume)) st = ensure_ckpt(t);
    if (!st) st = cfg->resume ? hp_dist_ckpt_load(t->ck, cfg->resume, 1) : init_params(t);
    if (!st) st = check_finite(t, cfg->resume ? "the checkpoint" : "the initial weights");
    /* outputs written later are checked now, not at the first save */
    if (!st && t->lead && cfg->ckpt_dir && cfg->ckpt_dir[0]) st = hp_outpath_check_dir(cfg->ckpt_dir, "the checkpoint directory");
    if (!st && cfg->trace && cfg->trace[0]) st = hp_outpath_make_file_dir(cfg->trace, "the trace file prefix");
    if (!st && t->lead && cfg->metrics && cfg->metrics[0]) {
        long dropped = 0;
        st = hp_metrics_open(&t->metrics, &dropped, cfg->metrics, cfg->resume ? cfg->start_step : -1);
        if (!st && dropped)
            emit_text(t, HP_TRAIN_NOTE, "%s: dropped %ld line%s written after step %ld (the run resumed from there)",
                      cfg->metrics, dropped, dropped == 1 ? "" : "s", cfg->start_step);
    }
    if (!st) t->vote = multiproc(t) && ((cfg->metrics && cfg->metrics[0]) || (cfg->trace && cfg->trace[0]));
    if (t->d) st = agree(t, st, "to set up the run");
    if (st) {
        hp_trainer_destroy(t);
        return st;
    }
    *out = t;
    return HP_OK;
}

void hp_trainer_destroy(hp_trainer *t) {
    if (!t) return;
    hp_status_free(hp_metrics_close(t->metrics)); /* an error path: the run's error says more */
    hp_ckpt_lock_release(t->lock);
    if (t->d && hp_dist_abandoned(t->d)) { /* rank-threads left running may still use all of it */
        if (t->own_world) hp_comm_world_destroy(t->world); /* MPI: ends the job; else frees nothing */
        return;
    }
    hp_vmuon_free(t->vmuon);
    hp_validate_report_free(&t->vrep);
    hp_validate_destroy(t->v);
    hp_dist_ckpt_destroy(t->ck);
    if (t->rs && t->d)
        for (int i = 0; i < hp_dist_nranks(t->d); i++) hp_trace_destroy(t->rs[i].trace);
    free(t->rs);
    hp_dist_destroy(t->d);
    if (t->own_world) hp_comm_world_destroy(t->world);
    free(t->tokens), free(t->targets);
    free(t);
}

hp_dist *hp_trainer_dist(hp_trainer *t) { return t->d; }

/* ---- the loop ---- */

static hp_status train_step(hp_trainer *t, long step, float lr) {
    hp_optim_phase_lrs(t->lrs, &t->cfg.optim, lr);
    t->step_t = (int32_t)(step + 1);
    t->eval = 0;
    for (int i = 0; i < hp_dist_nranks(t->d); i++) t->rs[i].prof[0] = t->rs[i].prof[1] = t->rs[i].opt_s = 0;
    return hp_dist_run(t->d, rank_step, t);
}

hp_status hp_trainer_step(hp_trainer *t, const int32_t *tokens, const int32_t *targets, long step, float lr,
                          float *loss, float *grad_norm) {
    size_t n = (size_t)hp_shape_numel(&t->cfg.model->vals[t->cfg.tokens].shape) * (size_t)t->accum;
    memcpy(t->tokens, tokens, n * sizeof(int32_t));
    memcpy(t->targets, targets, n * sizeof(int32_t));
    HP_TRY(train_step(t, step, lr));
    if (loss) *loss = t->rs[0].loss;
    if (grad_norm) *grad_norm = (float)sqrt(t->rs[0].sumsq);
    return HP_OK;
}

static hp_status validate_step(hp_trainer *t) {
    HP_TRY(hp_dist_run(t->d, rank_inputs, t));
    hp_validate_config vc = {.g = hp_dist_global(t->d), .d = t->d, .threads = t->cfg.threads};
    HP_TRY(hp_validate_create(&t->v, &vc));
    hp_validate_report_free(&t->vrep);
    hp_status st = hp_validate_step(t->v, &t->vrep);
    if (!st) st = hp_validate_gradients(t->v, &t->vrep);
    if (!st) st = ensure_ckpt(t); /* the optimizer check reads tensors whole through it */
    if (!st) st = hp_vmuon_before(&t->vmuon, t->d, t->ck, t->v, &t->cfg.optim, t->cfg.compile.max_norm, t->cfg.threads);
    t->validated = !st;
    return st;
}

/* After the validated step's optimizer phase: Muon's updates checked, then
 * the report (st: the step's own status). */
static hp_status validate_finish(hp_trainer *t, hp_status st) {
    if (!st && t->vmuon) st = hp_vmuon_check(t->vmuon, &t->vrep, t->lrs[1]);
    if (!st) {
        hp_train_event e = {.kind = HP_TRAIN_VALIDATED, .step = 1, .vrep = &t->vrep};
        emit(t, &e);
    }
    hp_vmuon_free(t->vmuon);
    t->vmuon = NULL;
    hp_validate_report_free(&t->vrep);
    hp_validate_destroy(t->v);
    t->v = NULL;
    return st;
}

static hp_status evaluate(hp_trainer *t, float *out) {
    hp_data_rewind(t->cfg.val);
    double sum = 0;
    t->eval = 1;
    /* deterministic mode: a validation step is a whole step's batch (every micro-batch, their losses as a
     * tree: the schedule's evaluation actions), so its value does not depend on the rank count either */
    for (long i = 0; i < t->cfg.val_steps; i++) {
        HP_TRY(hp_data_next(t->cfg.val, t->tokens, t->targets));
        HP_TRY(hp_dist_run(t->d, rank_step, t));
        sum += t->rs[0].loss;
    }
    t->eval = 0;
    *out = (float)(sum / (double)t->cfg.val_steps);
    return HP_OK;
}

/* A checkpoint of the current state: root/step_NNNNNN, root/latest naming it. */
static hp_status save(hp_trainer *t, const char *root, long step) {
    char dir[1100], *js = NULL;
    if (snprintf(dir, sizeof dir, "%s/step_%06ld", root, step) >= (int)sizeof dir)
        return hp_errorf("%s: the checkpoint directory's name is too long", root);
    if (t->lead && t->cfg.state_json) {
        hp_data_state ds;
        hp_data_get_state(t->cfg.train, &ds);
        HP_TRY(t->cfg.state_json(t->cfg.state_ctx, &js, step, &ds));
    }
    hp_status st = hp_dist_ckpt_save(t->ck, dir, js ? js : "{}", t->cfg.keep_last, t->cfg.lineage);
    free(js);
    if (!st) {
        hp_train_event e = {.kind = HP_TRAIN_CKPT, .step = step, .dir = dir};
        emit(t, &e);
    }
    return st;
}

static hp_status write_traces(hp_trainer *t) {
    for (int i = 0; i < hp_dist_nranks(t->d); i++)
        if (t->rs[i].trace) HP_TRY(hp_trace_write(t->rs[i].trace, t->cfg.trace));
    return HP_OK;
}

/* A failed write of an output (metrics, traces) is the run's error; with
 * on_write_error, a warning instead, once, and that output stops. */
static hp_status output_failed(hp_trainer *t, hp_status st, int *warned, const char *what) {
    if (!st || !t->cfg.on_write_error) return st;
    if (!*warned)
        emit_text(t, HP_TRAIN_WARNING, "%s; no more %s are written (--on-write-error warn)", hp_status_msg(st), what);
    *warned = 1;
    hp_status_free(st);
    return HP_OK;
}

static hp_status metrics_failed(hp_trainer *t, hp_status st) {
    if (!st) return HP_OK;
    if (t->cfg.on_write_error) {
        hp_status_free(hp_metrics_close(t->metrics));
        t->metrics = NULL;
    }
    return output_failed(t, st, &t->warned_metrics, "metrics");
}

/* The metrics record of a training step. JSON has no NaN: every figure that
 * is not finite is null, and the record is flagged "nonfinite" (runtime/metrics). */
static hp_status write_step_record(hp_trainer *t, long step, float loss, float lr, float norm, int bad, double tokens,
                                   double dt) {
    if (!t->metrics) return HP_OK;
    /* the step split on the process's first rank: kernels, exposed communication, optimizer, the rest */
    const rank_state *r0 = &t->rs[0];
    double other = dt - r0->prof[0] - r0->prof[1] - r0->opt_s;
    hp_metrics_rec rec;
    hp_metrics_rec_begin(&rec, step);
    hp_metrics_rec_num(&rec, "loss", loss, HP_METRICS_G);
    hp_metrics_rec_num(&rec, "lr", lr, HP_METRICS_G);
    hp_metrics_rec_num(&rec, "grad_norm", norm, HP_METRICS_G);
    hp_metrics_rec_num(&rec, "tokens_per_s", tokens / dt, 1);
    hp_metrics_rec_num(&rec, "step_ms", dt * 1e3, 3);
    hp_metrics_rec_num(&rec, "compute_ms", r0->prof[0] * 1e3, 3);
    hp_metrics_rec_num(&rec, "comm_ms", r0->prof[1] * 1e3, 3);
    hp_metrics_rec_num(&rec, "optimizer_ms", r0->opt_s * 1e3, 3);
    hp_metrics_rec_num(&rec, "other_ms", (other > 0 ? other : 0) * 1e3, 3);
    double mfu = t->cfg.peak_gflops > 0 ? t->flops_per_step / dt / (t->cfg.peak_gflops * 1e9) : -1;
    if (mfu >= 0 && mfu <= 1) /* the process's ranks' model FLOPs against its peak; above 1 the peak was
                                 * under-measured (a busy machine): no figure */
        hp_metrics_rec_num(&rec, "mfu", mfu, 5);
    if (t->cfg.step_metrics) {
        hp_dist_rank *first = hp_dist_rank_at(t->d, 0);
        t->cfg.step_metrics(t->cfg.step_metrics_ctx, first->prog, first->c.rg.g, &rec);
    }
    if (bad && t->cfg.on_nan) hp_metrics_rec_flag(&rec, "skipped");
    return metrics_failed(t, hp_metrics_write_rec(t->metrics, &rec));
}

/* Output errors: under MPI, every process learns of one (one vote per process)
 * before the next step, so none waits in a collective for a stopped one. */
static hp_status outputs_agree(hp_trainer *t, hp_status out, long step) {
    if (!t->vote) return out;
    char what[64];
    snprintf(what, sizeof what, "at step %ld", step);
    return agree(t, out, what);
}

hp_status hp_trainer_run(hp_trainer *t) {
    const hp_trainer_config *c = &t->cfg;
    long start = c->resume ? c->start_step : 0;
    char mb[128];
    const hp_graph *g = hp_dist_global(t->d);
    long nparams = 0;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == HP_V_PARAM) nparams += (long)hp_val_numel(g, v);
    hp_train_event se = {.kind = HP_TRAIN_START, .nparams = nparams, .ranks = hp_mesh_size(hp_dist_mesh(t->d)),
                         .ranks_here = hp_dist_nranks(t->d),
                         .mesh = hp_mesh_str(mb, sizeof mb, hp_dist_mesh(t->d)), .start_step = start};
    emit(t, &se);
    double tokens = (double)hp_shape_numel(&c->model->vals[c->tokens].shape) * t->accum;
    size_t micro_n = (size_t)hp_shape_numel(&c->model->vals[c->tokens].shape);
    double t_start = hp_now(), done_time = 0;
    long done = 0, traced = 0, trace_steps = c->trace_steps > 0 ? c->trace_steps : 1;
    int trace_on = c->trace && c->trace[0];
    hp_status st = HP_OK;
    long step = start;
    if (c->stop_at > 0 && start >= c->stop_at && start < c->steps) { /* resumed at (or past) the stop: nothing to do */
        hp_train_event pe = {.kind = HP_TRAIN_STOPPED, .step = start};
        emit(t, &pe);
        step = c->steps;
    }
    long skipped = 0; /* consecutive steps skipped (--on-nan skip-step) */
    for (; step < c->steps && !st; step++) {
        double t0 = hp_now();
        for (int m = 0; m < (c->compile.deterministic ? 1 : t->accum) && !st; m++) /* deterministic: a whole step per read */
            st = hp_data_next(c->train, t->tokens + micro_n * (size_t)m, t->targets + micro_n * (size_t)m);
        if (st) break;
        float lr = hp_lr_at(&c->lr, step, c->steps);
        if (step == start && c->validate) st = validate_step(t);
        t->tracing = trace_on && traced < trace_steps;
        if (!st) st = train_step(t, step, lr);
        if (t->v) st = validate_finish(t, st);
        t->validated = 0;
        hp_status out = HP_OK;
        if (t->tracing && ++traced == trace_steps && !st)
            out = output_failed(t, write_traces(t), &t->warned_trace, "traces");
        t->tracing = 0;
        if (st) break;
        double dt = hp_now() - t0;
        done++;
        done_time += dt;
        float loss = t->rs[0].loss, norm = (float)sqrt(t->rs[0].sumsq);
        int bad = !isfinite(loss) || !isfinite(norm);
        hp_train_event e = {.kind = HP_TRAIN_STEP, .step = step + 1, .loss = loss, .lr = lr, .grad_norm = norm,
                            .nonfinite = bad, .tokens_per_s = tokens / dt, .step_ms = dt * 1e3,
                            .eta_s = (double)(c->steps - step - 1) * done_time / (double)done};
        emit(t, &e);
        if (!out) out = write_step_record(t, step + 1, loss, lr, norm, bad, tokens, dt);
        skipped = bad ? skipped + 1 : 0;
        if (bad && c->on_nan && skipped >= (c->max_skipped > 0 ? c->max_skipped : 10)) {
            hp_status_free(out);
            st = hp_errorf("step %ld: %ld consecutive steps with a non-finite loss or gradient norm were skipped: the "
                           "run has diverged and stops (--max-skipped-steps %d)",
                           step + 1, skipped, c->max_skipped > 0 ? c->max_skipped : 10);
            break;
        }
        if (bad && !c->on_nan) {
            hp_status_free(out);
            st = hp_errorf("step %ld: loss %g, gradient norm %g: not finite; the run stops without writing a "
                           "checkpoint of this state (--on-nan skip-step skips such steps)",
                           step + 1, (double)loss, (double)norm);
            break;
        }
        int last = step + 1 == c->steps, stop = c->stop_at > 0 && step + 1 >= c->stop_at;
        if (c->val && ((c->val_every > 0 && (step + 1) % c->val_every == 0) || last)) {
            float vl = 0;
            st = evaluate(t, &vl);
            if (st) break;
            hp_train_event ve = {.kind = HP_TRAIN_VAL, .step = step + 1, .val_loss = vl};
            emit(t, &ve);
            if (!out && t->metrics) {
                hp_metrics_rec rec;
                hp_metrics_rec_begin(&rec, step + 1);
                hp_metrics_rec_num(&rec, "val_loss", vl, HP_METRICS_G);
                out = metrics_failed(t, hp_metrics_write_rec(t->metrics, &rec));
            }
        }
        st = outputs_agree(t, out, step + 1);
        if (st) break;
        if (c->ckpt_dir && c->ckpt_dir[0] && ((c->ckpt_every > 0 && (step + 1) % c->ckpt_every == 0) || last || stop))
            st = save(t, c->ckpt_dir, step + 1);
        if (!st && stop) {
            hp_train_event pe = {.kind = HP_TRAIN_STOPPED, .step = step + 1};
            emit(t, &pe);
            break;
        }
    }
    if (!st) {
        hp_status out = HP_OK;
        if (trace_on && traced > 0 && traced < trace_steps)
            out = output_failed(t, write_traces(t), &t->warned_trace, "traces");
        if (!out && t->metrics) {
            hp_metrics *m = t->metrics;
            t->metrics = NULL;
            out = metrics_failed(t, hp_metrics_close(m));
        }
        st = outputs_agree(t, out, step);
    }
    if (!st) {
        hp_train_event de = {.kind = HP_TRAIN_DONE, .steps_done = done, .seconds = hp_now() - t_start,
                             .tokens_per_s = done_time > 0 ? tokens * (double)done / done_time : 0};
        emit(t, &de);
    }
    return st;
}

/* ---- a loop of the caller's own (hp_trainer_step) ---- */

/* 1 when a and b name one directory (the same path, or the same inode). */
static int same_dir(const char *a, const char *b) {
    if (!strcmp(a, b)) return 1;
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

hp_status hp_trainer_save(hp_trainer *t, const char *ckpt_dir, long step) {
    hp_status st = ensure_ckpt(t);
    const char *own = t->cfg.ckpt_dir;
    if (!st && own && own[0] && same_dir(own, ckpt_dir)) return save(t, own, step);
    /* another directory: locked (a run writing there refuses) and recovered for this save only */
    hp_ckpt_lock *lock = NULL;
    long stale = 0;
    hp_ckpt_recovery r;
    if (!st && t->lead) st = hp_ckpt_lock_acquire(&lock, &stale, ckpt_dir);
    if (!st && t->lead) st = hp_ckpt_recover(&r, ckpt_dir);
    st = agree(t, st, "to save a checkpoint");
    if (!st) st = save(t, ckpt_dir, step);
    hp_ckpt_lock_release(lock);
    return st;
}

hp_status hp_trainer_load(hp_trainer *t, const hp_ckpt *ck, long step) {
    HP_TRY(ensure_ckpt(t));
    HP_TRY(hp_dist_ckpt_load(t->ck, ck, 1));
    HP_TRY(check_finite(t, "the checkpoint"));
    t->cfg.start_step = step;
    return HP_OK;
}

hp_status hp_trainer_agree(hp_trainer *t, hp_status st, const char *what) { return agree(t, st, what); }

hp_status hp_trainer_ckpt(hp_dist_ckpt **out, hp_trainer *t) {
    *out = NULL;
    HP_TRY(ensure_ckpt(t));
    *out = t->ck;
    return HP_OK;
}
