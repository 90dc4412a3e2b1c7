/* tools/dist_train: the distributed training loop of `hyperpar train` (a plan
 * given by --plan or --dp/--tp). The model graph is built with global shapes,
 * differentiated, and compiled for every rank this process hosts (threads);
 * under mpirun every process is a supernode hosting its share of the mesh.
 * Every rank steps its own optimizer on its parameter pieces; gradients
 * arrive already reduced into each parameter's layout. The global gradient
 * norm (for clipping) counts every element once: a rank weights each piece by
 * 1 / (number of ranks holding a replica of it) before the sums are added.
 * Checkpoints (tools/dist_ckpt) are saved at the same steps as the
 * single-process loop's, and a resumed run continues bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "core/autodiff.h"
#include "ckpt_state.h"
#include "dist_ckpt.h"
#include "dist_session.h"
#include "dist_train.h"
#include "kernels/kernels.h"
#include "ops/ops.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "progress.h"
#include "runtime/dist.h"
#include "runtime/validate.h"
#include "session.h"

typedef struct {
    hp_optimizer *opt;
    float *clip_weight; /* per local parameter */
    float loss;
    float norm;
} rank_state;

typedef struct {
    const train_opts *o;
    const hp_dist_train_ctx *ctx;
    hp_dist_session s;
    hp_gpt2_config m; /* = s.m */
    hp_gpt2_io io;    /* = s.io */
    hp_graph *g;      /* = s.g */
    hp_comm_world *world;
    hp_dist *d;
    rank_state *rs;
    hp_dist_ckpt *ck; /* when saving or resuming */
    hp_data *train, *val;
    int32_t *tokens, *targets;
    float lr;
    int eval;      /* 1: forward only */
    int validated; /* 1: the validation executor ran this step's forward and backward */
} dist_trainer;

static hp_status rank_inputs(hp_dist_rank *r, void *c_) {
    dist_trainer *t = c_;
    hp_dist_scatter_value(t->d, r, t->io.tokens, hp_program_data(r->prog, r->rg.map[t->io.tokens]), t->tokens);
    hp_dist_scatter_value(t->d, r, t->io.targets, hp_program_data(r->prog, r->rg.map[t->io.targets]), t->targets);
    return HP_OK;
}

static hp_status rank_step(hp_dist_rank *r, void *c_) {
    dist_trainer *t = c_;
    rank_state *st = r->user;
    if (!t->validated) {
        HP_TRY(rank_inputs(r, c_));
        HP_TRY(hp_program_run(r->prog, HP_PHASE_FWD));
    }
    st->loss = ((float *)hp_program_data(r->prog, r->rg.loss))[0];
    if (t->eval) return HP_OK;
    if (!t->validated) HP_TRY(hp_program_run(r->prog, HP_PHASE_BWD));
    /* global gradient norm: weighted local sums, added over the world */
    float *grads = hp_program_grads(r->prog);
    double local = 0;
    for (int k = 0; k < r->ps.n; k++)
        local += st->clip_weight[k] * hp_k_sumsq(r->pool, grads + r->ps.offset[k], (long)hp_param_numel(&r->ps, k));
    float sum = (float)local, total = 0;
    HP_TRY(hp_comm_all_reduce(r->rg.ctx.comm, hp_comm_world_group(t->world), &total, &sum, 1, HP_F32, HP_COMM_SUM));
    st->norm = sqrtf(total);
    /* clipping is folded into the optimizer's read of the gradients */
    hp_optimizer_set_grad_scale(st->opt, hp_clip_scale(sqrt((double)total), t->o->grad_clip));
    hp_optimizer_step(st->opt, t->lr);
    return HP_OK;
}

static hp_status setup(dist_trainer *t) {
    const train_opts *o = t->o;
    const hp_ckpt *resume = t->ctx->resume;
    hp_gpt2_config m = {o->layers, o->heads, o->channels, o->vocab, 0, o->max_seq};
    if (t->ctx->model)
        m = *t->ctx->model;
    else if (o->init[0])
        HP_TRY(hp_llmc_model_config(&m, o->init));
    hp_plan plan;
    HP_TRY(hp_train_plan(&plan, o));
    HP_TRY(hp_dist_session_create(&t->s, &m, &plan, o->batch, o->seq, o->threads, o->comm_timeout));
    t->m = t->s.m, t->io = t->s.io, t->g = t->s.g, t->world = t->s.world, t->d = t->s.d;
    if (!resume) HP_TRY(hp_dist_session_init_params(&t->s, o->seed, o->init));

    hp_optim_config oc;
    HP_TRY(hp_train_optim_config(&oc, o));
    int nr = hp_dist_nranks(t->d);
    t->rs = calloc((size_t)nr, sizeof *t->rs);
    if (!t->rs) return hp_errorf("out of memory");
    const hp_propagation *prop = hp_dist_propagation(t->d);
    const hp_mesh *mesh = hp_dist_mesh(t->d);
    for (int i = 0; i < nr; i++) {
        hp_dist_rank *r = hp_dist_rank_at(t->d, i);
        rank_state *rs = &t->rs[i];
        r->user = rs;
        hp_opt_param *p = calloc((size_t)r->ps.n, sizeof *p);
        rs->clip_weight = calloc((size_t)r->ps.n, sizeof *rs->clip_weight);
        if (!p || !rs->clip_weight) {
            free(p);
            return hp_errorf("out of memory");
        }
        for (int k = 0; k < r->ps.n; k++) {
            int v = hp_graph_find(t->g, r->ps.name[k]);
            const hp_layout *l = &prop->val[v];
            int replicas = 1, sharded = 0;
            for (int a = 0; a < l->ndim; a++) {
                if (l->p[a].kind == HP_REPLICATE) replicas *= mesh->size[a];
                if (l->p[a].kind == HP_SHARD && mesh->size[a] > 1) sharded = 1;
            }
            rs->clip_weight[k] = 1.0f / (float)replicas;
            p[k] = (hp_opt_param){r->ps.name[k], hp_param_ptr(&r->ps, k), hp_program_grads(r->prog) + r->ps.offset[k],
                                  r->ps.shape[k], r->ps.hidden_matrix[k]};
            if (sharded && oc.kind == HP_OPT_MUON && r->ps.hidden_matrix[k]) {
                free(p);
                return hp_errorf("hyperpar train: Muon on the sharded matrix '%s' needs distributed Muon (not built "
                                 "yet); use --optimizer adamw or --adamw-params '%s'",
                                 r->ps.name[k], r->ps.name[k]);
            }
        }
        hp_status st = hp_optimizer_create(&rs->opt, &oc, p, r->ps.n, r->pool);
        free(p);
        if (st) return st;
    }
    HP_TRY(hp_train_open_data(&t->train, o, &t->m, 0));
    HP_TRY(hp_train_open_data(&t->val, o, &t->m, 1));
    if (o->ckpt_dir[0] || resume) {
        hp_optimizer **opts = malloc(sizeof *opts * (size_t)nr);
        if (!opts) return hp_errorf("out of memory");
        for (int i = 0; i < nr; i++) opts[i] = t->rs[i].opt;
        hp_status st = hp_dist_ckpt_create(&t->ck, t->d, t->g, opts);
        free(opts);
        HP_TRY(st);
    }
    if (resume) {
        HP_TRY(hp_dist_ckpt_load(t->ck, resume, t->ctx->start_step)); /* errors name the file */
        const hp_json *dj = hp_json_get(resume->state, "data");
        hp_data_state ds;
        hp_status st = dj ? hp_data_state_from_json(&ds, dj) : hp_errorf("missing key 'data'");
        if (!st) st = hp_data_set_state(t->train, &ds);
        if (st) return hp_error_wrap(st, "%s/state.json: data", t->ctx->resume_dir);
    }
    t->tokens = calloc((size_t)o->batch * (size_t)o->seq, sizeof(int32_t));
    t->targets = calloc((size_t)o->batch * (size_t)o->seq, sizeof(int32_t));
    if (!t->tokens || !t->targets) return hp_errorf("out of memory");
    return HP_OK;
}

/* --validate: this step's forward and backward run through the validation
 * executor (every operator checked against one rank), then the gradient
 * table; training then continues from the gradients it left. */
static hp_status validate_step(dist_trainer *t, int lead) {
    HP_TRY(hp_dist_run(t->d, rank_inputs, t));
    hp_validator *v;
    hp_validate_config vc = {.g = t->g, .d = t->d, .threads = t->o->threads};
    HP_TRY(hp_validate_create(&v, &vc));
    hp_validate_report rep = {0};
    hp_status st = hp_validate_step(v, &rep);
    if (!st) st = hp_validate_gradients(v, &rep);
    if (!st && lead) {
        printf("validation: %d operators checked, every layout and value agrees (%d redistributions, %d values; loss "
               "%.6f, 1 rank %.6f)\n",
               rep.nops, rep.nredist, rep.nvalues, (double)rep.loss, (double)rep.ref_loss);
        printf("validation: gradient equivalence against 1 rank (max relative error per parameter):\n");
        for (int i = 0; i < rep.ngrads; i++)
            printf("  %-28s %-20s %.3g\n", rep.grads[i].name, rep.grads[i].layout, rep.grads[i].rel_err);
        printf("validation: worst gradient relative error %.3g (%s)\n", rep.worst,
               rep.worst_index >= 0 ? rep.grads[rep.worst_index].name : "-");
        fflush(stdout);
    }
    hp_validate_report_free(&rep);
    hp_validate_destroy(v);
    t->validated = !st;
    return st;
}

/* Every process calls it; the one hosting rank 0 writes. */
static hp_status save_checkpoint(dist_trainer *t, long step, int lead, hp_progress *pg) {
    char dir[1100], *js = NULL;
    snprintf(dir, sizeof dir, "%s/step_%06ld", t->o->ckpt_dir, step);
    if (lead) {
        hp_data_state ds;
        hp_data_get_state(t->train, &ds);
        HP_TRY(hp_train_state_json(&js, step, &t->m, &ds, t->ctx->tab, t->ctx->ntab));
    }
    hp_status st = hp_dist_ckpt_save(t->ck, dir, js);
    free(js);
    if (!st && lead) hp_progress_note(pg, "checkpoint: %s", dir);
    return st;
}

static hp_status run(dist_trainer *t) {
    const train_opts *o = t->o;
    hp_lr_schedule sched = {.lr = o->lr, .warmup_steps = o->warmup, .min_lr_frac = o->min_lr_frac};
    HP_TRY(hp_lr_kind_parse(&sched, o->schedule));
    HP_TRY(hp_lr_schedule_check(&sched));
    int lead = hp_dist_session_lead(&t->s);
    FILE *metrics = NULL;
    long start = t->ctx->resume ? t->ctx->start_step : 0;
    if (lead && o->metrics[0]) {
        metrics = fopen(o->metrics, t->ctx->resume ? "a" : "w");
        if (!metrics) return hp_errorf("%s: cannot open the metrics file for writing", o->metrics);
    }
    hp_progress pg;
    hp_progress_init(&pg, stdout, o->steps, (int)(o->log_every > 0 ? o->log_every : 1));
    char mb[128];
    if (lead)
        hp_progress_note(&pg, "model: L=%d NH=%d C=%d V=%d, %.2fM parameters; B=%d T=%d; mesh %s (%d ranks, %d here), %s",
                         t->m.L, t->m.NH, t->m.C, t->m.V, hp_gpt2_num_params(&t->m) / 1e6, o->batch, o->seq,
                         hp_mesh_str(mb, sizeof mb, hp_dist_mesh(t->d)), hp_mesh_size(hp_dist_mesh(t->d)),
                         hp_dist_nranks(t->d), o->optimizer);
    if (lead && start) hp_progress_note(&pg, "resumed at step %ld", start);
    double tokens = (double)o->batch * o->seq, done_time = 0;
    hp_status st = HP_OK;
    for (long step = start; step < o->steps && !st; step++) {
        double t0 = hp_now();
        st = hp_data_next(t->train, t->tokens, t->targets);
        if (st) break;
        t->lr = hp_lr_at(&sched, step, o->steps);
        t->eval = 0;
        if (step == 0 && o->validate) st = validate_step(t, lead);
        if (!st) st = hp_dist_run(t->d, rank_step, t);
        t->validated = 0;
        if (st) break;
        double dt = hp_now() - t0;
        done_time += dt;
        float loss = t->rs[0].loss;
        if (lead) {
            hp_progress_step(&pg, step + 1, loss, tokens / dt, dt * 1e3, t->lr,
                             (double)(o->steps - step - 1) * done_time / (double)(step + 1 - start));
            if (metrics) {
                fprintf(metrics,
                        "{\"step\": %ld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, \"tokens_per_s\": %.1f, "
                        "\"step_ms\": %.3f}\n",
                        step + 1, (double)loss, (double)t->lr, (double)t->rs[0].norm, tokens / dt, dt * 1e3);
                fflush(metrics);
            }
        }
        if ((o->val_every > 0 && (step + 1) % o->val_every == 0) || step + 1 == o->steps) {
            hp_data_rewind(t->val);
            double sum = 0;
            t->eval = 1;
            for (long i = 0; i < o->val_steps && !st; i++) {
                st = hp_data_next(t->val, t->tokens, t->targets);
                if (!st) st = hp_dist_run(t->d, rank_step, t);
                sum += t->rs[0].loss;
            }
            if (!st && lead) {
                hp_progress_note(&pg, "step %ld: val loss %.4f", step + 1, sum / (double)o->val_steps);
                if (metrics) fprintf(metrics, "{\"step\": %ld, \"val_loss\": %.9g}\n", step + 1, sum / (double)o->val_steps);
            }
        }
        int last = step + 1 == o->steps, stop = o->stop_at > 0 && step + 1 >= o->stop_at;
        if (!st && o->ckpt_dir[0] && ((o->ckpt_every > 0 && (step + 1) % o->ckpt_every == 0) || last || stop))
            st = save_checkpoint(t, step + 1, lead, &pg);
        if (!st && stop) {
            if (lead) hp_progress_note(&pg, "stopped at step %ld of %ld (--stop-at)", step + 1, o->steps);
            break;
        }
    }
    hp_progress_done(&pg);
    if (metrics) fclose(metrics);
    return st;
}

static void cleanup(dist_trainer *t) {
    hp_dist_ckpt_destroy(t->ck);
    if (t->rs)
        for (int i = 0; i < hp_dist_nranks(t->d); i++) {
            hp_optimizer_destroy(t->rs[i].opt);
            free(t->rs[i].clip_weight);
        }
    free(t->rs);
    hp_dist_session_destroy(&t->s);
    hp_data_close(t->train);
    hp_data_close(t->val);
    free(t->tokens), free(t->targets);
}

hp_status hp_train_distributed(const train_opts *o, const hp_dist_train_ctx *ctx) {
    dist_trainer t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.ctx = ctx;
    hp_status st = setup(&t);
    if (!st) st = run(&t);
    cleanup(&t);
    return st;
}
