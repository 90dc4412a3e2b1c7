/* api/options: the settings of a training run defined once (see "training
 * options by name" in the public header): the table, the defaults, the
 * checks, the plan the parallelism options make and the hp_train_config a
 * set of options makes. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "models/zoo.h"
#include "layout/text.h"

/* Groups (hp_train_optdef.groups). */
#define FROZEN HP_TRAIN_OPT_FROZEN
#define PLAN HP_TRAIN_OPT_PLAN
#define ONCE HP_TRAIN_OPT_INVOCATION
#define UNSAVED HP_TRAIN_OPT_UNSAVED

hp_status hp_opt_parse(void *field, hp_opt_type type, size_t cap, const char *text, const char *where) {
    char *end = NULL;
    errno = 0;
    switch (type) {
    case HP_OPT_INT:
    case HP_OPT_LONG: {
        long long v = strtoll(text, &end, 10);
        if (!*text || *end || errno) return hp_errorf("%s: expected an integer, got '%s'", where, text);
        if (type == HP_OPT_INT) {
            if (v < -2147483647LL || v > 2147483647LL) return hp_errorf("%s: %s is out of range", where, text);
            *(int *)field = (int)v;
        } else {
            *(long *)field = (long)v;
        }
        return HP_OK;
    }
    case HP_OPT_U64: {
        unsigned long long v = strtoull(text, &end, 10);
        if (!*text || *end || errno || text[0] == '-')
            return hp_errorf("%s: expected a non-negative integer, got '%s'", where, text);
        *(uint64_t *)field = (uint64_t)v;
        return HP_OK;
    }
    case HP_OPT_FLOAT: {
        double v = strtod(text, &end);
        if (!*text || *end || (errno && errno != ERANGE)) return hp_errorf("%s: expected a number, got '%s'", where, text);
        float f = (float)v;
        if (!isfinite(f) || (errno == ERANGE && v != 0)) /* nan, inf, or beyond a float's range */
            return hp_errorf("%s: expected a finite number, got '%s'", where, text);
        *(float *)field = f;
        return HP_OK;
    }
    case HP_OPT_STR:
        if (strlen(text) >= cap) return hp_errorf("%s: value is longer than %zu characters", where, cap - 1);
        snprintf((char *)field, cap, "%s", text);
        return HP_OK;
    case HP_OPT_FLAG:
        if (!strcmp(text, "1") || !strcmp(text, "true") || !strcmp(text, "yes") || !strcmp(text, "on")) {
            *(int *)field = 1;
            return HP_OK;
        }
        if (!strcmp(text, "0") || !strcmp(text, "false") || !strcmp(text, "no") || !strcmp(text, "off")) {
            *(int *)field = 0;
            return HP_OK;
        }
        return hp_errorf("%s: expected true or false, got '%s'", where, text);
    }
    return hp_errorf("%s: unknown option type %d", where, (int)type);
}

void hp_opt_format_float(char *buf, size_t n, float v) {
    char best[32] = "", t[32];
    for (int p = 1; p <= 9; p++) { /* %.9g always reads back: a float has at most 9 significant digits */
        snprintf(t, sizeof t, "%.*g", p, (double)v);
        if (strtof(t, NULL) == v && (!best[0] || strlen(t) < strlen(best))) memcpy(best, t, sizeof t);
    }
    if (!best[0]) snprintf(best, sizeof best, "%.9g", (double)v); /* nan */
    snprintf(buf, n, "%s", best);
}

void hp_opt_format(char *buf, size_t n, const void *field, hp_opt_type type) {
    switch (type) {
    case HP_OPT_INT: snprintf(buf, n, "%d", *(const int *)field); break;
    case HP_OPT_LONG: snprintf(buf, n, "%ld", *(const long *)field); break;
    case HP_OPT_U64: snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case HP_OPT_FLOAT: hp_opt_format_float(buf, n, *(const float *)field); break;
    case HP_OPT_STR: snprintf(buf, n, "%s", (const char *)field); break;
    case HP_OPT_FLAG: snprintf(buf, n, "%s", *(const int *)field ? "true" : "false"); break;
    }
}

/* Every option of `hyperpar train` and `hyperpar plan`, defined once: name, type, field of hp_train_options, default
 * (as a flag would give it), range (checked by hp_train_options_check; NULL: none, or a check of its own there), groups
 * and help. Flags, --help, config-file keys, state.json's args and the resume rules all come from this table. */
#define STR_(x) #x
#define STR(x) STR_(x) /* a number's macro as the default's text */
#define D(n, t, f, def, range, groups, h) {n, t, offsetof(hp_train_options, f), sizeof((hp_train_options *)0)->f, def, range, groups, h}
static const hp_train_optdef defs[] = {
    D("layers", HP_OPT_INT, layers, "4", NULL, FROZEN, "transformer blocks (L)"),
    D("heads", HP_OPT_INT, heads, "4", NULL, FROZEN, "attention heads (NH)"),
    D("channels", HP_OPT_INT, channels, "128", NULL, FROZEN, "model width (C)"),
    D("vocab", HP_OPT_INT, vocab, "256", NULL, FROZEN, "vocabulary size V (256 for raw text)"),
    D("max-seq", HP_OPT_INT, max_seq, "128", NULL, FROZEN, "position table length (maxT)"),
    D("capacity-factor", HP_OPT_FLOAT, capacity_factor, "0", ">= 0", FROZEN,
      "MoE: each expert keeps at most ceil(tokens top-k / experts x F) of its routed slots, the lowest scores dropped "
      "(under --ep by the expert's owner over the group's tokens; 0: the preset's, dropless)"),
    D("model", HP_OPT_STR, model, "gpt2", NULL, FROZEN,
      "gpt2 | pangu-tiny | pangu-2.6b | pangu-13b | pangu-200b (PanGu-alpha: the top query layer) | llama-tiny | "
      "llama3-8b | llama3-70b (Llama: grouped-query attention, RoPE, SwiGLU; the preset sets "
      "the shape)"),
    D("init", HP_OPT_STR, init, "", NULL, UNSAVED, "start from an llm.c checkpoint (sets the model shape)"),
    D("init-hf", HP_OPT_STR, init_hf, "", NULL, UNSAVED,
      "start from a Hugging Face model directory (config.json + model.safetensors, F32 or BF16: GPT-2, Llama, "
      "Mixtral; sets GPT-2's shape, must match a named preset's)"),
    D("data", HP_OPT_STR, data, HP_DEFAULT_DATA, NULL, FROZEN, "training data: llm.c token shards (file or glob) or text"),
    D("data-kind", HP_OPT_STR, data_kind, "auto", "auto|tokens|text", FROZEN,
      "auto | tokens | text (auto: token shards by their magic; text only for a file not named .bin with --vocab 256)"),
    D("val-data", HP_OPT_STR, val_data, "", NULL, 0, "validation data (default: the last --val-fraction of --data)"),
    D("val-fraction", HP_OPT_FLOAT, val_fraction, "0.1", "[0, 1)", 0, "share of --data held out for validation"),
    D("shuffle", HP_OPT_FLAG, shuffle, "0", NULL, FROZEN, "visit B*T windows in a seeded random order per epoch"),
    D("batch", HP_OPT_INT, batch, "8", ">= 1", FROZEN, "sequences per step (B)"),
    D("seq", HP_OPT_INT, seq, "128", ">= 1", FROZEN, "tokens per sequence (T)"),
    D("steps", HP_OPT_LONG, steps, "300", ">= 1", 0, "optimizer steps"),
    D("lr", HP_OPT_FLOAT, lr, "0.001", "> 0", 0, "peak learning rate (AdamW)"),
    D("beta1", HP_OPT_FLOAT, beta1, "0.9", "[0, 1)", 0, "AdamW beta1"),
    D("beta2", HP_OPT_FLOAT, beta2, "0.95", "[0, 1)", 0, "AdamW beta2"),
    D("eps", HP_OPT_FLOAT, eps, "1e-08", "> 0", 0, "AdamW epsilon"),
    D("weight-decay", HP_OPT_FLOAT, weight_decay, "0", ">= 0", 0, "decoupled weight decay"),
    D("grad-clip", HP_OPT_FLOAT, grad_clip, "1", ">= 0", 0, "clip the global gradient norm (0 = off)"),
    D("grad-accum", HP_OPT_INT, grad_accum, "0", NULL, 0, "micro-batches of --batch per optimizer step (gradients averaged)"),
    D("grad-accum-comm", HP_OPT_STR, grad_accum_comm, "every", "every|last", 0,
      "every | last: FSDP reduces every micro-batch (sharded accumulators) or only the last (whole-unit accumulators)"),
    D("deterministic", HP_OPT_FLAG, deterministic, "0", NULL, 0,
      "the same losses bit for bit at 1, 2, 4, ... ranks (pure DP, FSDP, ZeRO): --batch in --det-slices "
      "micro-slices, sums in one fixed tree"),
    D("det-slices", HP_OPT_INT, det_slices, "0", NULL, 0,
      "micro-slices of --batch per step in deterministic mode (a power of two the rank count divides; 0: 8; implies "
      "--deterministic)"),
    D("schedule", HP_OPT_STR, schedule, "cosine", NULL, 0, "constant | cosine | linear"),
    D("warmup", HP_OPT_LONG, warmup, "20", ">= 0", 0, "linear warmup steps (not given: --steps / 10, at most 20)"),
    D("min-lr-frac", HP_OPT_FLOAT, min_lr_frac, "0.1", "[0, 1]", 0, "final lr as a fraction of the peak"),
    D("optimizer", HP_OPT_STR, optimizer, "adamw", NULL, FROZEN, "adamw | muon (hidden matrices by Muon, the rest AdamW)"),
    D("muon-lr", HP_OPT_FLOAT, muon_lr, "0.02", "> 0", 0, "Muon peak learning rate"),
    D("muon-beta", HP_OPT_FLOAT, muon_beta, "0.95", "[0, 1)", 0, "Muon momentum"),
    D("muon-weight-decay", HP_OPT_FLOAT, muon_weight_decay, "0", ">= 0", 0, "Muon weight decay"),
    D("muon-momentum", HP_OPT_STR, muon_momentum, "ema", NULL, 0, "ema | sum"),
    D("muon-scale", HP_OPT_STR, muon_scale, "keller", NULL, 0, "keller | moonlight"),
    D("muon-dist", HP_OPT_STR, muon_dist, "layout", NULL, 0,
      "distributed Muon: layout (one owner per matrix, by work) | round-robin | zero1-gather | all-to-all | gather-all"),
    D("muon-waves", HP_OPT_INT, muon_waves, "2", "1..64", 0,
      "distributed Muon: exchange waves per group (wave w+1's gather and w-1's return overlap w's Newton-Schulz)"),
    D("muon-balance", HP_OPT_FLOAT, muon_balance, "1.1", NULL, 0,
      "layout rule: above this max/mean Newton-Schulz work per rank, teams of ranks iterate matrices by row blocks (0: never)"),
    D("ns", HP_OPT_STR, ns, "quintic", NULL, 0, "Newton-Schulz coefficients: quintic | perstep | polar"),
    D("muon-params", HP_OPT_STR, muon_params, "", NULL, 0, "extra parameters for Muon (comma-separated globs)"),
    D("adamw-params", HP_OPT_STR, adamw_params, "", NULL, 0, "parameters kept on AdamW (comma-separated globs)"),
    D("seed", HP_OPT_U64, seed, "1337", NULL, FROZEN, "random seed (initialisation and data order)"),
    D("threads", HP_OPT_INT, threads, "2", "1..256", 0, "compute threads"),
    D("metrics", HP_OPT_STR, metrics, "", NULL, 0, "append one JSON object per step to this file"),
    D("val-every", HP_OPT_LONG, val_every, "100", ">= 0 (0: only at the end)", 0,
      "validate every N steps (0 = only at the end)"),
    D("val-steps", HP_OPT_LONG, val_steps, "10", ">= 1", 0, "validation batches"),
    D("ckpt-every", HP_OPT_LONG, ckpt_every, "0", ">= 0 (0: only at the end)", 0,
      "checkpoint every N steps (needs --ckpt-dir)"),
    D("ckpt-dir", HP_OPT_STR, ckpt_dir, "", NULL, ONCE,
      "directory for checkpoints (step_NNNNNN and 'latest'; default: the run directory's ckpt/, or where --resume "
      "resumed from; none: no checkpoints)"),
    D("keep-last", HP_OPT_INT, keep_last, "0", ">= 0", 0, "keep only the K newest checkpoints in --ckpt-dir (0 = all)"),
    D("ckpt-format", HP_OPT_STR, ckpt_format, "single", "single|sharded", 0,
      "single (whole tensors, written by rank 0's process) | sharded (every rank writes its pieces)"),
    D("resume", HP_OPT_STR, resume, "", NULL, ONCE | UNSAVED,
      "continue from a checkpoint, a --ckpt-dir with 'latest', or a run directory; plan flags given now replace the "
      "checkpoint's plan; checkpoints go on in the directory resumed from unless --ckpt-dir says otherwise"),
    D("overwrite", HP_OPT_FLAG, overwrite, "0", NULL, ONCE,
      "let the run write over checkpoints in --ckpt-dir past the step it starts from (a newer one than it resumed, "
      "or another run's)"),
    D("log-every", HP_OPT_LONG, log_every, "10", ">= 1", 0, "print a line every N steps when not on a terminal"),
    D("stop-at", HP_OPT_LONG, stop_at, "0", ">= 0 (0: none)", UNSAVED,
      "stop (with a checkpoint) once this step is done; --resume continues"),
    D("plan", HP_OPT_STR, plan, "", NULL, PLAN, "sharding plan file (mesh and layouts; see docs/architecture.md)"),
    D("dp", HP_OPT_INT, dp, "1", NULL, PLAN,
      "data-parallel ranks (GPT-2 plan; ranks are threads, or MPI processes x threads)"),
    D("tp", HP_OPT_INT, tp, "1", NULL, PLAN, "tensor-parallel ranks (Megatron-style GPT-2 plan)"),
    D("ep", HP_OPT_INT, ep, "1", NULL, PLAN,
      "expert-parallel ranks (a MoE model: each holds experts/N of every layer's routed experts, the tokens go to "
      "them and back by all-to-all; the batch is split over --dp x --ep)"),
    D("pp", HP_OPT_INT, pp, "1", NULL, PLAN,
      "pipeline stages (GPT-2 plan: mesh pp=N outermost; the blocks split over them by --pp-split)"),
    D("pp-schedule", HP_OPT_STR, pp_schedule, "1f1b", "gpipe|1f1b|zb-h1|interleaved", 0,
      "pipeline schedule: gpipe | 1f1b | zb-h1 (zero bubble H1: backward split into input and weight gradients) | "
      "interleaved (1F1B over --pp-chunks model chunks per stage)"),
    D("pp-chunks", HP_OPT_INT, pp_chunks, "0", NULL, 0, "interleaved: model chunks per stage (0: 2)"),
    D("pp-split", HP_OPT_STR, pp_split, "balanced", NULL, 0,
      "pipeline stages' blocks: balanced (by forward FLOPs, the head included) | even | blocks per stage (3,5)"),
    D("remat", HP_OPT_STR, remat, "none", "none|selective|full", 0,
      "recompute in the backward: none | selective (attention core, pointwise and norms; GEMM outputs kept) | full "
      "(each block from its input)"),
    D("remat-save", HP_OPT_STR, remat_save, "", NULL, 0,
      "selective remat: the operators whose outputs are kept (comma-separated, e.g. linear,attention; empty: linear)"),
    D("loss-chunk", HP_OPT_INT, loss_chunk, "0", ">= 0", 0,
      "fuse the LM head and the cross-entropy over N vocabulary columns at a time: the logits are never stored "
      "whole (0: off)"),
    D("moe-chunks", HP_OPT_INT, moe_chunks, "1", "0..64", 0,
      "cut each MoE layer's tokens into N chunks, each its own dispatch, experts and combine: under expert "
      "parallelism one chunk's experts run while another chunk's rows are exchanged (1: one)"),
    D("micro-batches", HP_OPT_INT, micro_batches, "0", NULL, 0,
      "micro-batches of --batch per step (a pipeline's; the same as --grad-accum)"),
    D("fsdp", HP_OPT_INT, fsdp, "0", NULL, PLAN, "FSDP ranks: parameters, gradients and optimizer state sharded (ZeRO-3)"),
    D("hsdp", HP_OPT_STR, hsdp, "", NULL, PLAN, "R,S: HSDP, R replicas x S shards (shards inside a supernode)"),
    D("zero", HP_OPT_INT, zero, "0", NULL, PLAN,
      "ZeRO level over the data-parallel ranks: 1 state, 2 + gradients, 3 + parameters"),
    D("fsdp-style", HP_OPT_STR, fsdp_style, "hyperpar", "hyperpar|fsdp2", PLAN,
      "hyperpar | fsdp2 (the PyTorch FSDP2-like baseline)"),
    D("prefetch", HP_OPT_INT, prefetch, "1", "0..8", PLAN, "FSDP units whose gather starts ahead of their use"),
    D("fsdp-unit-bytes", HP_OPT_STR, fsdp_unit_bytes, "", NULL, PLAN,
      "FSDP units by bytes: runs of parameters in forward order up to this size (e.g. 8M; K, M, G: 2^10, 2^20, "
      "2^30); empty: one unit per block plus the root"),
    D("fsdp-keep-bytes", HP_OPT_STR, fsdp_keep_bytes, "", NULL, PLAN,
      "FSDP across supernodes (reshard on): gathered units kept from the forward for the backward, up to this many "
      "bytes, the backward's first ones first (e.g. 64M); auto: as many as --memory (or the memory available) "
      "allows; empty: only what the slots still hold"),
    D("reshard", HP_OPT_STR, reshard, "on", "on|off", PLAN, "on | off: FSDP reshard after forward (across supernodes)"),
    D("fsdp-reduce", HP_OPT_STR, fsdp_reduce, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: FSDP reduce-scatters the gradients in this dtype (bf16: half the bytes, summed in fp32; shards "
      "and optimizer fp32)"),
    D("fsdp-gather", HP_OPT_STR, fsdp_gather, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: FSDP all-gathers the parameters in this dtype (bf16: half the bytes, narrowed from the fp32 "
      "shards; needs --dtype bf16, implies --bf16-params all)"),
    D("dp-reduce", HP_OPT_STR, dp_reduce, "fp32", "fp32|bf16", PLAN,
      "fp32 | bf16: the data-parallel gradient all-reduces in this dtype (bf16: half the bytes, summed in fp32, still "
      "overlapped; gradients and optimizer fp32; not with --deterministic or FSDP/ZeRO)"),
    D("validate", HP_OPT_FLAG, validate, "0", NULL, 0, "validation mode: check layouts at every operator against one rank"),
    D("dtype", HP_OPT_STR, dtype, "fp32", "fp32|bf16", 0,
      "fp32 | bf16: bf16 compute (oneDNN GEMMs, bf16 activations) with fp32 master weights, gradients and optimizer "
      "state"),
    D("bf16-params", HP_OPT_STR, bf16_params, "gemm", "gemm|all", 0,
      "gemm | all: with --dtype bf16, the parameters that reach compute rounded to bf16: those the bf16 GEMMs and "
      "embeddings read, or all (norm weights and biases too, as Megatron's --bf16)"),
    D("fp32-gemm", HP_OPT_STR, fp32_gemm, "openblas", "openblas|onednn|auto", 0,
      "openblas | onednn | auto: the fp32 linear layers' GEMMs (auto: the faster per product and shape, measured at "
      "start; not bit-reproducible across runs)"),
    D("comm-timeout", HP_OPT_FLOAT, comm_timeout, "300", NULL, 0, "seconds a collective may wait before failing"),
    D("a2a-fuse-bytes", HP_OPT_LONG, a2a_fuse_bytes, "8192", ">= 0", 0,
      "the all-to-all across supernodes sends one message per pair of supernodes where the mean message per rank "
      "pair is below this many bytes (0: never; one message per rank pair)"),
    D("memory", HP_OPT_FLOAT, memory, "0", NULL, 0,
      "GB this process may use; a plan needing more is refused before allocating (0: MemAvailable or the cgroup "
      "limit; < 0: no check)"),
    D("ep-overlap", HP_OPT_STR, ep_overlap, "auto", "auto|always|off", 0,
      "auto | always | off: expert-parallel exchanges started before and waited after the compute that does not "
      "need them — auto: those whose group spans supernodes (inside a process the exchange is the cores' own "
      "copies); always: every one"),
    D("overlap", HP_OPT_STR, overlap, "on", "on|off", 0,
      "on | off: gradient reductions start early and wait late, expert-parallel exchanges as --ep-overlap says "
      "(off: both blocking)"),
    D("on-nan", HP_OPT_STR, on_nan, "stop", "stop|skip-step", 0,
      "stop | skip-step: a step with a NaN/Inf loss or gradient norm"),
    D("max-skipped-steps", HP_OPT_INT, max_skipped_steps, "10", ">= 1", 0,
      "with --on-nan skip-step: this many consecutive skipped steps stop the run (it diverged)"),
    D("on-write-error", HP_OPT_STR, on_write_error, "fail", "fail|warn", 0,
      "fail | warn: a failed metrics or trace write (warn: once, then that output stops)"),
    D("trace", HP_OPT_STR, trace, "", NULL, UNSAVED,
      "write a Chrome/Perfetto trace per rank: FILE.rankN.json (on: DIR/trace, in the run directory)"),
    D("trace-steps", HP_OPT_LONG, trace_steps, "1", ">= 1", UNSAVED, "steps traced (from the first)"),
    D("run-dir", HP_OPT_STR, run_dir, "", NULL, ONCE | UNSAVED,
      "run directory: settings, plan, machine, metrics, traces (default runs/<time> without --metrics; none: off)"),
    D("run-refresh", HP_OPT_FLOAT, run_refresh, STR(HP_RUN_REFRESH_S), ">= 0", ONCE | UNSAVED,
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

void hp_train_options_default(hp_train_options *o) {
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        hp_status st = hp_opt_parse((char *)o + defs[i].offset, defs[i].type, defs[i].size, defs[i].def,
                                    "hyperpar train: defaults");
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
static hp_status check_range(const hp_train_optdef *d, const hp_train_options *o) {
    const void *p = (const char *)o + d->offset;
    if (d->type == HP_OPT_STR) {
        if (in_choices(p, d->range)) return HP_OK;
        char want[160];
        choices_text(want, sizeof want, d->range);
        return hp_errorf("hyperpar train: --%s must be %s, got '%s'", d->name, want, (const char *)p);
    }
    double v = d->type == HP_OPT_INT ? *(const int *)p : d->type == HP_OPT_LONG ? (double)*(const long *)p
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
    if (d->type == HP_OPT_INT) return hp_errorf("hyperpar train: --%s must be %s%s, got %d", d->name, in, r, *(const int *)p);
    if (d->type == HP_OPT_LONG) return hp_errorf("hyperpar train: --%s must be %s%s, got %ld", d->name, in, r, *(const long *)p);
    return hp_errorf("hyperpar train: --%s must be %s%s, got %g", d->name, in, r, (double)*(const float *)p);
}

/* The most ranks a mesh of --dp x --tp may have (rank-threads of one process,
 * or processes x threads under mpirun). */
#define HP_TRAIN_MAX_RANKS 4096

hp_status hp_train_options_check(const hp_train_options *o) {
#define BAD(...) return hp_errorf("hyperpar train: " __VA_ARGS__)
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        if (defs[i].range) HP_TRY(check_range(&defs[i], o));
    if (o->ckpt_every > 0 && !o->ckpt_dir[0]) BAD("--ckpt-every needs --ckpt-dir");
    if (!(o->muon_balance == 0 || o->muon_balance >= 1)) BAD("--muon-balance must be 0 (never) or >= 1, got %g", (double)o->muon_balance);
    if (o->grad_accum < 0 || o->grad_accum > 4096) BAD("--grad-accum must be in 1..4096, got %d", o->grad_accum);
    if (o->det_slices < 0 || o->det_slices > 4096) BAD("--det-slices must be in 1..4096, got %d", o->det_slices);
    if (o->deterministic || o->det_slices) {
        if (o->tp > 1 || o->pp > 1 || o->hsdp[0] || o->plan[0])
            BAD("--deterministic is built for data parallelism (--dp, --fsdp, --zero, and --ep's experts): not with %s",
                o->tp > 1 ? "--tp" : o->pp > 1 ? "--pp" : o->hsdp[0] ? "--hsdp" : "--plan");
        if (o->grad_accum > 1)
            BAD("--deterministic sets the micro-batches itself (--batch / --det-slices per rank): leave out --grad-accum");
        if (!strcmp(o->grad_accum_comm, "last"))
            BAD("--deterministic reduces every micro-slice: --grad-accum-comm last does not apply");
        if (!strcmp(o->dp_reduce, "bf16") || !strcmp(o->fsdp_reduce, "bf16"))
            BAD("--deterministic sums in fp32: --%s bf16 rounds each rank's partial sum, and where that happens "
                "depends on the rank count", !strcmp(o->dp_reduce, "bf16") ? "dp-reduce" : "fsdp-reduce");
    }
    if (o->keep_last > 0 && !o->ckpt_dir[0]) BAD("--keep-last needs --ckpt-dir");
    if (o->a2a_fuse_bytes < 0) BAD("--a2a-fuse-bytes must be >= 0, got %ld", o->a2a_fuse_bytes);
    if (o->loss_chunk < 0) BAD("--loss-chunk must be >= 0, got %d", o->loss_chunk);
    if (o->moe_chunks < 0 || o->moe_chunks > 64) BAD("--moe-chunks must be in 0..64, got %d", o->moe_chunks);
    if (!hp_model_family_name(o->model)) BAD("--model '%s': not a known model (%s)", o->model, hp_model_names());
    if (o->moe_chunks > 1 && strcmp(hp_model_family_name(o->model), "moe"))
        BAD("--moe-chunks needs a MoE model (--model %s has no MoE layer)", o->model);
    if (o->capacity_factor > 0 && strcmp(hp_model_family_name(o->model), "moe"))
        BAD("--capacity-factor applies to a Mixture-of-Experts model: --model %s has no experts", o->model);
    if (o->init[0] && o->init_hf[0]) BAD("give --init (llm.c) or --init-hf (Hugging Face), not both");
    if (strcmp(o->model, "gpt2") && o->init[0]) BAD("--init reads an llm.c GPT-2 checkpoint: not with --model %s", o->model);
    if (o->dp < 1 || o->tp < 1) BAD("--dp and --tp must be >= 1");
    if (o->ep < 0 || o->ep > HP_TRAIN_MAX_RANKS) BAD("--ep must be in 1..%d, got %d", HP_TRAIN_MAX_RANKS, o->ep);
    if (o->ep > 1 && strcmp(hp_model_family_name(o->model), "moe"))
        BAD("--ep %d splits a Mixture-of-Experts model's experts: --model %s has none", o->ep, o->model);
    if (o->ep > 1 && o->plan[0]) BAD("give --plan or --ep, not both (a plan file says 'param h.*.moe.experts.*: S(0)@ep')");
    if (o->ep > 1 && (long)(o->fsdp > 1 ? o->fsdp : o->dp) * o->ep * o->tp * o->pp > HP_TRAIN_MAX_RANKS)
        BAD("--dp/--fsdp x --ep %d x --tp %d x --pp %d is above the limit of %d ranks", o->ep, o->tp, o->pp,
            HP_TRAIN_MAX_RANKS);
    if (o->ep > 1 && (long)(o->fsdp > 1 ? o->fsdp : o->dp) * o->ep > o->batch)
        BAD("--ep %d x %d data-parallel ranks is more than --batch %d: every rank needs at least one sequence", o->ep,
            o->fsdp > 1 ? o->fsdp : o->dp, o->batch);
    if (o->pp < 1 || o->pp > 64) BAD("--pp must be in 1..64, got %d", o->pp);
    if (o->plan[0] && o->pp > 1) BAD("give --plan or --pp, not both (a plan file's mesh says pp=N)");
    if (o->micro_batches < 0 || o->micro_batches > 4096) BAD("--micro-batches must be in 1..4096, got %d", o->micro_batches);
    if (o->micro_batches > 0 && o->grad_accum > 0 && o->micro_batches != o->grad_accum)
        BAD("--micro-batches %d and --grad-accum %d are one setting: give one", o->micro_batches, o->grad_accum);
    if (o->pp > 1 && (long)o->pp * o->dp * o->tp > HP_TRAIN_MAX_RANKS)
        BAD("--pp %d x --dp %d x --tp %d is %ld ranks, above the limit of %d", o->pp, o->dp, o->tp,
            (long)o->pp * o->dp * o->tp, HP_TRAIN_MAX_RANKS);
    if (o->pp > 1 && o->validate) BAD("--validate does not run pipelined plans yet (leave out --pp or --validate)");
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
    if (o->hsdp[0] && o->ep > 1) BAD("--hsdp with --ep: not built (the parameters besides the experts are replicated over ep "
                                     "as over HSDP's replicas; use --fsdp N --ep M)");
    if ((o->fsdp > 1 || o->hsdp[0] || o->zero) && o->plan[0])
        BAD("with --plan, FSDP goes into the plan file ('fsdp: shard=dp ...')");
    if (!strcmp(o->fsdp_gather, "bf16") && strcmp(o->dtype, "bf16"))
        BAD("--fsdp-gather bf16 needs --dtype bf16 (the gathered copies are what bf16 compute reads)");
    if ((!strcmp(o->fsdp_gather, "bf16") || !strcmp(o->fsdp_reduce, "bf16")) && !(o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--fsdp-gather and --fsdp-reduce apply to --fsdp, --hsdp and --zero (a plan file says gather= and "
            "reduce= on its fsdp line; data parallelism: --dp-reduce)");
    int64_t ub;
    if (o->fsdp_unit_bytes[0] && hp_text_bytes(&ub, o->fsdp_unit_bytes))
        BAD("--fsdp-unit-bytes must be a byte count >= 1 (e.g. 8M, 65536; K, M, G: 2^10, 2^20, 2^30), got '%s'",
            o->fsdp_unit_bytes);
    if (o->fsdp_keep_bytes[0] && strcmp(o->fsdp_keep_bytes, "auto") && hp_text_bytes(&ub, o->fsdp_keep_bytes))
        BAD("--fsdp-keep-bytes must be a byte count >= 1 (e.g. 64M; K, M, G: 2^10, 2^20, 2^30) or auto, got '%s'",
            o->fsdp_keep_bytes);
    if (o->fsdp_keep_bytes[0] && !(o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--fsdp-keep-bytes applies to --fsdp, --hsdp and --zero (a plan file says keep_bytes= on its fsdp line)");
    if (o->fsdp_unit_bytes[0] && !(o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--fsdp-unit-bytes applies to --fsdp, --hsdp and --zero (a plan file says unit_bytes= on its fsdp line)");
    if (!strcmp(o->bf16_params, "all") && strcmp(o->dtype, "bf16")) BAD("--bf16-params all needs --dtype bf16");
    if (!strcmp(o->dp_reduce, "bf16") && (o->fsdp > 1 || o->hsdp[0] || o->zero))
        BAD("--dp-reduce bf16: FSDP and ZeRO reduce the gradients themselves (use --fsdp-reduce bf16)");
    return HP_OK;
#undef BAD
}

hp_status hp_train_micro_batch(int *batch, int *grad_accum, const hp_train_options *o) {
    *batch = o->batch, *grad_accum = o->micro_batches > 0 ? o->micro_batches : o->grad_accum;
    if (!o->deterministic && !o->det_slices) return HP_OK;
    int ranks = (o->fsdp > 1 ? o->fsdp : o->dp) * (o->ep > 1 ? o->ep : 1);
    hp_status st = hp_deterministic_split(batch, grad_accum, o->batch, ranks, o->det_slices ? o->det_slices : 8);
    return st ? hp_error_wrap(st, "hyperpar train --batch %d --det-slices %d", o->batch,
                              o->det_slices ? o->det_slices : 8)
              : HP_OK;
}

hp_status hp_train_options_plan(hp_shard_plan **out, const hp_train_options *o, const char *prog) {
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
    int64_t ub = 0, kb = 0;
    if (o->fsdp_unit_bytes[0] && hp_text_bytes(&ub, o->fsdp_unit_bytes))
        return hp_errorf("%s: --fsdp-unit-bytes '%s' is not a byte count", prog, o->fsdp_unit_bytes);
    if (!strcmp(o->fsdp_keep_bytes, "auto")) kb = HP_FSDP_KEEP_AUTO;
    else if (o->fsdp_keep_bytes[0] && hp_text_bytes(&kb, o->fsdp_keep_bytes))
        return hp_errorf("%s: --fsdp-keep-bytes '%s' is not a byte count", prog, o->fsdp_keep_bytes);
    HP_TRY(hp_shard_plan_named_ep(out, o->model, o->pp > 1 ? o->pp : 1, reps, dp, o->ep > 1 ? o->ep : 1, o->tp));
    if (!fsdp) return HP_OK;
    hp_fsdp_settings set; /* the FSDP flags as the plan's settings */
    hp_fsdp_settings_default(&set);
    /* with experts split along ep: the other parameters' gradients are summed over ep too, as over HSDP's
     * replicas; the experts' stacks, split along ep, are in split units (sharded over dp, reduced over dp only) */
    set.replicate = reps > 1 ? "rep" : o->ep > 1 ? "ep" : NULL;
    set.level = o->zero ? o->zero : 3, set.prefetch = o->prefetch, set.reshard = !strcmp(o->reshard, "on");
    set.style_fsdp2 = !strcmp(o->fsdp_style, "fsdp2");
    set.reduce_bf16 = !strcmp(o->fsdp_reduce, "bf16"), set.gather_bf16 = !strcmp(o->fsdp_gather, "bf16");
    set.unit_bytes = (long long)ub, set.keep_bytes = (long long)kb;
    hp_status st = hp_shard_plan_set_fsdp_settings(*out, &set);
    if (st) {
        hp_shard_plan_free(*out);
        *out = NULL;
    }
    return st;
}


/* The options that become an hp_train_config's numbers and choices, each as
 * `hyperpar train` has always turned it into one. */
static hp_status set_values(hp_train_config *c, const hp_train_options *o) {
    c->threads = o->threads;
    c->comm_timeout_s = o->comm_timeout;
    c->a2a_fuse_bytes = o->a2a_fuse_bytes > 0 ? o->a2a_fuse_bytes : -1;
    c->moe_chunks = o->moe_chunks;
    c->overlap = strcmp(o->overlap, "off") != 0;
    c->ep_overlap = !strcmp(o->ep_overlap, "always") ? 1 : !strcmp(o->ep_overlap, "off") ? -1 : 0;
    c->validate = o->validate;
    c->bf16 = !strcmp(o->dtype, "bf16");
    c->bf16_params_all = !strcmp(o->bf16_params, "all");
    c->fp32_gemm = !strcmp(o->fp32_gemm, "onednn") ? 1 : !strcmp(o->fp32_gemm, "auto") ? 2 : 0;
    c->dp_reduce_bf16 = !strcmp(o->dp_reduce, "bf16");
    c->memory_limit_bytes = (double)o->memory * 1e9;
    HP_TRY(hp_optimizer_parse(&c->optimizer, o->optimizer));
    c->lr = o->lr, c->beta1 = o->beta1, c->beta2 = o->beta2, c->eps = o->eps, c->weight_decay = o->weight_decay;
    c->muon_lr = o->muon_lr, c->muon_beta = o->muon_beta, c->muon_weight_decay = o->muon_weight_decay;
    c->muon_balance = o->muon_balance > 0 ? o->muon_balance : -1.0f;
    c->muon_waves = o->muon_waves;
    HP_TRY(hp_schedule_parse(&c->schedule, o->schedule));
    c->warmup_steps = o->warmup, c->min_lr_frac = o->min_lr_frac;
    c->grad_clip = o->grad_clip;
    int batch;
    HP_TRY(hp_train_micro_batch(&batch, &c->grad_accum, o));
    c->deterministic = o->deterministic || o->det_slices;
    c->grad_accum_comm_last = !strcmp(o->grad_accum_comm, "last");
    c->on_nan = strcmp(o->on_nan, "skip-step") ? HP_ON_NAN_STOP : HP_ON_NAN_SKIP;
    c->max_skipped_steps = o->max_skipped_steps;
    c->steps = o->steps, c->stop_at = o->stop_at;
    c->seed = o->seed;
    HP_TRY(hp_data_kind_parse(&c->data_kind, o->data_kind));
    c->val_fraction = o->val_fraction, c->shuffle = o->shuffle;
    c->val_every = o->val_every, c->val_steps = o->val_steps;
    c->ckpt_every = o->ckpt_every, c->keep_last = o->keep_last, c->overwrite = o->overwrite;
    c->on_write_error = strcmp(o->on_write_error, "warn") ? HP_ON_WRITE_ERROR_FAIL : HP_ON_WRITE_ERROR_WARN;
    c->ckpt_sharded = !strcmp(o->ckpt_format, "sharded");
    c->trace_steps = o->trace_steps;
    c->run_refresh_s = o->run_refresh;
    return HP_OK;
}

/* The options that become an hp_train_config's strings: pointers into o. */
static void set_strings(hp_train_config *c, const hp_train_options *o) {
    c->muon_momentum = o->muon_momentum, c->muon_scale = o->muon_scale, c->newton_schulz = o->ns;
    c->muon_dist = o->muon_dist;
    c->pp_schedule = o->pp_schedule, c->pp_split = o->pp_split, c->pp_chunks = o->pp_chunks;
    c->remat = o->remat, c->remat_save = o->remat_save;
    c->loss_chunk = o->loss_chunk;
    c->muon_params = o->muon_params, c->adamw_params = o->adamw_params;
    c->init_llmc = o->init[0] ? o->init : NULL;
    c->init_hf = o->init_hf[0] ? o->init_hf : NULL;
    c->data = o->data, c->val_data = o->val_data;
    c->metrics = o->metrics;
    c->ckpt_dir = o->ckpt_dir;
}

hp_status hp_train_options_config(hp_train_config *c, const hp_train_options *o) {
    HP_TRY(set_values(c, o));
    set_strings(c, o);
    return HP_OK;
}

void hp_train_config_default(hp_train_config *c, const hp_model *model) {
    hp_train_options o;
    hp_train_options_default(&o);
    memset(c, 0, sizeof *c); /* every string NULL: its default (data: none given) */
    if (set_values(c, &o)) abort(); /* the table's defaults always convert: a bug otherwise */
    c->model = model;
}
