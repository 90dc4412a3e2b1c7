/* tools/train_opts: the settings of `hyperpar train` (see the header). */
#include "train_opts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Groups (hp_train_optdef.groups). */
#define FROZEN HP_TRAIN_OPT_FROZEN
#define PLAN HP_TRAIN_OPT_PLAN
#define ONCE HP_TRAIN_OPT_INVOCATION
#define UNSAVED HP_TRAIN_OPT_UNSAVED

/* Every option of `hyperpar train` and `hyperpar plan`, defined once: name, type, field of train_opts, default
 * (as a flag would give it), range (checked by hp_train_check; NULL: none, or a check of its own there), groups
 * and help. Flags, --help, config-file keys, state.json's args and the resume rules all come from this table. */
#define STR_(x) #x
#define STR(x) STR_(x) /* a number's macro as the default's text */
#define D(n, t, f, def, range, groups, h) {n, t, offsetof(train_opts, f), sizeof((train_opts *)0)->f, def, range, groups, h}
static const hp_train_optdef defs[] = {
    D("layers", OPT_INT, layers, "4", NULL, FROZEN, "transformer blocks (L)"),
    D("heads", OPT_INT, heads, "4", NULL, FROZEN, "attention heads (NH)"),
    D("channels", OPT_INT, channels, "128", NULL, FROZEN, "model width (C)"),
    D("vocab", OPT_INT, vocab, "256", NULL, FROZEN, "vocabulary size V (256 for raw text)"),
    D("max-seq", OPT_INT, max_seq, "128", NULL, FROZEN, "position table length (maxT)"),
    D("init", OPT_STR, init, "", NULL, UNSAVED, "start from an llm.c checkpoint (sets the model shape)"),
    D("data", OPT_STR, data, HP_DEFAULT_DATA, NULL, FROZEN, "training data: llm.c token shards (file or glob) or text"),
    D("data-kind", OPT_STR, data_kind, "auto", "auto|tokens|text", FROZEN,
      "auto | tokens | text (auto: token shards by their magic; text only for a file not named .bin with --vocab 256)"),
    D("val-data", OPT_STR, val_data, "", NULL, 0, "validation data (default: the last --val-fraction of --data)"),
    D("val-fraction", OPT_FLOAT, val_fraction, "0.1", "[0, 1)", 0, "share of --data held out for validation"),
    D("shuffle", OPT_FLAG, shuffle, "0", NULL, FROZEN, "visit B*T windows in a seeded random order per epoch"),
    D("batch", OPT_INT, batch, "8", ">= 1", FROZEN, "sequences per step (B)"),
    D("seq", OPT_INT, seq, "128", ">= 1", FROZEN, "tokens per sequence (T)"),
    D("steps", OPT_LONG, steps, "300", ">= 1", 0, "optimizer steps"),
    D("lr", OPT_FLOAT, lr, "0.001", "> 0", 0, "peak learning rate (AdamW)"),
    D("beta1", OPT_FLOAT, beta1, "0.9", "[0, 1)", 0, "AdamW beta1"),
    D("beta2", OPT_FLOAT, beta2, "0.95", "[0, 1)", 0, "AdamW beta2"),
    D("eps", OPT_FLOAT, eps, "1e-08", "> 0", 0, "AdamW epsilon"),
    D("weight-decay", OPT_FLOAT, weight_decay, "0", ">= 0", 0, "decoupled weight decay"),
    D("grad-clip", OPT_FLOAT, grad_clip, "1", ">= 0", 0, "clip the global gradient norm (0 = off)"),
    D("grad-accum", OPT_INT, grad_accum, "0", NULL, 0, "micro-batches of --batch per optimizer step (gradients averaged)"),
    D("grad-accum-comm", OPT_STR, grad_accum_comm, "every", "every|last", 0,
      "every | last: FSDP reduces every micro-batch (sharded accumulators) or only the last (whole-unit accumulators)"),
    D("deterministic", OPT_FLAG, deterministic, "0", NULL, 0,
      "the same losses bit for bit at 1, 2, 4, ... ranks (pure DP, FSDP, ZeRO): --batch in --det-slices "
      "micro-slices, sums in one fixed tree"),
    D("det-slices", OPT_INT, det_slices, "0", NULL, 0,
      "micro-slices of --batch per step in deterministic mode (a power of two the rank count divides; 0: 8; implies "
      "--deterministic)"),
    D("schedule", OPT_STR, schedule, "cosine", NULL, 0, "constant | cosine | linear"),
    D("warmup", OPT_LONG, warmup, "20", ">= 0", 0, "linear warmup steps (not given: --steps / 10, at most 20)"),
    D("min-lr-frac", OPT_FLOAT, min_lr_frac, "0.1", "[0, 1]", 0, "final lr as a fraction of the peak"),
    D("optimizer", OPT_STR, optimizer, "adamw", NULL, FROZEN, "adamw | muon (hidden matrices by Muon, the rest AdamW)"),
    D("muon-lr", OPT_FLOAT, muon_lr, "0.02", "> 0", 0, "Muon peak learning rate"),
    D("muon-beta", OPT_FLOAT, muon_beta, "0.95", "[0, 1)", 0, "Muon momentum"),
    D("muon-weight-decay", OPT_FLOAT, muon_weight_decay, "0", ">= 0", 0, "Muon weight decay"),
    D("muon-momentum", OPT_STR, muon_momentum, "ema", NULL, 0, "ema | sum"),
    D("muon-scale", OPT_STR, muon_scale, "keller", NULL, 0, "keller | moonlight"),
    D("ns", OPT_STR, ns, "quintic", NULL, 0, "Newton-Schulz coefficients: quintic | perstep | polar"),
    D("muon-params", OPT_STR, muon_params, "", NULL, 0, "extra parameters for Muon (comma-separated globs)"),
    D("adamw-params", OPT_STR, adamw_params, "", NULL, 0, "parameters kept on AdamW (comma-separated globs)"),
    D("seed", OPT_U64, seed, "1337", NULL, FROZEN, "random seed (initialisation and data order)"),
    D("threads", OPT_INT, threads, "2", "1..256", 0, "compute threads"),
    D("metrics", OPT_STR, metrics, "", NULL, 0, "append one JSON object per step to this file"),
    D("val-every", OPT_LONG, val_every, "100", ">= 0 (0: only at the end)", 0,
      "validate every N steps (0 = only at the end)"),
    D("val-steps", OPT_LONG, val_steps, "10", ">= 1", 0, "validation batches"),
    D("ckpt-every", OPT_LONG, ckpt_every, "0", ">= 0 (0: only at the end)", 0,
      "checkpoint every N steps (needs --ckpt-dir)"),
    D("ckpt-dir", OPT_STR, ckpt_dir, "", NULL, ONCE,
      "directory for checkpoints (step_NNNNNN and 'latest'; default: the run directory's ckpt/, or where --resume "
      "resumed from; none: no checkpoints)"),
    D("keep-last", OPT_INT, keep_last, "0", ">= 0", 0, "keep only the K newest checkpoints in --ckpt-dir (0 = all)"),
    D("ckpt-format", OPT_STR, ckpt_format, "single", "single|sharded", 0,
      "single (whole tensors, written by rank 0's process) | sharded (every rank writes its pieces)"),
    D("resume", OPT_STR, resume, "", NULL, ONCE | UNSAVED,
      "continue from a checkpoint, a --ckpt-dir with 'latest', or a run directory; plan flags given now replace the "
      "checkpoint's plan; checkpoints go on in the directory resumed from unless --ckpt-dir says otherwise"),
    D("overwrite", OPT_FLAG, overwrite, "0", NULL, ONCE,
      "let the run write over checkpoints in --ckpt-dir past the step it starts from (a newer one than it resumed, "
      "or another run's)"),
    D("log-every", OPT_LONG, log_every, "10", ">= 1", 0, "print a line every N steps when not on a terminal"),
    D("stop-at", OPT_LONG, stop_at, "0", ">= 0 (0: none)", UNSAVED,
      "stop (with a checkpoint) once this step is done; --resume continues"),
    D("plan", OPT_STR, plan, "", NULL, PLAN, "sharding plan file (mesh and layouts; see docs/architecture.md)"),
    D("dp", OPT_INT, dp, "1", NULL, PLAN,
      "data-parallel ranks (GPT-2 plan; ranks are threads, or MPI processes x threads)"),
    D("tp", OPT_INT, tp, "1", NULL, PLAN, "tensor-parallel ranks (Megatron-style GPT-2 plan)"),
    D("fsdp", OPT_INT, fsdp, "0", NULL, PLAN, "FSDP ranks: parameters, gradients and optimizer state sharded (ZeRO-3)"),
    D("hsdp", OPT_STR, hsdp, "", NULL, PLAN, "R,S: HSDP, R replicas x S shards (shards inside a supernode)"),
    D("zero", OPT_INT, zero, "0", NULL, PLAN,
      "ZeRO level over the data-parallel ranks: 1 state, 2 + gradients, 3 + parameters"),
    D("fsdp-style", OPT_STR, fsdp_style, "hyperpar", "hyperpar|fsdp2", PLAN,
      "hyperpar | fsdp2 (the PyTorch FSDP2-like baseline)"),
    D("prefetch", OPT_INT, prefetch, "1", "0..8", PLAN, "FSDP units whose gather starts ahead of their use"),
    D("reshard", OPT_STR, reshard, "on", "on|off", PLAN, "on | off: FSDP reshard after forward (across supernodes)"),
    D("fsdp-reduce", OPT_STR, fsdp_reduce, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: FSDP reduce-scatters the gradients in this dtype (bf16: half the bytes, summed in fp32; shards "
      "and optimizer fp32)"),
    D("fsdp-gather", OPT_STR, fsdp_gather, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: FSDP all-gathers the parameters in this dtype (bf16: half the bytes, narrowed from the fp32 "
      "shards; needs --dtype bf16, implies --bf16-params all)"),
    D("dp-reduce", OPT_STR, dp_reduce, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: the data-parallel gradient all-reduces in this dtype (bf16: half the bytes, summed in fp32, still "
      "overlapped; gradients and optimizer fp32; not with --deterministic or FSDP/ZeRO)"),
    D("validate", OPT_FLAG, validate, "0", NULL, 0, "validation mode: check layouts at every operator against one rank"),
    D("dtype", OPT_STR, dtype, "fp32", "fp32|bf16", 0,
      "fp32 | bf16: bf16 compute (oneDNN GEMMs, bf16 activations) with fp32 master weights, gradients and optimizer "
      "state"),
    D("bf16-params", OPT_STR, bf16_params, "gemm", "gemm|all", 0,
      "gemm | all: with --dtype bf16, the parameters that reach compute rounded to bf16: those the bf16 GEMMs and "
      "embeddings read, or all (norm weights and biases too, as Megatron's --bf16)"),
    D("fp32-gemm", OPT_STR, fp32_gemm, "openblas", "openblas|onednn|auto", 0,
      "openblas | onednn | auto: the fp32 linear layers' GEMMs (auto: the faster per product and shape, measured at "
      "start; not bit-reproducible across runs)"),
    D("comm-timeout", OPT_FLOAT, comm_timeout, "300", NULL, 0, "seconds a collective may wait before failing"),
    D("memory", OPT_FLOAT, memory, "0", NULL, 0,
      "GB this process may use; a plan needing more is refused before allocating (0: MemAvailable or the cgroup "
      "limit; < 0: no check)"),
    D("overlap", OPT_STR, overlap, "on", "on|off", 0,
      "on | off: gradient reductions start early and wait late (schedule pass)"),
    D("on-nan", OPT_STR, on_nan, "stop", "stop|skip-step", 0,
      "stop | skip-step: a step with a NaN/Inf loss or gradient norm"),
    D("max-skipped-steps", OPT_INT, max_skipped_steps, "10", ">= 1", 0,
      "with --on-nan skip-step: this many consecutive skipped steps stop the run (it diverged)"),
    D("on-write-error", OPT_STR, on_write_error, "fail", "fail|warn", 0,
      "fail | warn: a failed metrics or trace write (warn: once, then that output stops)"),
    D("trace", OPT_STR, trace, "", NULL, UNSAVED,
      "write a Chrome/Perfetto trace per rank: FILE.rankN.json (on: DIR/trace, in the run directory)"),
    D("trace-steps", OPT_LONG, trace_steps, "1", ">= 1", UNSAVED, "steps traced (from the first)"),
    D("run-dir", OPT_STR, run_dir, "", NULL, ONCE | UNSAVED,
      "run directory: settings, plan, machine, metrics, traces (default runs/<time> without --metrics; none: off)"),
    D("run-refresh", OPT_FLOAT, run_refresh, STR(HP_RUN_REFRESH_S), ">= 0", ONCE | UNSAVED,
      "rewrite the run directory's run.json at least every this many seconds while steps go by (0: every step)"),
};
#undef D
#undef STR
#undef STR_
#undef FROZEN
#undef PLAN
#undef ONCE
#undef UNSAVED

int hp_train_optdefs(const hp_train_optdef **out) {
    *out = defs;
    return (int)(sizeof defs / sizeof defs[0]);
}

const hp_train_optdef *hp_train_optdef_find(const char *name) {
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (!strcmp(defs[i].name, name)) return &defs[i];
    return NULL;
}

int hp_train_opt_in(const char *name, unsigned group) {
    const hp_train_optdef *d = hp_train_optdef_find(name);
    return d && (d->groups & group);
}

int hp_train_opt_table(hp_opt *t, train_opts *o) {
    int n = (int)(sizeof defs / sizeof defs[0]);
    for (int i = 0; t && i < n; i++)
        t[i] = (hp_opt){defs[i].name, defs[i].type, (char *)o + defs[i].offset, defs[i].size, defs[i].help};
    return n;
}

void hp_train_defaults(train_opts *o) {
    memset(o, 0, sizeof *o);
    hp_opt t[HP_TRAIN_MAX_OPTS];
    int n = hp_train_opt_table(t, o);
    for (int i = 0; i < n; i++) {
        hp_status st = hp_args_set(t, n, t[i].name, defs[i].def, "hyperpar train: defaults");
        if (st) abort(); /* a default the table cannot read: a bug in the table */
    }
}

/* "a|b|c" as "a, b or c". */
static void choices_text(char *buf, size_t n, const char *choices) {
    size_t at = 0;
    buf[0] = 0;
    for (const char *s = choices; *s && at < n;) {
        const char *bar = strchr(s, '|');
        size_t len = bar ? (size_t)(bar - s) : strlen(s);
        const char *sep = s == choices ? "" : bar ? ", " : " or ";
        at += (size_t)snprintf(buf + at, n - at, "%s%.*s", sep, (int)len, s);
        s += len + (bar ? 1 : 0);
    }
}

static int in_choices(const char *v, const char *choices) {
    size_t len = strlen(v);
    for (const char *s = choices; *s;) {
        const char *bar = strchr(s, '|');
        size_t n = bar ? (size_t)(bar - s) : strlen(s);
        if (n == len && !strncmp(s, v, n)) return 1;
        if (!bar) break;
        s = bar + 1;
    }
    return 0;
}

/* Option d's value in o against its range: "a|b" (choices), ">= X" or "> X" (text after X is said in the error),
 * "[A, B)" or "[A, B]", or "A..B" (inclusive). */
static hp_status check_range(const hp_train_optdef *d, const train_opts *o) {
    const void *p = (const char *)o + d->offset;
    if (d->type == OPT_STR) {
        if (in_choices(p, d->range)) return HP_OK;
        char want[160];
        choices_text(want, sizeof want, d->range);
        return hp_errorf("hyperpar train: --%s must be %s, got '%s'", d->name, want, (const char *)p);
    }
    double v = d->type == OPT_INT ? *(const int *)p : d->type == OPT_LONG ? (double)*(const long *)p
                                                                            : (double)*(const float *)p;
    const char *r = d->range;
    int ok;
    if (r[0] == '>') {
        int ge = r[1] == '=';
        double lo = strtod(r + (ge ? 2 : 1), NULL);
        ok = ge ? v >= lo : v > lo;
    } else if (r[0] == '[') {
        char *end;
        double lo = strtod(r + 1, &end), hi = strtod(end + 1, &end);
        ok = v >= lo && (*end == ']' ? v <= hi : v < hi);
    } else {
        char *end; /* integers: strtod would read "1." of "1..256" */
        long lo = strtol(r, &end, 10), hi = strtol(end + 2, NULL, 10);
        ok = v >= (double)lo && v <= (double)hi;
    }
    if (ok) return HP_OK;
    const char *in = r[0] == '>' ? "" : "in ";
    if (d->type == OPT_INT) return hp_errorf("hyperpar train: --%s must be %s%s, got %d", d->name, in, r, *(const int *)p);
    if (d->type == OPT_LONG) return hp_errorf("hyperpar train: --%s must be %s%s, got %ld", d->name, in, r, *(const long *)p);
    return hp_errorf("hyperpar train: --%s must be %s%s, got %g", d->name, in, r, (double)*(const float *)p);
}

/* The most ranks a mesh of --dp x --tp may have (rank-threads of one process,
 * or processes x threads under mpirun). */
#define HP_TRAIN_MAX_RANKS 4096

hp_status hp_train_check(const train_opts *o) {
#define BAD(...) return hp_errorf("hyperpar train: " __VA_ARGS__)
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (defs[i].range) HP_TRY(check_range(&defs[i], o));
    if (o->ckpt_every > 0 && !o->ckpt_dir[0]) BAD("--ckpt-every needs --ckpt-dir");
    if (o->grad_accum < 0 || o->grad_accum > 4096) BAD("--grad-accum must be in 1..4096, got %d", o->grad_accum);
    if (o->det_slices < 0 || o->det_slices > 4096) BAD("--det-slices must be in 1..4096, got %d", o->det_slices);
    if (o->deterministic || o->det_slices) {
        if (o->tp > 1 || o->hsdp[0] || o->plan[0])
            BAD("--deterministic is built for pure data parallelism (--dp, --fsdp, --zero): not with %s",
                o->tp > 1 ? "--tp" : o->hsdp[0] ? "--hsdp" : "--plan");
        if (o->grad_accum > 1)
            BAD("--deterministic sets the micro-batches itself (--batch / --det-slices per rank): leave out --grad-accum");
        if (!strcmp(o->grad_accum_comm, "last"))
            BAD("--deterministic reduces every micro-slice: --grad-accum-comm last does not apply");
        if (!strcmp(o->dp_reduce, "bf16") || !strcmp(o->fsdp_reduce, "bf16"))
            BAD("--deterministic sums in fp32: --%s bf16 rounds each rank's partial sum, and where that happens "
                "depends on the rank count", !strcmp(o->dp_reduce, "bf16") ? "dp-reduce" : "fsdp-reduce");
    }
    if (o->keep_last > 0 && !o->ckpt_dir[0]) BAD("--keep-last needs --ckpt-dir");
    if (o->dp < 1 || o->tp < 1) BAD("--dp and --tp must be >= 1");
    if (o->plan[0] && (o->dp > 1 || o->tp > 1)) BAD("give --plan or --dp/--tp, not both");
    if ((long)o->dp * o->tp > HP_TRAIN_MAX_RANKS)
        BAD("--dp %d x --tp %d is %ld ranks, above the limit of %d", o->dp, o->tp, (long)o->dp * o->tp, HP_TRAIN_MAX_RANKS);
    if (o->dp > o->batch)
        BAD("--dp %d is more than --batch %d: every data-parallel rank needs at least one sequence", o->dp, o->batch);
    if (o->tp > o->heads) BAD("--tp %d is more than --heads %d: every tensor-parallel rank needs at least one head", o->tp, o->heads);
    if (!(o->comm_timeout > 0)) BAD("--comm-timeout must be > 0");
    if (o->fsdp < 0) BAD("--fsdp must be >= 1, got %d", o->fsdp);
    if ((long)o->fsdp * o->tp > HP_TRAIN_MAX_RANKS)
        BAD("--fsdp %d x --tp %d is %ld ranks, above the limit of %d", o->fsdp, o->tp, (long)o->fsdp * o->tp,
            HP_TRAIN_MAX_RANKS);
    if (o->fsdp > o->batch)
        BAD("--fsdp %d is more than --batch %d: every data-parallel rank needs at least one sequence", o->fsdp, o->batch);
    if (o->zero < 0 || o->zero > 3) BAD("--zero must be 1, 2 or 3, got %d", o->zero);
    if (o->fsdp > 1 && o->dp > 1) BAD("give --fsdp or --dp, not both (--zero L --dp N is ZeRO)");
    if (o->hsdp[0] && (o->fsdp > 1 || o->dp > 1)) BAD("--hsdp R,S replaces --fsdp and --dp");
    if ((o->fsdp > 1 || o->hsdp[0] || o->zero) && o->plan[0])
        BAD("with --plan, FSDP goes into the plan file ('fsdp: shard=dp ...')");
    if (!strcmp(o->fsdp_gather, "bf16") && strcmp(o->dtype, "bf16"))
        BAD("--fsdp-gather bf16 needs --dtype bf16 (the gathered copies are what bf16 compute reads)");
    if ((!strcmp(o->fsdp_gather, "bf16") || !strcmp(o->fsdp_reduce, "bf16")) && !(o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--fsdp-gather and --fsdp-reduce apply to --fsdp, --hsdp and --zero (a plan file says gather= and "
            "reduce= on its fsdp line; data parallelism: --dp-reduce)");
    if (!strcmp(o->bf16_params, "all") && strcmp(o->dtype, "bf16")) BAD("--bf16-params all needs --dtype bf16");
    if (!strcmp(o->dp_reduce, "bf16") && (o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves (use --fsdp-reduce bf16)");
    return HP_OK;
#undef BAD
}

hp_status hp_train_micro_batch(int *batch, int *grad_accum, const train_opts *o) {
    *batch = o->batch, *grad_accum = o->grad_accum;
    if (!o->deterministic && !o->det_slices) return HP_OK;
    int ranks = o->fsdp > 1 ? o->fsdp : o->dp;
    hp_status st = hp_deterministic_split(batch, grad_accum, o->batch, ranks, o->det_slices ? o->det_slices : 8);
    return st ? hp_error_wrap(st, "hyperpar train --batch %d --det-slices %d", o->batch,
                              o->det_slices ? o->det_slices : 8)
              : HP_OK;
}

void hp_train_shape_unset(train_opts *o) {
    o->layers = o->heads = o->channels = o->vocab = o->max_seq = HP_SHAPE_UNSET;
}

hp_status hp_train_shape_resolve(train_opts *o, const hp_model_config *init, const char *init_path, const char *cmd) {
    train_opts d;
    hp_train_defaults(&d);
    struct {
        const char *flag;
        int *v, def, file;
    } f[] = {{"layers", &o->layers, d.layers, init ? init->layers : 0},
             {"heads", &o->heads, d.heads, init ? init->heads : 0},
             {"channels", &o->channels, d.channels, init ? init->channels : 0},
             {"vocab", &o->vocab, d.vocab, init ? init->vocab : 0},
             {"max-seq", &o->max_seq, d.max_seq, init ? init->max_seq : 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (init && *f[i].v != HP_SHAPE_UNSET && *f[i].v != f[i].file)
            return hp_errorf("hyperpar %s: --%s %d conflicts with --init %s, whose model has %s %d (--init sets the "
                             "model shape: leave --%s out)",
                             cmd, f[i].flag, *f[i].v, init_path, f[i].flag, f[i].file, f[i].flag);
        *f[i].v = init ? f[i].file : *f[i].v == HP_SHAPE_UNSET ? f[i].def : *f[i].v;
    }
    return HP_OK;
}

int hp_train_is_distributed(const train_opts *o) {
    return o->plan[0] || o->dp > 1 || o->tp > 1 || o->fsdp > 1 || o->hsdp[0] || o->zero > 0;
}

hp_status hp_train_plan(hp_shard_plan **out, const train_opts *o, const char *prog) {
    *out = NULL;
    if (o->plan[0]) return hp_shard_plan_load(out, o->plan);
    int reps = 1, dp = o->fsdp > 1 ? o->fsdp : o->dp;
    if (o->hsdp[0]) {
        char *end;
        long r = strtol(o->hsdp, &end, 10), sh = *end == ',' ? strtol(end + 1, &end, 10) : 0;
        if (*end || r < 1 || sh < 1 || r > 4096 || sh > 4096)
            return hp_errorf("%s: --hsdp must be R,S (replicas, shards; each >= 1), got '%s'", prog, o->hsdp);
        reps = (int)r, dp = (int)sh;
        if (r * sh * o->tp > HP_TRAIN_MAX_RANKS)
            return hp_errorf("%s: --hsdp %s x --tp %d is %ld ranks, above the limit of %d", prog, o->hsdp, o->tp,
                             r * sh * o->tp, HP_TRAIN_MAX_RANKS);
        if (r * sh > o->batch)
            return hp_errorf("%s: --hsdp %s is %ld data-parallel ranks, more than --batch %d", prog, o->hsdp, r * sh,
                             o->batch);
    }
    int fsdp = o->fsdp > 1 || o->hsdp[0] || o->zero > 0;
    HP_TRY(reps > 1 ? hp_shard_plan_gpt2_replicated(out, reps, dp, o->tp) : hp_shard_plan_gpt2(out, dp, o->tp));
    if (!fsdp) return HP_OK;
    hp_fsdp_settings set; /* the FSDP flags as the plan's settings */
    hp_fsdp_settings_default(&set);
    set.replicate = reps > 1 ? "rep" : NULL;
    set.level = o->zero ? o->zero : 3, set.prefetch = o->prefetch, set.reshard = !strcmp(o->reshard, "on");
    set.style_fsdp2 = !strcmp(o->fsdp_style, "fsdp2");
    set.reduce_bf16 = !strcmp(o->fsdp_reduce, "bf16"), set.gather_bf16 = !strcmp(o->fsdp_gather, "bf16");
    hp_status st = hp_shard_plan_set_fsdp_settings(*out, &set);
    if (st) {
        hp_shard_plan_free(*out);
        *out = NULL;
    }
    return st;
}

void hp_train_plan_describe(char *buf, size_t n, const train_opts *o) {
    char tp[32] = "", zero[32] = "";
    if (o->tp > 1) snprintf(tp, sizeof tp, " x tp %d", o->tp);
    if (o->zero && o->zero != 3) snprintf(zero, sizeof zero, " (zero-%d)", o->zero);
    if (o->plan[0]) snprintf(buf, n, "plan file %s", o->plan);
    else if (o->hsdp[0]) snprintf(buf, n, "hsdp %s%s%s", o->hsdp, zero, tp);
    else if (o->fsdp > 1) snprintf(buf, n, "fsdp %d%s%s", o->fsdp, zero, tp);
    else if (o->zero) snprintf(buf, n, "zero-%d x dp %d%s", o->zero, o->dp, tp);
    else if (o->dp > 1) snprintf(buf, n, "dp %d%s", o->dp, tp);
    else if (o->tp > 1) snprintf(buf, n, "tp %d", o->tp);
    else snprintf(buf, n, "1 rank");
}
