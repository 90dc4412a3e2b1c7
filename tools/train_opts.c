/* tools/train_opts: the settings of `hyperpar train` (see the header). */
#include "train_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hp_train_defaults(train_opts *o) {
    memset(o, 0, sizeof *o);
    o->layers = 4, o->heads = 4, o->channels = 128, o->vocab = 256, o->max_seq = 128;
    snprintf(o->data, sizeof o->data, "%s", HP_DEFAULT_DATA);
    snprintf(o->data_kind, sizeof o->data_kind, "auto");
    o->val_fraction = 0.1f;
    o->batch = 8, o->seq = 128, o->steps = 300;
    o->lr = 1e-3f, o->beta1 = 0.9f, o->beta2 = 0.95f, o->eps = 1e-8f, o->weight_decay = 0.0f;
    o->grad_clip = 1.0f, o->min_lr_frac = 0.1f;
    snprintf(o->schedule, sizeof o->schedule, "cosine");
    o->warmup = 20;
    snprintf(o->optimizer, sizeof o->optimizer, "adamw");
    o->muon_lr = 0.02f, o->muon_beta = 0.95f;
    snprintf(o->muon_momentum, sizeof o->muon_momentum, "ema");
    snprintf(o->muon_scale, sizeof o->muon_scale, "keller");
    snprintf(o->ns, sizeof o->ns, "quintic");
    o->seed = 1337;
    o->threads = 2;
    o->val_every = 100, o->val_steps = 10, o->log_every = 10;
    o->dp = 1, o->tp = 1;
    o->comm_timeout = 300;
    snprintf(o->overlap, sizeof o->overlap, "on");
    snprintf(o->grad_accum_comm, sizeof o->grad_accum_comm, "every");
    snprintf(o->fsdp_style, sizeof o->fsdp_style, "hyperpar");
    snprintf(o->reshard, sizeof o->reshard, "on");
    snprintf(o->fsdp_reduce, sizeof o->fsdp_reduce, "fp32");
    snprintf(o->fsdp_gather, sizeof o->fsdp_gather, "fp32");
    snprintf(o->bf16_params, sizeof o->bf16_params, "gemm");
    snprintf(o->dp_reduce, sizeof o->dp_reduce, "fp32");
    o->prefetch = 1;
    snprintf(o->on_nan, sizeof o->on_nan, "stop");
    o->max_skipped_steps = 10;
    snprintf(o->on_write_error, sizeof o->on_write_error, "fail");
    snprintf(o->ckpt_format, sizeof o->ckpt_format, "single");
    snprintf(o->dtype, sizeof o->dtype, "fp32");
    snprintf(o->fp32_gemm, sizeof o->fp32_gemm, "openblas");
    o->trace_steps = 1;
}

#define OPT(n, t, f, h) {n, t, &o->f, sizeof o->f, h}
int hp_train_opt_table(hp_opt *t, train_opts *o) {
    hp_opt tab[] = {
        OPT("layers", OPT_INT, layers, "transformer blocks (L)"),
        OPT("heads", OPT_INT, heads, "attention heads (NH)"),
        OPT("channels", OPT_INT, channels, "model width (C)"),
        OPT("vocab", OPT_INT, vocab, "vocabulary size V (256 for raw text)"),
        OPT("max-seq", OPT_INT, max_seq, "position table length (maxT)"),
        OPT("init", OPT_STR, init, "start from an llm.c checkpoint (sets the model shape)"),
        OPT("data", OPT_STR, data, "training data: llm.c token shards (file or glob) or text"),
        OPT("data-kind", OPT_STR, data_kind, "auto | tokens | text (auto: token shards by their magic; text only for "
                                             "a file not named .bin with --vocab 256)"),
        OPT("val-data", OPT_STR, val_data, "validation data (default: the last --val-fraction of --data)"),
        OPT("val-fraction", OPT_FLOAT, val_fraction, "share of --data held out for validation"),
        OPT("shuffle", OPT_FLAG, shuffle, "visit B*T windows in a seeded random order per epoch"),
        OPT("batch", OPT_INT, batch, "sequences per step (B)"),
        OPT("seq", OPT_INT, seq, "tokens per sequence (T)"),
        OPT("steps", OPT_LONG, steps, "optimizer steps"),
        OPT("lr", OPT_FLOAT, lr, "peak learning rate (AdamW)"),
        OPT("beta1", OPT_FLOAT, beta1, "AdamW beta1"),
        OPT("beta2", OPT_FLOAT, beta2, "AdamW beta2"),
        OPT("eps", OPT_FLOAT, eps, "AdamW epsilon"),
        OPT("weight-decay", OPT_FLOAT, weight_decay, "decoupled weight decay"),
        OPT("grad-clip", OPT_FLOAT, grad_clip, "clip the global gradient norm (0 = off)"),
        OPT("grad-accum", OPT_INT, grad_accum, "micro-batches of --batch per optimizer step (gradients averaged)"),
        OPT("grad-accum-comm", OPT_STR, grad_accum_comm, "every | last: FSDP reduces every micro-batch (sharded "
                                                          "accumulators) or only the last (whole-unit accumulators)"),
        OPT("deterministic", OPT_FLAG, deterministic, "the same losses bit for bit at 1, 2, 4, ... ranks (pure DP, "
                                                      "FSDP, ZeRO): --batch in --det-slices micro-slices, sums in "
                                                      "one fixed tree"),
        OPT("det-slices", OPT_INT, det_slices, "micro-slices of --batch per step in deterministic mode (a power of "
                                               "two the rank count divides; 0: 8; implies --deterministic)"),
        OPT("schedule", OPT_STR, schedule, "constant | cosine | linear"),
        OPT("warmup", OPT_LONG, warmup, "linear warmup steps (not given: --steps / 10, at most 20)"),
        OPT("min-lr-frac", OPT_FLOAT, min_lr_frac, "final lr as a fraction of the peak"),
        OPT("optimizer", OPT_STR, optimizer, "adamw | muon (hidden matrices by Muon, the rest AdamW)"),
        OPT("muon-lr", OPT_FLOAT, muon_lr, "Muon peak learning rate"),
        OPT("muon-beta", OPT_FLOAT, muon_beta, "Muon momentum"),
        OPT("muon-weight-decay", OPT_FLOAT, muon_weight_decay, "Muon weight decay"),
        OPT("muon-momentum", OPT_STR, muon_momentum, "ema | sum"),
        OPT("muon-scale", OPT_STR, muon_scale, "keller | moonlight"),
        OPT("ns", OPT_STR, ns, "Newton-Schulz coefficients: quintic | perstep | polar"),
        OPT("muon-params", OPT_STR, muon_params, "extra parameters for Muon (comma-separated globs)"),
        OPT("adamw-params", OPT_STR, adamw_params, "parameters kept on AdamW (comma-separated globs)"),
        OPT("seed", OPT_U64, seed, "random seed (initialisation and data order)"),
        OPT("threads", OPT_INT, threads, "compute threads"),
        OPT("metrics", OPT_STR, metrics, "append one JSON object per step to this file"),
        OPT("val-every", OPT_LONG, val_every, "validate every N steps (0 = only at the end)"),
        OPT("val-steps", OPT_LONG, val_steps, "validation batches"),
        OPT("ckpt-every", OPT_LONG, ckpt_every, "checkpoint every N steps (needs --ckpt-dir)"),
        OPT("ckpt-dir", OPT_STR, ckpt_dir, "directory for checkpoints (step_NNNNNN and 'latest'; default: the run "
                                           "directory's ckpt/, or where --resume resumed from; none: no checkpoints)"),
        OPT("keep-last", OPT_INT, keep_last, "keep only the K newest checkpoints in --ckpt-dir (0 = all)"),
        OPT("ckpt-format", OPT_STR, ckpt_format, "single (whole tensors, written by rank 0's process) | sharded (every rank writes its pieces)"),
        OPT("resume", OPT_STR, resume, "continue from a checkpoint, a --ckpt-dir with 'latest', or a run directory; "
                                       "plan flags given now replace the checkpoint's plan; checkpoints go on in the "
                                       "directory resumed from unless --ckpt-dir says otherwise"),
        OPT("overwrite", OPT_FLAG, overwrite, "let the run write over checkpoints in --ckpt-dir past the step it starts "
                                              "from (a newer one than it resumed, or another run's)"),
        OPT("log-every", OPT_LONG, log_every, "print a line every N steps when not on a terminal"),
        OPT("stop-at", OPT_LONG, stop_at, "stop (with a checkpoint) once this step is done; --resume continues"),
        OPT("plan", OPT_STR, plan, "sharding plan file (mesh and layouts; see docs/architecture.md)"),
        OPT("dp", OPT_INT, dp, "data-parallel ranks (GPT-2 plan; ranks are threads, or MPI processes x threads)"),
        OPT("tp", OPT_INT, tp, "tensor-parallel ranks (Megatron-style GPT-2 plan)"),
        OPT("fsdp", OPT_INT, fsdp, "FSDP ranks: parameters, gradients and optimizer state sharded (ZeRO-3)"),
        OPT("hsdp", OPT_STR, hsdp, "R,S: HSDP, R replicas x S shards (shards inside a supernode)"),
        OPT("zero", OPT_INT, zero, "ZeRO level over the data-parallel ranks: 1 state, 2 + gradients, 3 + parameters"),
        OPT("fsdp-style", OPT_STR, fsdp_style, "hyperpar | fsdp2 (the PyTorch FSDP2-like baseline)"),
        OPT("prefetch", OPT_INT, prefetch, "FSDP units whose gather starts ahead of their use"),
        OPT("reshard", OPT_STR, reshard, "on | off: FSDP reshard after forward (across supernodes)"),
        OPT("fsdp-reduce", OPT_STR, fsdp_reduce, "fp32 | bf16: FSDP reduce-scatters the gradients in this dtype "
                                                 "(bf16: half the bytes, summed in fp32; shards and optimizer fp32)"),
        OPT("fsdp-gather", OPT_STR, fsdp_gather, "fp32 | bf16: FSDP all-gathers the parameters in this dtype (bf16: "
                                                 "half the bytes, narrowed from the fp32 shards; needs --dtype bf16, "
                                                 "implies --bf16-params all)"),
        OPT("dp-reduce", OPT_STR, dp_reduce, "fp32 | bf16: the data-parallel gradient all-reduces in this dtype (bf16: "
                                             "half the bytes, summed in fp32, still overlapped; gradients and "
                                             "optimizer fp32; not with --deterministic or FSDP/ZeRO)"),
        OPT("validate", OPT_FLAG, validate, "validation mode: check layouts at every operator against one rank"),
        OPT("dtype", OPT_STR, dtype, "fp32 | bf16: bf16 compute (oneDNN GEMMs, bf16 activations) with fp32 master "
                                     "weights, gradients and optimizer state"),
        OPT("bf16-params", OPT_STR, bf16_params, "gemm | all: with --dtype bf16, the parameters that reach compute "
                                                 "rounded to bf16: those the bf16 GEMMs and embeddings read, or all "
                                                 "(norm weights and biases too, as Megatron's --bf16)"),
        OPT("fp32-gemm", OPT_STR, fp32_gemm, "openblas | onednn | auto: the fp32 linear layers' GEMMs (auto: the faster "
                                             "per product and shape, measured at start; not bit-reproducible across runs)"),
        OPT("comm-timeout", OPT_FLOAT, comm_timeout, "seconds a collective may wait before failing"),
        OPT("memory", OPT_FLOAT, memory, "GB this process may use; a plan needing more is refused before allocating (0: MemAvailable or the cgroup limit; < 0: no check)"),
        OPT("overlap", OPT_STR, overlap, "on | off: gradient reductions start early and wait late (schedule pass)"),
        OPT("on-nan", OPT_STR, on_nan, "stop | skip-step: a step with a NaN/Inf loss or gradient norm"),
        OPT("max-skipped-steps", OPT_INT, max_skipped_steps, "with --on-nan skip-step: this many consecutive skipped "
                                                             "steps stop the run (it diverged)"),
        OPT("on-write-error", OPT_STR, on_write_error, "fail | warn: a failed metrics or trace write (warn: once, then that output stops)"),
        OPT("trace", OPT_STR, trace, "write a Chrome/Perfetto trace per rank: FILE.rankN.json (on: DIR/trace, in the run directory)"),
        OPT("trace-steps", OPT_LONG, trace_steps, "steps traced (from the first)"),
        OPT("run-dir", OPT_STR, run_dir, "run directory: settings, plan, machine, metrics, traces (default runs/<time> without --metrics; none: off)"),
    };
    int n = (int)(sizeof tab / sizeof tab[0]);
    if (t) memcpy(t, tab, sizeof tab);
    return n;
}
#undef OPT

/* The most ranks a mesh of --dp x --tp may have (rank-threads of one process,
 * or processes x threads under mpirun). */
#define HP_TRAIN_MAX_RANKS 4096

hp_status hp_train_check(const train_opts *o) {
#define BAD(...) return hp_errorf("hyperpar train: " __VA_ARGS__)
    if (o->batch < 1) BAD("--batch must be >= 1, got %d", o->batch);
    if (o->seq < 1) BAD("--seq must be >= 1, got %d", o->seq);
    if (o->steps < 1) BAD("--steps must be >= 1, got %ld", o->steps);
    if (o->threads < 1 || o->threads > 256) BAD("--threads must be in 1..256, got %d", o->threads);
    if (!(o->lr > 0)) BAD("--lr must be > 0, got %g", (double)o->lr);
    if (!(o->beta1 >= 0 && o->beta1 < 1)) BAD("--beta1 must be in [0, 1), got %g", (double)o->beta1);
    if (!(o->beta2 >= 0 && o->beta2 < 1)) BAD("--beta2 must be in [0, 1), got %g", (double)o->beta2);
    if (!(o->eps > 0)) BAD("--eps must be > 0, got %g", (double)o->eps);
    if (o->weight_decay < 0) BAD("--weight-decay must be >= 0, got %g", (double)o->weight_decay);
    if (o->grad_clip < 0) BAD("--grad-clip must be >= 0, got %g", (double)o->grad_clip);
    if (o->warmup < 0) BAD("--warmup must be >= 0, got %ld", o->warmup);
    if (!(o->min_lr_frac >= 0 && o->min_lr_frac <= 1)) BAD("--min-lr-frac must be in [0, 1], got %g", (double)o->min_lr_frac);
    if (!(o->muon_lr > 0)) BAD("--muon-lr must be > 0, got %g", (double)o->muon_lr);
    if (!(o->muon_beta >= 0 && o->muon_beta < 1)) BAD("--muon-beta must be in [0, 1), got %g", (double)o->muon_beta);
    if (o->muon_weight_decay < 0) BAD("--muon-weight-decay must be >= 0, got %g", (double)o->muon_weight_decay);
    if (!(o->val_fraction >= 0 && o->val_fraction < 1)) BAD("--val-fraction must be in [0, 1), got %g", (double)o->val_fraction);
    if (o->val_every < 0) BAD("--val-every must be >= 0 (0: only at the end), got %ld", o->val_every);
    if (o->val_steps < 1) BAD("--val-steps must be >= 1, got %ld", o->val_steps);
    if (o->ckpt_every < 0) BAD("--ckpt-every must be >= 0 (0: only at the end), got %ld", o->ckpt_every);
    if (o->ckpt_every > 0 && !o->ckpt_dir[0]) BAD("--ckpt-every needs --ckpt-dir");
    if (o->grad_accum < 0 || o->grad_accum > 4096) BAD("--grad-accum must be in 1..4096, got %d", o->grad_accum);
    if (strcmp(o->grad_accum_comm, "every") && strcmp(o->grad_accum_comm, "last"))
        BAD("--grad-accum-comm must be every or last, got '%s'", o->grad_accum_comm);
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
    if (o->keep_last < 0) BAD("--keep-last must be >= 0, got %d", o->keep_last);
    if (o->keep_last > 0 && !o->ckpt_dir[0]) BAD("--keep-last needs --ckpt-dir");
    if (strcmp(o->on_write_error, "fail") && strcmp(o->on_write_error, "warn"))
        BAD("--on-write-error must be fail or warn, got '%s'", o->on_write_error);
    if (o->stop_at < 0) BAD("--stop-at must be >= 0 (0: none), got %ld", o->stop_at);
    if (o->log_every < 1) BAD("--log-every must be >= 1, got %ld", o->log_every);
    if (o->dp < 1 || o->tp < 1) BAD("--dp and --tp must be >= 1");
    if (strcmp(o->dtype, "fp32") && strcmp(o->dtype, "bf16")) BAD("--dtype must be fp32 or bf16, got '%s'", o->dtype);
    if (strcmp(o->fp32_gemm, "openblas") && strcmp(o->fp32_gemm, "onednn") && strcmp(o->fp32_gemm, "auto"))
        BAD("--fp32-gemm must be openblas, onednn or auto, got '%s'", o->fp32_gemm);
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
    if (o->prefetch < 0 || o->prefetch > 8) BAD("--prefetch must be in 0..8, got %d", o->prefetch);
    if (o->fsdp > 1 && o->dp > 1) BAD("give --fsdp or --dp, not both (--zero L --dp N is ZeRO)");
    if (o->hsdp[0] && (o->fsdp > 1 || o->dp > 1)) BAD("--hsdp R,S replaces --fsdp and --dp");
    if ((o->fsdp > 1 || o->hsdp[0] || o->zero) && o->plan[0])
        BAD("with --plan, FSDP goes into the plan file ('fsdp: shard=dp ...')");
    if (strcmp(o->fsdp_reduce, "fp32") && strcmp(o->fsdp_reduce, "bf16"))
        BAD("--fsdp-reduce must be fp32 or bf16, got '%s'", o->fsdp_reduce);
    if (strcmp(o->fsdp_gather, "fp32") && strcmp(o->fsdp_gather, "bf16"))
        BAD("--fsdp-gather must be fp32 or bf16, got '%s'", o->fsdp_gather);
    if (!strcmp(o->fsdp_gather, "bf16") && strcmp(o->dtype, "bf16"))
        BAD("--fsdp-gather bf16 needs --dtype bf16 (the gathered copies are what bf16 compute reads)");
    if ((!strcmp(o->fsdp_gather, "bf16") || !strcmp(o->fsdp_reduce, "bf16")) && !(o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--fsdp-gather and --fsdp-reduce apply to --fsdp, --hsdp and --zero (a plan file says gather= and "
            "reduce= on its fsdp line; data parallelism: --dp-reduce)");
    if (strcmp(o->bf16_params, "gemm") && strcmp(o->bf16_params, "all"))
        BAD("--bf16-params must be gemm or all, got '%s'", o->bf16_params);
    if (!strcmp(o->bf16_params, "all") && strcmp(o->dtype, "bf16")) BAD("--bf16-params all needs --dtype bf16");
    if (strcmp(o->dp_reduce, "fp32") && strcmp(o->dp_reduce, "bf16"))
        BAD("--dp-reduce must be fp32 or bf16, got '%s'", o->dp_reduce);
    if (!strcmp(o->dp_reduce, "bf16") && (o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves (use --fsdp-reduce bf16)");
    if (strcmp(o->fsdp_style, "hyperpar") && strcmp(o->fsdp_style, "fsdp2"))
        BAD("--fsdp-style must be hyperpar or fsdp2, got '%s'", o->fsdp_style);
    if (strcmp(o->reshard, "on") && strcmp(o->reshard, "off")) BAD("--reshard must be on or off, got '%s'", o->reshard);
    if (strcmp(o->overlap, "on") && strcmp(o->overlap, "off")) BAD("--overlap must be on or off, got '%s'", o->overlap);
    if (strcmp(o->data_kind, "auto") && strcmp(o->data_kind, "tokens") && strcmp(o->data_kind, "text"))
        BAD("--data-kind must be auto, tokens or text, got '%s'", o->data_kind);
    if (strcmp(o->ckpt_format, "single") && strcmp(o->ckpt_format, "sharded"))
        BAD("--ckpt-format must be single or sharded, got '%s'", o->ckpt_format);
    if (strcmp(o->on_nan, "stop") && strcmp(o->on_nan, "skip-step"))
        BAD("--on-nan must be stop or skip-step, got '%s'", o->on_nan);
    if (o->max_skipped_steps < 1) BAD("--max-skipped-steps must be >= 1, got %d", o->max_skipped_steps);
    if (o->trace_steps < 1) BAD("--trace-steps must be >= 1, got %ld", o->trace_steps);
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
    char set[160];
    snprintf(set, sizeof set, "shard=dp%s level=%d prefetch=%d reshard=%s style=%s reduce=%s gather=%s",
             reps > 1 ? " replicate=rep" : "", o->zero ? o->zero : 3, o->prefetch, o->reshard, o->fsdp_style,
             o->fsdp_reduce, o->fsdp_gather);
    hp_status st = hp_shard_plan_set_fsdp(*out, set);
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
