/* tools/train_opts: the settings of a training run (flags and config file
 * keys), their defaults and checks. Shared by `hyperpar train` and `hyperpar
 * plan`. */
#ifndef HP_TOOLS_TRAIN_OPTS_H
#define HP_TOOLS_TRAIN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"

#define HP_DEFAULT_DATA "/usr/share/common-licenses/*"

typedef struct {
    int layers, heads, channels, vocab, max_seq;
    char init[512];
    char data[512], val_data[512], data_kind[16];
    float val_fraction;
    int shuffle;
    int batch, seq;
    long steps;
    float lr, beta1, beta2, eps, weight_decay, grad_clip, min_lr_frac;
    int grad_accum;
    char grad_accum_comm[8];
    int deterministic, det_slices; /* the deterministic mode: --batch in det_slices micro-slices (0: 8) */
    char schedule[16];
    long warmup;
    char optimizer[16];
    float muon_lr, muon_beta, muon_weight_decay;
    char muon_momentum[16], muon_scale[16], ns[16], muon_params[256], adamw_params[256];
    uint64_t seed;
    int threads;
    char metrics[512];
    long val_every, val_steps, ckpt_every, log_every, stop_at;
    char ckpt_dir[512], resume[512];
    int keep_last, overwrite;
    char on_write_error[16];
    char ckpt_format[16];
    /* parallelism */
    char plan[512];
    int dp, tp;
    int fsdp, zero, prefetch;   /* FSDP over --fsdp ranks; ZeRO level; units gathered ahead */
    char hsdp[32];              /* "R,S": R replicas x S shards */
    char fsdp_style[16], reshard[8];
    char fsdp_reduce[8];        /* fp32 | bf16: FSDP's gradient reduce-scatters */
    char fsdp_gather[8];        /* fp32 | bf16: FSDP's parameter all-gathers */
    char bf16_params[8];        /* gemm | all: which parameters reach compute in bf16 */
    char dp_reduce[8];          /* fp32 | bf16: the data-parallel gradient all-reduces */
    int validate;
    char dtype[8];              /* fp32 | bf16 */
    char fp32_gemm[12];         /* openblas | onednn | auto */
    float comm_timeout;
    float memory;               /* GB this process may use (0: detect; < 0: no check) */
    char overlap[8];
    char on_nan[16];
    int max_skipped_steps;
    /* tracing */
    char trace[512];
    /* the run directory ("" : runs/<timestamp> unless --metrics is given; "none": none) */
    char run_dir[512];
    float run_refresh;  /* seconds between rewrites of run.json while steps go by */
    long trace_steps;
} train_opts;

/* Room for the option table in its callers (hp_train_opt_table(NULL, o) must not exceed it). */
#define HP_TRAIN_MAX_OPTS 96

/* The groups an option belongs to (hp_train_optdef.groups). */
#define HP_TRAIN_OPT_FROZEN 1u     /* must not change on resume */
#define HP_TRAIN_OPT_PLAN 2u       /* a plan setting: one given on resume replaces the checkpoint's plan as a whole */
#define HP_TRAIN_OPT_INVOCATION 4u /* an output of one invocation: a resumed run does not inherit it */
#define HP_TRAIN_OPT_UNSAVED 8u    /* not kept in a checkpoint's state.json args */

/* One option, defined once: the flag and config-file key, `hyperpar train
 * --help`, state.json's args and the checks are all made from these. */
typedef struct {
    const char *name;  /* without "--" */
    hp_opt_type type;
    size_t offset;     /* of its field in train_opts */
    size_t size;       /* of that field (a string's buffer) */
    const char *def;   /* the default, as a flag would give it */
    const char *range; /* NULL: none (or a check of its own in hp_train_check); "a|b": one of the choices; ">= X",
                        * "> X" (text after X goes into the error), "[A, B)", "[A, B]" or "A..B" */
    unsigned groups;   /* HP_TRAIN_OPT_* */
    const char *help;
} hp_train_optdef;

/* The definitions, in table order; returns their count. */
int hp_train_optdefs(const hp_train_optdef **out);
/* The definition of option `name`, or NULL. */
const hp_train_optdef *hp_train_optdef_find(const char *name);
/* 1 when option `name` belongs to one of the groups in `group`. */
int hp_train_opt_in(const char *name, unsigned group);

/* Every option at its default. */
void hp_train_defaults(train_opts *o);
/* The option table over o (tab may be NULL to count); returns the count. */
int hp_train_opt_table(hp_opt *tab, train_opts *o);
/* Each option's range (its definition), then the checks across options. */
hp_status hp_train_check(const train_opts *o);
/* The model's batch and the micro-batches per step: --batch and --grad-accum,
 * or in the deterministic mode the split of --batch into its slices. */
hp_status hp_train_micro_batch(int *batch, int *grad_accum, const train_opts *o);
/* Before parsing: the model shape flags marked as not given (HP_SHAPE_UNSET),
 * so that hp_train_shape_resolve can tell a flag given from a default. */
#define HP_SHAPE_UNSET (-2147483647 - 1)
void hp_train_shape_unset(train_opts *o);
/* After parsing: with init (the shape of the --init file init_path) every
 * shape flag given must agree with it, and the shape becomes init's; without,
 * a flag not given takes its default. */
hp_status hp_train_shape_resolve(train_opts *o, const hp_model_config *init, const char *init_path, const char *cmd);
/* 1 when the run is distributed (--plan, or --dp/--tp/--fsdp/--hsdp above 1). */
int hp_train_is_distributed(const train_opts *o);
/* The run's plan: --plan FILE, else GPT-2's over --dp/--tp, with FSDP from
 * --fsdp/--hsdp/--zero (prog names the command in errors). */
hp_status hp_train_plan(hp_shard_plan **out, const train_opts *o, const char *prog);
/* The plan in a few words: "1 rank", "dp 2 x tp 2", "fsdp 4", "hsdp 2,2",
 * "zero-1 x dp 2", "plan file F". */
void hp_train_plan_describe(char *buf, size_t n, const train_opts *o);

#endif
