/* hyperpar/hyperpar.h: the public C API of hyperpar — every exported name in
 * one header. It needs only the C library: compile with -I<prefix>/include and
 * link with `pkg-config --libs hyperpar` (or CMake's hyperpar::hyperpar).
 *
 * A short tutorial
 * ================
 *
 * 1. Build a model. A model is a forward graph for batches of B x T tokens
 *    (global shapes), with its parameters named like GPT-2's (wte, wpe,
 *    h.<l>.attn.qkv.weight, ...; see `hyperpar plan`):
 *
 *        hp_model_config mc = {.layers = 2, .heads = 4, .channels = 64,
 *                              .vocab = 256, .max_seq = 32};
 *        hp_model *m;
 *        hp_status st = hp_model_gpt2(&m, &mc, 4, 32);   // B = 4, T = 32
 *
 *    Or write one's own: inputs and named parameters with global shapes,
 *    then operators on their ids (GPT-2 itself is written this way,
 *    src/models/gpt2.c; examples/own_model.c is a whole decoder). The first
 *    error sticks to the graph, so the model is written straight through and
 *    checked once, when it becomes a model:
 *
 *        hp_graph *g;
 *        st = hp_graph_create(&g);
 *        int tok = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(4, 32));
 *        int tgt = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(4, 32));
 *        int x = hp_embedding(g, tok, hp_param(g, "embed.weight", hp_dims2(256, 64)));
 *        int h = hp_rmsnorm(g, x, hp_param(g, "mlp_norm.weight", hp_dims1(64)), 1e-5f);
 *        h = hp_linear(g, h, hp_param(g, "mlp.fc.weight", hp_dims3(2, 128, 64)), -1);
 *        int proj = hp_param_init(g, "mlp.proj.weight", hp_dims2(64, 128),
 *                                 hp_init_normal(0.01));  // its init said here
 *        h = hp_linear(g, hp_swiglu(g, h), proj, -1);
 *        x = hp_add(g, x, h);
 *        int logits = hp_linear(g, x, hp_param(g, "head.weight", hp_dims2(256, 64)), -1);
 *        int per_position, loss = hp_xent(g, logits, tgt, 256, &per_position);
 *        hp_set_loss(g, loss, per_position);
 *        st = hp_model_from_graph(&m, g, 256);           // takes g; its errors here
 *
 *    A parameter starts as hp_param_init says (zeros, ones, a constant,
 *    normal, uniform), or, declared with hp_param, by its name: *.bias 0,
 *    norm weights 1, the rest N(0, 0.02).
 *
 * 2. Write or load a sharding plan: a device mesh and the layouts of the
 *    parameters and inputs (everything else follows by propagation). Without
 *    one the model trains on one rank. GPT-2's own plan is data x tensor
 *    parallel; a plan file (or hp_shard_plan_parse's text) says the same
 *    in text, by parameter name, for any model:
 *
 *        hp_shard_plan *p;
 *        st = hp_shard_plan_gpt2(&p, 2, 2);              // mesh dp=2,tp=2
 *        st = hp_shard_plan_load(&p, "gpt2_dp2.plan");   // or from a file:
 *            //   mesh: dp=2
 *            //   input tokens: S(0)@dp
 *            //   input targets: S(0)@dp
 *            //   param mlp.fc.weight: S(1)@tp   (by name, for any model; mesh dp=2,tp=2)
 *
 * 3. Compile and train. hp_train_create compiles the model for every rank this
 *    process hosts (ranks are threads; under mpirun, one supernode of threads
 *    per process), initialises the weights (or loads a checkpoint) and opens
 *    the data; every error (plan, shapes, files) comes back before any step.
 *    hp_train_run runs the loop: validation, metrics, checkpoints, events.
 *
 *        hp_train_config tc;
 *        hp_train_config_default(&tc, m);
 *        tc.plan = p;                 // NULL: one rank
 *        tc.data = "/usr/share/common-licenses/GPL-3";   // text, or token shards
 *        tc.steps = 30;
 *        hp_train *t;
 *        st = hp_train_create(&t, &tc);
 *        if (!st) st = hp_train_run(t);
 *
 * 4. Save and resume. With ckpt_dir set, checkpoints are written every
 *    ckpt_every steps and at the end (ckpt_dir/step_NNNNNN, and
 *    ckpt_dir/latest naming the newest). They hold whole tensors (or, with
 *    ckpt_sharded, every rank's own pieces and a map of them), so any plan
 *    resumes them: set resume to a checkpoint or to the ckpt_dir, and the run
 *    continues bit for bit. A save is atomic (a crash at any point leaves the
 *    last committed checkpoint loadable); a run locks its ckpt_dir (a second
 *    run writing there is refused, naming its pid), cleans up after an
 *    interrupted save first, and keeps the keep_last newest checkpoints when
 *    asked. hp_ckpt_convert turns one format into the other; hp_export_llmc
 *    writes a checkpoint's weights in the llm.c format (fp32 or bf16).
 *
 * 5. A loop of one's own. hp_train_step runs one step on the next batch;
 *    between steps, hp_train_save writes the same checkpoints hp_train_run
 *    does (dir/step_NNNNNN of the steps done, dir/latest), hp_train_load (or
 *    resume, at create) continues from one bit for bit, and the weights are
 *    read and written whole by name whatever the plan (every replica and
 *    shard kept consistent):
 *
 *        for (int i = 0; i < hp_train_param_count(t); i++)
 *            printf("%s\n", hp_train_param_name(t, i));  // wte, wpe, h.0.ln_1.weight, ...
 *        float loss;
 *        for (int s = 0; s < 100 && !st; s++) st = hp_train_step(t, &loss, NULL);
 *        if (!st) st = hp_train_save(t, "ckpt");       // ckpt/step_000100
 *        float *wpe = malloc(sizeof(float) * 32 * 64);  // [max_seq, channels]
 *        if (!st) st = hp_train_get_weight(t, "wpe", wpe, 32 * 64);
 *        if (!st) st = hp_train_set_weight(t, "wpe", wpe, 32 * 64);
 *
 * Errors: every fallible function returns an hp_status: HP_OK (NULL) on
 * success, else an error with a one-line message naming the file, field or
 * tensor at fault. The caller owns it: print hp_status_msg, then
 * hp_status_free. Handles are freed by their _free function (NULL is fine).
 *
 * A complete program (examples/train_tiny.c is the same, with checks):
 *
 *     #include <stdio.h>
 *     #include <hyperpar/hyperpar.h>
 *
 *     static void on_event(void *ctx, const hp_event *e) {
 *         (void)ctx;
 *         if (e->kind == HP_EVENT_STEP) printf("step %ld loss %.4f\n", e->step, e->loss);
 *     }
 *
 *     int main(void) {
 *         hp_model_config mc = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};
 *         hp_model *m = NULL;
 *         hp_train *t = NULL;
 *         hp_status st = hp_model_gpt2(&m, &mc, 4, 32);
 *         if (!st) {
 *             hp_train_config tc;
 *             hp_train_config_default(&tc, m);
 *             tc.data = "/usr/share/common-licenses/GPL-3";
 *             tc.steps = 30;
 *             tc.warmup_steps = 0;
 *             tc.on_event = on_event;
 *             st = hp_train_create(&t, &tc);
 *         }
 *         if (!st) st = hp_train_run(t);
 *         hp_train_free(t);
 *         hp_model_free(m);
 *         if (st) {
 *             fprintf(stderr, "error: %s\n", hp_status_msg(st));
 *             hp_status_free(st);
 *             return 1;
 *         }
 *         return 0;
 *     }
 *
 * Build: cc prog.c $(pkg-config --cflags --libs hyperpar) -o prog
 *
 * Contents: version; status; model; writing a model; sharding plans; plan
 * reports; the comm world; training; training options by name; inference;
 * tokenizers; run directories and reports; for programs (errors, clocks,
 * settings files); checkpoints; benchmarks (last: for tools). */
#ifndef HYPERPAR_HYPERPAR_H
#define HYPERPAR_HYPERPAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------ */

#define HP_VERSION_MAJOR 0
#define HP_VERSION_MINOR 1
#define HP_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH" (may differ from the header's
 * macros when linking an older or newer library). */
const char *hp_version(void);

/* ---- status ------------------------------------------------------------- */

/* HP_OK (NULL) means success; anything else is an error the caller owns. The
 * library's internal status type is this same type. */
typedef struct hp_error *hp_status;
#ifndef HP_OK
#define HP_OK ((hp_status)0)
#endif

/* The error's one-line message ("ok" for HP_OK); valid until freed. */
const char *hp_status_msg(hp_status s);
void hp_status_free(hp_status s);

/* ---- model -------------------------------------------------------------- */

/* GPT-2 (the llm.c / PyTorch definition; the LM head tied to wte). */
typedef struct {
    int layers;   /* transformer blocks (L) */
    int heads;    /* attention heads (NH); channels % heads == 0 */
    int channels; /* model width (C) */
    int vocab;    /* vocabulary size (V; 256 for raw text); padded to 128 inside */
    int max_seq;  /* position table length (maxT); >= T */
    /* Llama-style models only (0: their defaults; GPT-2 and PanGu-α ignore them): */
    int kv_heads;     /* key/value heads of grouped-query attention (0: heads); heads % kv_heads == 0 */
    int ffn;          /* the SwiGLU MLP's hidden width (0: 8C/3 rounded up to a multiple of 256) */
    float rope_theta; /* RoPE's base (0: 10000) */
    /* Mixture-of-Experts (the moe-* presets: Llama-style blocks whose MLP is routed; 0: dense): */
    int experts;           /* routed experts per block (E) */
    int top_k;             /* experts per token */
    int expert_ffn;        /* each expert's SwiGLU width (0: ffn) */
    int shared_experts;    /* experts every token goes through (DeepSeek's), expert_ffn wide each, one MLP */
    int moe_flags;         /* HP_MOE_SIGMOID (scores), HP_MOE_RENORM (top-k weights sum to 1) */
    float capacity_factor; /* 0: dropless */
    float aux_coef, z_coef; /* the load-balancing and z losses' coefficients */
} hp_model_config;

typedef struct hp_model hp_model;

/* The forward graph of GPT-2 for batches of B x T tokens. */
hp_status hp_model_gpt2(hp_model **out, const hp_model_config *cfg, int B, int T);
/* PanGu-α (Zeng et al. 2021; models/pangu): a GPT-style pre-LN decoder whose last layer is the top query
 * layer (its attention's query a learned embedding of the position, its keys and values from the last
 * hidden states), the head tied to the word embedding; layers counts the query layer. The shapes of the
 * published models by name: "pangu-2.6b", "pangu-13b", "pangu-200b", and "pangu-tiny" (L 4, C 64, NH 4,
 * V 256, maxT 128), which trains here. The model is a written one (hp_model_from_graph's kind). */
hp_status hp_model_config_pangu(hp_model_config *out, const char *preset);
hp_status hp_model_pangu(hp_model **out, const hp_model_config *cfg, int B, int T);
/* A Llama-style decoder (models/llama): RMSNorm, grouped-query attention (kv_heads, hp_repeat_heads) with RoPE
 * (rope_theta), a SwiGLU MLP (ffn), an untied head, no biases. Presets: "llama-tiny" (L 4, C 64, 4 heads, 2 kv
 * heads, F 192, V 256, maxT 128; trains here), "llama3-8b" and "llama3-70b" (the published shapes). A written
 * model, like PanGu-α. */
hp_status hp_model_config_llama(hp_model_config *out, const char *preset);
hp_status hp_model_llama(hp_model **out, const hp_model_config *cfg, int B, int T);
/* By --model name: the preset's shape of any family ("pangu-13b", "llama3-8b"; an error listing every name,
 * "gpt2" included, which has no preset), the family's name ("gpt2" for "gpt2", "pangu", "llama"; NULL for an
 * unknown name), and the model of the named family built on cfg's shape. */
hp_status hp_model_config_named(hp_model_config *out, const char *name);
const char *hp_model_family_name(const char *name);
hp_status hp_model_named(hp_model **out, const char *name, const hp_model_config *cfg, int B, int T);
void hp_model_free(hp_model *m);
/* Parameters (floats), the padded vocabulary rows included (llm.c's count). */
long hp_model_num_params(const hp_model *m);
int hp_model_batch(const hp_model *m); /* B */
int hp_model_seq(const hp_model *m);   /* T */

/* ---- writing a model ---------------------------------------------------- */

/* A model of one's own is a graph written with global shapes: inputs and
 * named parameters, then operators on their value ids (ints). Every call
 * returns the new value's id, or -1 once the graph holds an error: the first
 * error sticks, so a model is written straight through and checked once with
 * hp_graph_status. Parameter names are what plans, checkpoints and
 * hp_train_get_weight use ("blocks.0.attn.qkv.weight"). */
typedef struct hp_graph hp_graph;

/* Global shapes of up to HP_DIMS_MAX dimensions: hp_dims2(B, T). */
#define HP_DIMS_MAX 4
typedef struct {
    int ndim;
    int64_t d[HP_DIMS_MAX];
} hp_dims;
static inline hp_dims hp_dims4(int64_t a, int64_t b, int64_t c, int64_t d) {
    hp_dims r = {4, {a, b, c, d}};
    return r;
}
static inline hp_dims hp_dims3(int64_t a, int64_t b, int64_t c) {
    hp_dims r = hp_dims4(a, b, c, 0);
    r.ndim = 3;
    return r;
}
static inline hp_dims hp_dims2(int64_t a, int64_t b) {
    hp_dims r = hp_dims4(a, b, 0, 0);
    r.ndim = 2;
    return r;
}
static inline hp_dims hp_dims1(int64_t a) {
    hp_dims r = hp_dims4(a, 0, 0, 0);
    r.ndim = 1;
    return r;
}

/* The longest name of a value or parameter, its terminating 0 included. */
#define HP_NAME_MAX 96

/* Element types of inputs (parameters are fp32). */
typedef enum { HP_ELEM_F32 = 0, HP_ELEM_I32 = 2 } hp_elem;

hp_status hp_graph_create(hp_graph **out);
void hp_graph_destroy(hp_graph *g);
/* The first error written into g, or HP_OK; g keeps ownership. */
hp_status hp_graph_status(const hp_graph *g);
/* Name prefix of the operators that follow ("h.3.attn"); NULL or "" clears it. */
void hp_graph_scope(hp_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An input fed each step; a model trained by hp_train has the i32 inputs
 * "tokens" and "targets" of shape [B, T]. */
int hp_input(hp_graph *g, const char *name, hp_elem elem, hp_dims dims);
/* A trainable fp32 parameter with a unique name, initialised by its name
 * (HP_INIT_BY_NAME below; hp_param_init says another init). Parameters keep
 * the order they are written in (checkpoints, hp_train_param_name, the
 * init's random draws): write them as statements of their own where it
 * matters, since C leaves the order in which a call's arguments are
 * evaluated open. */
int hp_param(hp_graph *g, const char *name, hp_dims dims);

/* How a parameter starts, said where it is declared (hp_param_init). The
 * random kinds draw from one stream seeded with the run's seed
 * (hp_train_config.seed), shared by the parameters in the order they are
 * declared: a normal init (the by-name rule's N(0, 0.02) included) takes two
 * draws per element it fills, a uniform one; zeros, ones and constants take
 * none. So a parameter's values depend
 * on the seed and on the random parameters declared before it alone (not on
 * the plan, the rank count, or the constants around it), as a sequential
 * PyTorch init's do. */
typedef enum {
    HP_INIT_BY_NAME = 0, /* hp_param's: *.bias 0; *.weight holding "ln" or "norm" 1; the rest N(0, 0.02) */
    HP_INIT_ZEROS,
    HP_INIT_ONES,
    HP_INIT_CONSTANT, /* every element `value` */
    HP_INIT_NORMAL,   /* N(0, std^2): std >= 0 (GPT-2's residual projections: 0.02 / sqrt(2 * layers)) */
    HP_INIT_UNIFORM   /* uniform in [low, high] (low <= high), rounded to floats */
} hp_init_kind;
typedef struct {
    hp_init_kind kind;
    double std;       /* HP_INIT_NORMAL */
    double low, high; /* HP_INIT_UNIFORM */
    double value;     /* HP_INIT_CONSTANT */
    int64_t rows;     /* > 0: only the first `rows` rows (along dimension 0) take the init, and draw, the rest
                       * are 0 (a vocabulary padded for speed: GPT-2's wte); 0: all rows */
} hp_init;
static inline hp_init hp_init_zeros(void) {
    hp_init r = {HP_INIT_ZEROS, 0, 0, 0, 0, 0};
    return r;
}
static inline hp_init hp_init_ones(void) {
    hp_init r = {HP_INIT_ONES, 0, 0, 0, 0, 0};
    return r;
}
static inline hp_init hp_init_constant(double value) {
    hp_init r = {HP_INIT_CONSTANT, 0, 0, 0, value, 0};
    return r;
}
static inline hp_init hp_init_normal(double std) {
    hp_init r = {HP_INIT_NORMAL, std, 0, 0, 0, 0};
    return r;
}
static inline hp_init hp_init_uniform(double low, double high) {
    hp_init r = {HP_INIT_UNIFORM, 0, low, high, 0, 0};
    return r;
}
/* hp_param with its init: a bad init (unknown kind, negative or non-finite
 * std, low > high, rows outside 0 .. dims.d[0]) is the graph's error, naming
 * the parameter. */
int hp_param_init(hp_graph *g, const char *name, hp_dims dims, hp_init init);

/* Operators (global shapes; a plan shards them). */
/* ids[...] (i32) -> table rows: out[..., C]; table[R, C]. */
int hp_embedding(hp_graph *g, int ids, int table);
/* x[B,T,C] + pos[t, :] for t < T; pos[P,C] with P >= T. */
int hp_add_pos(hp_graph *g, int x, int pos);
/* x[..., IC] . w[O..., IC]^T + b[O...] -> [..., O...]; b = -1 for none. */
int hp_linear(hp_graph *g, int x, int w, int b);
/* Over the last dimension: w, b [C]. */
int hp_layernorm(hp_graph *g, int x, int w, int b, float eps);
int hp_rmsnorm(hp_graph *g, int x, int w, float eps);
int hp_gelu(hp_graph *g, int x);
int hp_add(hp_graph *g, int a, int b);
/* x[..., 2, H] (gate, up) -> silu(gate) * up [..., H]. */
int hp_swiglu(hp_graph *g, int x);
/* Causal self-attention on fused qkv[B,T,3,C] with nh heads -> [B,T,C]. */
int hp_attention(hp_graph *g, int qkv, int nh);
/* Rotary embedding of the q and k parts of qkv[B,T,3,C]. */
int hp_rope(hp_graph *g, int qkv, int nh, float theta);
/* a and b joined along dimension dim (equal elsewhere, one dtype): e.g. a
 * query [B,T,1,C] and keys and values [B,T,2,C] into attention's [B,T,3,C]. */
int hp_concat(hp_graph *g, int a, int b, int dim);
/* table[P, C] broadcast over a batch: [B, T, C] = table[t] (T <= P): a learned
 * per-position vector as an activation (PanGu-α's top query). */
int hp_pos_table(hp_graph *g, int table, int B, int T);
/* Mean softmax cross-entropy of logits[..., Vp] (first V columns real) against
 * targets[...] (i32) -> scalar loss. *per_position (may be NULL) gets the
 * value of the per-position losses. */
int hp_xent(hp_graph *g, int logits, int targets, int V, int *per_position);
/* Grouped-query attention's keys and values: x[..., Hkv * hs] -> [..., Hkv * copies * hs], head j * copies + k a
 * copy of head j (query head i reads kv head i / copies; Llama's repeat_kv). */
int hp_repeat_heads(hp_graph *g, int x, int head_size, int copies);
/* A Mixture-of-Experts MLP (ops/moe): x[N..., C] routed by router[E, C] (scores: softmax, or sigmoid with
 * HP_MOE_SIGMOID; each token's top_k experts, their weights renormalised over them with HP_MOE_RENORM; with
 * capacity_factor > 0 an expert keeps at most ceil(tokens top_k / E x factor) slots, the highest scores), each
 * expert a SwiGLU MLP of the stacked weights gate_up[E, 2, F, C] and down[E, C, F] run as one GEMM over its
 * tokens, the outputs weighted and summed per token: returns y[N..., C]. *aux: the load-balancing loss
 * aux_coef E sum_e f_e P_e of the batch plus the z-loss z_coef mean(logsumexp(logits)^2), a scalar to add to
 * the model's loss. */
#define HP_MOE_SIGMOID 1
#define HP_MOE_RENORM 2
int hp_moe(hp_graph *g, int *aux, int x, int router, int gate_up, int down, int top_k, int flags,
           double capacity_factor, double aux_coef, double z_coef);

/* Marks the scalar loss training differentiates and its per-position losses
 * (-1: none); both are kept for the whole step. */
void hp_set_loss(hp_graph *g, int loss, int per_position);

/* A model for hp_train from a graph written as above: its "tokens" and
 * "targets" inputs give B and T, vocab the token ids the data may hold
 * (0 .. vocab-1). The model takes g (freed with it, or here on error).
 * Parameters start as their hp_init says (hp_param's: by name). hp_model_num_params
 * counts its parameters; its checkpoints' state.json say model_kind
 * "written". GPT-2-only calls (inference, llm.c import and export, a GPT-2
 * trainer's resume or load, run-directory plan reports) refuse it or its
 * checkpoints in one line naming the kind, or describe GPT-2. */
hp_status hp_model_from_graph(hp_model **out, hp_graph *g, int vocab);

/* ---- sharding plans ----------------------------------------------------- */

/* A mesh and the layouts of parameters and inputs. File format (one entry a
 * line, '#' comments; first matching glob wins; unmatched names Replicate):
 *     mesh: dp=2,tp=2
 *     input tokens: S(0)@dp
 *     param h.*.attn.qkv.weight: S(1)@tp */
typedef struct hp_shard_plan hp_shard_plan;

/* Reads a plan file; errors read `PATH:LINE: problem`. */
hp_status hp_shard_plan_load(hp_shard_plan **out, const char *path);
/* Parses plan text; `name` stands for the file in errors. */
hp_status hp_shard_plan_parse(hp_shard_plan **out, const char *text, const char *name);
/* GPT-2's data x tensor (Megatron-style) parallel plan on mesh dp=DP,tp=TP. */
hp_status hp_shard_plan_gpt2(hp_shard_plan **out, int dp, int tp);
/* The same with replicas > 1 on mesh rep=R,dp=DP,tp=TP (the batch split over
 * rep and dp): HSDP's replicas once FSDP is set with replicate=rep. */
hp_status hp_shard_plan_gpt2_replicated(hp_shard_plan **out, int replicas, int dp, int tp);
/* The same pipelined over pp stages on mesh pp=PP,rep=R,dp=DP,tp=TP (pp outermost: a stage's ranks are
 * contiguous; rep only when replicas > 1); the blocks' split and the schedule are the run's
 * (hp_train_config.pp_split, pp_schedule). */
hp_status hp_shard_plan_gpt2_pipelined(hp_shard_plan **out, int pp, int replicas, int dp, int tp);
/* The shortcut plan of a --model name's family (hp_model_family_name): GPT-2's for gpt2 and PanGu-α, Llama's
 * for the llama presets (the query and kv heads, the MLP and the untied vocabulary cut along tp), on mesh
 * [pp=PP,][rep=R,]dp=DP,tp=TP. */
hp_status hp_shard_plan_named(hp_shard_plan **out, const char *model, int pp, int replicas, int dp, int tp);
/* The same with ep > 1 expert-parallel members (a Mixture-of-Experts model only), on mesh
 * [pp=PP,][rep=R,]dp=DP,ep=EP,tp=TP: the batch split over rep, dp and ep, each routed expert stack split by
 * expert along ep (`param h.*.moe.experts.*: S(0)@ep`), the tokens sent to their experts' members and back by
 * all-to-all. */
hp_status hp_shard_plan_named_ep(hp_shard_plan **out, const char *model, int pp, int replicas, int dp, int ep,
                                 int tp);
/* FSDP / ZeRO on a plan, in the plan file's `fsdp:` form: "shard=dp level=3
 * prefetch=1 reshard=on reduce=fp32 style=hyperpar", and "replicate=rep" for
 * HSDP. Levels: 1 = optimizer state sharded, 2 = + gradients, 3 = +
 * parameters (one copy per supernode). Errors name the setting. */
hp_status hp_shard_plan_set_fsdp(hp_shard_plan *p, const char *settings);
/* The same settings as values, for programs that hold them as options. */
typedef struct {
    const char *shard;     /* the mesh axis of the shards ("dp") */
    const char *replicate; /* HSDP: the replicas' axis ("rep"); NULL: none */
    int level;             /* 1, 2 or 3 */
    int prefetch;          /* units gathered ahead (0..8) */
    int reshard;           /* 1: reshard after forward */
    int reduce_bf16;       /* 1: gradients reduce-scattered in bf16 */
    int gather_bf16;       /* 1: parameters all-gathered in bf16 */
    int style_fsdp2;       /* 1: the PyTorch FSDP2-like baseline */
    long long unit_bytes;  /* > 0: units by bytes (runs of parameters in forward order up to this size); 0: one
                            * per block plus the root */
    long long keep_bytes;  /* a shard group across supernodes: bytes of gathered units kept from the forward for
                            * the backward (no second gather); 0: the slots' own; -1: as many as the memory
                            * budget allows (training: --memory, or the memory available; "keep_bytes=auto") */
} hp_fsdp_settings;
/* Defaults as the text form's: level 3, prefetch 1, reshard on, fp32, hyperpar, shard "dp". */
void hp_fsdp_settings_default(hp_fsdp_settings *s);
hp_status hp_shard_plan_set_fsdp_settings(hp_shard_plan *p, const hp_fsdp_settings *s);
void hp_shard_plan_free(hp_shard_plan *p);
/* Ranks of the mesh. */
int hp_shard_plan_ranks(const hp_shard_plan *p);
/* The mesh ("dp=2,tp=2") and the whole plan in the file format (it parses
 * back to the same plan); both owned by the plan. */
const char *hp_shard_plan_mesh(const hp_shard_plan *p);
const char *hp_shard_plan_text(const hp_shard_plan *p);

/* ---- plan reports ------------------------------------------------------- */

/* What a sharding plan compiles to, without running it (`hyperpar plan`):
 * the mesh, the passes of the compile, and per reported rank the layouts and
 * local shapes of the tensors, every collective the compile inserted (with
 * totals per phase and kind) and the memory the rank's program would use.
 * Compiling needs no world and allocates no tensors (a 124M model plans in
 * milliseconds). Phases are "fwd", "bwd" and "opt", in that order. */
typedef struct {
    hp_model_config model;     /* GPT-2's shape, unless init_llmc */
    const char *init_llmc;     /* NULL: model; else the shape of these llm.c weights */
    int batch, seq;            /* B x T tokens per step (>= 1) */
    const hp_shard_plan *plan; /* required (borrowed) */
    int world;                 /* ranks the run will have: 0 (the mesh's) or the mesh's */
    int processes;             /* MPI processes it will run in, one supernode each (0 or 1: one); FSDP
                                * across them gathers its units into transient slots */
    int rank;                  /* the rank reported, 0..ranks-1 */
    int all_ranks;             /* 1: every rank (rank is ignored) */
    int all_values;            /* 1: every tensor (activations, gradients), not only inputs and parameters */
    const char *optimizer;     /* "adamw" or "muon" (NULL: adamw) */
    const char *muon_params;   /* Muon routing overrides: comma-separated globs, or NULL */
    const char *adamw_params;
    float muon_balance;        /* as hp_train_config.muon_balance (0: 1.10; < 0: never split into teams) */
    float grad_clip;           /* global-norm clipping; <= 0: off */
    int overlap;               /* 1: gradient reductions start early and wait late */
    int ep_overlap;            /* as hp_train_config.ep_overlap */
    int threads;               /* compute threads of the process, shared out among the ranks (>= 1) */
    int bf16;                  /* 1: the program of train --dtype bf16 (bf16 activations, casts, bytes) */
    int bf16_params_all;       /* with bf16: every parameter through bf16 (hp_train_config.bf16_params_all) */
    int dp_reduce_bf16;        /* 1: the program of train --dp-reduce bf16 (gradient all-reduces in bf16) */
    int grad_accum;            /* micro-batches of `batch` per step (0 or 1: none; accumulators counted) */
    const char *remat, *remat_save; /* hp_train_config's (NULL: none) */
    int loss_chunk;            /* hp_train_config's (0: off) */
    int moe_chunks;            /* hp_train_config's (0 or 1: one) */
    const char *model_kind;    /* NULL or "gpt2": GPT-2 of `model`'s shape; a family's name ("pangu", "llama";
                                * hp_model_family_name): that family's model of that shape */
    const char *pp_schedule;   /* a pipelined plan's schedule and split (hp_train_config's; NULL: 1f1b, balanced) */
    int pp_chunks;
    const char *pp_split;
    int grad_accum_comm_last;  /* with grad_accum: hp_train_config.grad_accum_comm_last's program */
    int deterministic;         /* 1: hp_train_config.deterministic's program (batch: the micro-batch) */
} hp_plan_report_config;

#define HP_PLAN_NAME_LEN 96
#define HP_PLAN_MAX_DIMS 8
#define HP_PLAN_MAX_AXES 4

typedef struct {
    char name[HP_PLAN_NAME_LEN];
    const char *kind; /* "input", "param", "const", "grad" or "act" */
    int ndim;
    int64_t shape[HP_PLAN_MAX_DIMS];       /* global */
    char layout[128];                      /* "R@dp,S(1)@tp" */
    int64_t local_shape[HP_PLAN_MAX_DIMS]; /* on the reported rank */
    /* FSDP / ZeRO: the unit managing this parameter (an index into the rank's fsdp.units; -1: none),
     * where its local piece starts in the unit (floats), and the flat elements [fsdp_begin, fsdp_end)
     * of that piece in this rank's shard of the unit (begin == end: none): at level 3 what the rank
     * holds between gathers, at levels 1 and 2 (the piece whole on every rank) the part whose
     * optimizer state (and at level 2 gradient) it keeps */
    int fsdp_unit;
    int64_t fsdp_offset, fsdp_begin, fsdp_end;
} hp_plan_tensor;

typedef struct { /* an inserted redistribution or collective */
    const char *phase;            /* "fwd", "bwd" or "opt" */
    char where[HP_PLAN_NAME_LEN]; /* the node it feeds */
    char steps[600];              /* "all-reduce(tp, sum) 32.8 KB" */
    char groups[200];             /* the rank's groups: "tp[0,1]"; "-" when local */
    double bytes;                 /* sent per rank per training step */
    int communicates;             /* 0: local steps only (slices, Partial from Replicate) */
} hp_plan_collective;

typedef struct { /* the steps of one kind in one phase */
    const char *phase;
    const char *kind;  /* "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send", "recv",
                        * "broadcast" (what communicates), "slice", "to-partial" (local) */
    int communicates;  /* 0 for the local kinds (slice, to-partial) */
    int count;
    double bytes;
} hp_plan_total;

typedef struct {
    char name[24];  /* "autodiff", "propagate", ... */
    char note[160]; /* what it did */
} hp_plan_pass;

typedef struct { /* bytes of the rank's program */
    double params, grads, optimizer, activations, scratch, inputs, total;
} hp_plan_memory;

typedef struct { /* an FSDP unit: one flat buffer of its parameters, padded to split evenly */
    char name[HP_PLAN_NAME_LEN]; /* "h.3", "root", or the plan's unit name */
    int nparams;
    int64_t offset;     /* floats: its start in the rank's parameter store */
    int64_t size;       /* floats, padded: members x shard */
    int64_t shard;      /* floats per member */
    int64_t begin, end; /* this rank's shard: floats [begin, end) of the unit */
    int reduce_step;    /* where its gradient reduction starts: after this many of the backward's
                         * bwd_steps steps (-1: the unit has no reduction) */
    int bwd_steps;
} hp_plan_fsdp_unit;

typedef struct {
    int level;              /* 0: none; 1 optimizer state sharded (ZeRO-1), 2 + gradients, 3 + parameters */
    char style[16];         /* "hyperpar" or "fsdp2" */
    char shard_group[200];  /* the rank's shard group: "dp[0,1,2,3]" */
    char shard_axis[16];
    int members, member;    /* the shard group's size and this rank's place in it */
    int replicas;           /* HSDP: the replicate group's size (1: none) */
    char replicate_axis[16];
    int prefetch;           /* units gathered ahead */
    int reshard;            /* 1: reshard after forward (the plan's reshard=on) */
    int reduce_bf16, gather_bf16;
    int transient_slots;    /* units gathered into this many transient slots (a shard group across
                             * processes); 0: none */
    int nunits;
    hp_plan_fsdp_unit *units;
    char summary[240];      /* "level 3 (ZeRO-3), 3 units, shard group dp=4, prefetch 1, reshard on,
                             * style hyperpar" */
} hp_plan_fsdp;

typedef struct { /* distributed Muon: matrices the plan's layouts cut and replicate alike */
    char key[96];         /* per mesh axis of size > 1 what it does to them: R (replicas), F (FSDP's flat
                           * shards), Sr / Sc (a tensor-parallel cut of rows / columns), B (a stack's leading
                           * dimension): "dp=F", "dp=R tp=Sc"; "local": none (orthogonalised where they live) */
    int nmatrices, nranks;
    double gflops;        /* their Newton-Schulz GFLOP per step */
} hp_plan_muon_group;

typedef struct {
    char name[HP_PLAN_NAME_LEN];
    int group;            /* index into groups */
    int owner;            /* the rank that orthogonalises it (a team's lead); -1: local (every holder) */
    int team;             /* ranks iterating its row blocks (the layout rule's teams, --muon-balance); 1: its owner alone */
    int count;            /* matrices (a stack's: the product of its dims but the last two) */
    int64_t rows, cols;
    double gflops;
} hp_plan_muon_matrix;

typedef struct { /* a strategy's plan on the same layouts (parallel/muon_plan.h says how each is built) */
    char name[16];        /* "layout", "round-robin", "zero1-gather", "all-to-all", "gather-all" */
    double max_gflops;    /* Newton-Schulz GFLOP per step on the busiest rank */
    double total_gflops;  /* over all ranks (more than the model's when ranks repeat work) */
    double imbalance;     /* max / mean */
    double recv_mean;     /* bytes received per rank per step, mean over the ranks */
} hp_plan_muon_strategy;

typedef struct { /* layout-driven distributed Muon's plan (optimizer muon; nmatrices 0 otherwise) */
    int nmatrices, ngroups, nranks;
    hp_plan_muon_matrix *matrices; /* the model's order */
    hp_plan_muon_group *groups;
    double *gflops;       /* [nranks]: Newton-Schulz GFLOP per rank per step (its owned matrices and local ones) */
    double *sent, *recv;  /* [nranks]: bytes per step: pieces to the owners, updates back */
    double imbalance;     /* max / mean of gflops */
    int nsplit;           /* matrices iterated by teams of more than one rank */
    int refused;          /* 1: training refuses Muon on these layouts (matrices cut by FSDP and tensor
                           * parallelism with HSDP replicas: distributed Muon does not handle them yet); the report's programs then use AdamW */
    char status[200];     /* what training does with this plan today ("": runs it) */
    hp_plan_muon_strategy strategies[5]; /* layout first, then the competing ones */
    int nstrategies;
} hp_plan_muon;

typedef struct {
    int rank;
    char axis_group[HP_PLAN_MAX_AXES][200]; /* the rank's group along each axis: "tp[0,1]" */
    hp_plan_tensor *tensors;         /* inputs, parameters, then (all_values) the rest */
    int ntensors;
    hp_plan_collective *collectives; /* in program order */
    int ncollectives;
    hp_plan_total *totals;           /* the kinds present, by phase then kind */
    int ntotals;
    hp_plan_memory memory;
    hp_plan_fsdp fsdp; /* FSDP / ZeRO on this rank (fsdp.level 0: none) */
} hp_plan_rank_report;

/* A pipelined plan's stages and schedule (stages 0: none). */
typedef struct {
    int stages, micro;       /* p stages, m micro-batches per step */
    char schedule[16];       /* "gpipe", "1f1b", "zb-h1" */
    char split[512];         /* the units of each stage: "0: embeddings, h.0-h.2 | 1: h.3, head" */
    double imbalance;        /* the costliest stage's forward FLOPs over the mean */
    double bubble;           /* the schedule's idle share, simulated with forward 1, backward 2 (input and
                              * weight parts 1 each) */
    double bubble_formula;   /* (p - 1) / (m + p - 1): GPipe's and 1F1B's */
    int peak_inflight[64];   /* per stage: micro-batches whose activations it holds at once */
    char *timeline;          /* the table as text: one row per stage (owned by the report) */
} hp_plan_pipeline;

typedef struct {
    char mesh[128]; /* "dp=2,tp=2" */
    int naxes;
    char axis_name[HP_PLAN_MAX_AXES][16];
    int axis_size[HP_PLAN_MAX_AXES];
    int nranks, world;
    hp_model_config model; /* with the shape init_llmc gave */
    int vocab_padded;
    long nparams;          /* llm.c's count */
    int batch, seq;
    char optimizer[16];
    const char *plan_text; /* the plan in the file format */
    hp_plan_pass passes[24]; /* the compile's passes, in order (the first reported rank's) */
    int npasses;
    hp_plan_rank_report *ranks; /* the reported ranks */
    int nreported;
    const char **notes; /* propagation notes: operators without a sharding rule */
    int nnotes;
    hp_plan_muon muon;  /* optimizer muon: the groups, owners and bytes of its distributed update */
    hp_plan_pipeline pipeline; /* a mesh axis "pp": the stages, the schedule and its timeline */
} hp_plan_report;

/* Defaults: world 0, rank 0, adamw, grad clip 1, overlap on, 1 thread. */
void hp_plan_report_config_default(hp_plan_report_config *c);
/* Compiles the plan for the reported ranks and gathers the report; errors
 * name the field, or the plan rule and tensor at fault. */
hp_status hp_plan_report_create(hp_plan_report **out, const hp_plan_report_config *c);
void hp_plan_report_free(hp_plan_report *r);

/* Whether a run fits in memory: the programs of the ranks one process hosts
 * (the reported rank's process: rank-threads share a process, and under
 * mpirun each of `processes` processes hosts ranks / processes of them),
 * summed as hp_plan_memory counts them, against the memory available. When
 * it does not fit, changes that would each make it fit, every one computed
 * with the same prediction: more processes (one a machine), ZeRO-3 where the
 * level is lower, a smaller batch with more --grad-accum micro-batches, a
 * shorter sequence; when no single change fits, the first combination of
 * them that does (or, when none does, the one that comes closest). */
typedef struct {
    int processes;   /* 0: as now; else the run over this many processes (mpirun -np N; plan --processes N) */
    char flags[160]; /* the other changes as flags of `hyperpar train` and `hyperpar plan`: "--zero 3",
                      * "--batch 4 --grad-accum 4", "--seq 512" ("" with processes alone) */
    double needed;   /* bytes per process with the change */
} hp_plan_fit_hint;

#define HP_PLAN_FIT_HINTS 6

typedef struct {
    int first_rank, ranks_here; /* the process's ranks: [first_rank, first_rank + ranks_here) */
    double needed;              /* bytes: their programs together */
    double available;           /* bytes: the limit given, else what hp_memory_available found (0: unknown) */
    char source[32];            /* where available came from: "given", "MemAvailable", "cgroup memory.max",
                                 * or "unknown" (then it counts as fitting) */
    int fits;
    double short_by;            /* needed - available when it does not fit, else 0 */
    int nhints;                 /* when it does not fit: hints[nhints], each fitting unless closest is set */
    hp_plan_fit_hint hints[HP_PLAN_FIT_HINTS];
    int closest;                /* 1: nothing tried fits; hints[0] is the change that comes closest */
    char hint[1024];            /* the hints as one line: "to fit: --zero 3 (20.1 GB); ..."; "" when it fits */
} hp_plan_fit;

/* The memory this process may still use, in bytes: MemAvailable of
 * /proc/meminfo, or the cgroup's limit (/sys/fs/cgroup/memory.max) when
 * lower; *bytes = 0 when neither can be read. source (n bytes) names it. */
void hp_memory_available(double *bytes, char *source, size_t n);
/* Fills *out for the run c describes (c->rank picks the process; all_ranks,
 * all_values are ignored) against limit_bytes (> 0), or against
 * hp_memory_available (0). Errors as hp_plan_report_create's. */
hp_status hp_plan_fit_check(hp_plan_fit *out, const hp_plan_report_config *c, double limit_bytes);

/* ---- simulation (autopar's cost model) ---------------------------------- */

/* A training step predicted without running it (`hyperpar simulate`): the
 * plan's programs compiled as `hyperpar plan` compiles them (one rank per
 * pipeline stage), priced by the cost model (src/autopar/cost.h) on a cluster
 * description (src/autopar/cluster.h) with a calibration profile
 * (src/autopar/profile.h). */
typedef struct {
    const char *cluster;    /* a cluster description file; NULL: this machine, the plan's ranks in
                             * `processes` supernodes (links from the profile) */
    const char *profile;    /* the calibration profile file (required), or a comma-separated list of them: the one
                             * calibrated at the kernel threads a rank gets is used */
    int links;              /* 0: the profile's collectives where it has the tier (else the cluster's);
                             * 1: the cluster's always; -1: 1 with a cluster file, else the profile's but for
                             * inter_bw_GBps's link */
    double compute_scale;   /* the profile's kernel rates times this; 0: 1 on a cluster file, else the
                             * share of the profile's threads a rank gets here (ranks share the cores) */
    const char *trace;      /* non-NULL: write the predicted timeline as PREFIX.rankN.json (runtime/trace's
                             * format, one file per stage, N its first rank), for `hyperpar report` */
    int64_t a2a_fuse_bytes; /* the all-to-all's fusion threshold (0: comm's default) */
    double inter_bw_GBps;   /* without a cluster file: the link between this machine's supernodes (the emulated
                             * link's bandwidth per rank, as train's --inter-bw), priced at it; 0: the profile's */
    double inter_latency_us;
    int one_process;        /* without a cluster file: the supernodes are emulated in one process, so all the
                             * ranks share this machine's cores (0: one process per supernode, as mpirun) */
} hp_sim_config;

typedef struct {
    double step_s;            /* predicted seconds per optimizer step (the slowest stage) */
    double compute_s, optimizer_s, bubble_s;
    double exposed_intra_s, exposed_inter_s; /* compute held by collectives, by tier */
    double comm_intra_s, comm_inter_s;       /* the collectives' link time (hidden or not) */
    double bytes_intra, bytes_inter;         /* bytes a rank moves per step, by tier */
    double flops;             /* the slowest stage's rank: forward and backward FLOPs per step */
    double family_s[7];       /* its kernels' seconds by family: gemm, grouped_gemm, attention, pointwise, norm,
                               * softmax_xent, embedding (src/autopar/profile.h) */
    double tokens_per_s;      /* batch x seq x micro-batches over step_s */
    double mfu;               /* flops / step_s over the cluster's (or the profile's) peak for the dtype */
    double peak_flops;        /* that peak, FLOP/s per rank */
    int ranks, stages, stage; /* the mesh's ranks, pipeline stages, the slowest stage */
    int kernel_fallbacks;     /* kernel rates the profile had no exact entry for */
    hp_plan_memory *memory;   /* [stages]: memory per rank of each stage (its first rank) */
    char cluster[64], profile[64];
    int links_from_cluster;   /* bit 0: intra-supernode collectives at the cluster's link, bit 1: inter (else the
                               * profile's fits) */
    double compute_scale;
    char **assumptions;       /* the cluster's `assumption:` lines and the profile's notes, in order */
    int nassumptions;
} hp_sim_report;

void hp_sim_config_default(hp_sim_config *s);
/* Compiles c's plan (c->rank and c->all_ranks are ignored) and predicts its step. Errors name the file and
 * field (cluster, profile) or the plan's problem. */
hp_status hp_simulate(hp_sim_report **out, const hp_plan_report_config *c, const hp_sim_config *s);
void hp_sim_report_free(hp_sim_report *r);

/* ---- the comm world ----------------------------------------------------- */

/* A world is S supernodes x R ranks. Ranks of one supernode are threads of
 * one process sharing memory; supernodes are MPI processes under mpirun, or
 * are emulated in one process (supernodes > 1) over a link that can be
 * throttled. A trainer makes the world its plan needs when given none. */
typedef struct {
    int ranks_per_supernode; /* R >= 1 */
    int supernodes;          /* emulated supernodes without MPI; 0 = 1 (or the MPI size) */
    int mpi;                 /* -1: when started by mpirun; 0: never; 1: required */
    double timeout_s;        /* a collective waiting longer fails, naming the missing rank */
    double inter_bw_gbps;    /* inter-supernode bandwidth per rank (GB/s); 0 = unthrottled */
    double inter_latency_us; /* inter-supernode latency per message */
    int64_t a2a_fuse_bytes;  /* the all-to-all sends one message per pair of supernodes (not per pair of
                              * ranks) when the mean per rank pair is below this; 0 = never */
} hp_world_options;

typedef struct hp_world hp_world;

/* Defaults: 1 rank per supernode, MPI when started by mpirun, timeout 300 s. */
void hp_world_options_default(hp_world_options *o);
/* MPI is initialised here when needed (and finalised by hp_world_free). */
hp_status hp_world_create(hp_world **out, const hp_world_options *o);
void hp_world_free(hp_world *w);
int hp_world_size(const hp_world *w);       /* ranks in all */
int hp_world_supernodes(const hp_world *w);
int hp_world_uses_mpi(const hp_world *w);
/* The global ranks this process hosts: [*first, *first + *count). */
void hp_world_hosted_ranks(const hp_world *w, int *first, int *count);
/* How this process was started: the processes mpirun started (0: not by
 * mpirun), and 1 when any launcher (mpirun, srun, PMI) did. */
int hp_world_launched_processes(void);
int hp_world_under_launcher(void);

/* ---- training ----------------------------------------------------------- */

typedef enum {
    HP_OPTIMIZER_ADAMW = 0, /* every parameter by AdamW */
    HP_OPTIMIZER_MUON = 1   /* hidden matrices by Muon, the rest (embeddings, norms, biases) by AdamW */
} hp_optimizer_type;

/* Learning-rate schedules (llm.c's): a linear warmup to lr over warmup_steps,
 * then cosine or linear decay to min_lr_frac * lr at the last step; constant
 * has no warmup. */
typedef enum { HP_SCHEDULE_COSINE = 0, HP_SCHEDULE_LINEAR = 1, HP_SCHEDULE_CONSTANT = 2 } hp_schedule_type;

/* What the training data is (hp_train_config.data_kind). AUTO: a file that
 * starts with the llm.c shard magic is token shards; any other is text (raw
 * bytes) only when it cannot be a shard — its name does not end in .bin and
 * the vocabulary is 256 — else an error naming the file and the magic found. */
typedef enum { HP_TRAIN_DATA_AUTO = 0, HP_TRAIN_DATA_TOKENS = 1, HP_TRAIN_DATA_TEXT = 2 } hp_train_data_kind;

/* Names as `hyperpar train` spells them: "adamw" | "muon", "cosine" |
 * "linear" | "constant", and "auto" | "tokens" | "text"; an unknown name is
 * an error naming it. */
hp_status hp_optimizer_parse(hp_optimizer_type *out, const char *name);
hp_status hp_schedule_parse(hp_schedule_type *out, const char *name);
hp_status hp_data_kind_parse(hp_train_data_kind *out, const char *name);

/* The padded vocabulary of a model (Vp: vocab rounded up to 128). */
int hp_model_padded_vocab(const hp_model *m);

/* Validation mode's report on step 1: every operator's layouts and values
 * against one rank, and each parameter's gradient against one rank's. */
typedef struct {
    const char *name;   /* the parameter */
    const char *layout; /* its layout, text form ("R@dp,S(1)@tp") */
    double rel_err;     /* max|a - b| / max|b| */
} hp_grad_check;

typedef struct {
    int checked_ops;     /* global operators checked */
    int redistributions; /* inserted redistribution steps checked */
    int values;          /* values compared with the reference */
    int own_order;       /* values whose rows the ranks hold in orders of their own (a MoE layer's rows grouped by
                          * a rank's tokens' experts, or exchanged): shapes and replicas checked, not compared */
    float loss, ref_loss; /* the step's loss, distributed and on 1 rank */
    int ngrads;
    const hp_grad_check *grads; /* [ngrads], in the model's parameter order */
    double worst;        /* the largest rel_err */
    int worst_index;     /* its entry in grads; -1 when none */
    int nupdates;        /* optimizer muon: each Muon matrix's update against one rank's (after the step's
                          * optimizer phase); layout is "count x rows x cols", rel_err max|a - b| over the
                          * size of one rank's update */
    const hp_grad_check *updates;
    double worst_update;
} hp_validation;

typedef enum {
    HP_EVENT_START,     /* the run is set up: nparams, ranks, ranks_here, mesh, start_step, memory */
    HP_EVENT_VALIDATED, /* validation mode checked step 1: checked_ops, worst_grad_error, validation */
    HP_EVENT_STEP,      /* a step finished: step, loss, lr, grad_norm, tokens_per_s, step_ms, eta_s;
                         * nonfinite: its loss or gradient norm was NaN/Inf (its update not applied) */
    HP_EVENT_VAL,       /* a validation pass finished: step, val_loss */
    HP_EVENT_CKPT,      /* a checkpoint was written: step, dir */
    HP_EVENT_STOPPED,   /* stop_at reached: step */
    HP_EVENT_DONE,      /* the loop ended: steps_done, seconds, tokens_per_s */
    HP_EVENT_NOTE,      /* message: a checkpoint directory recovered from an interrupted save, a stale
                         * lock taken over, metrics lines of steps after the resumed one dropped */
    HP_EVENT_WARNING    /* message: an output (metrics, traces) failed and stopped (on_write_error
                         * HP_ON_WRITE_ERROR_WARN); may come from any process */
} hp_event_kind;

/* What a running trainer reports (from the process hosting rank 0 only, but
 * HP_EVENT_WARNING from any process). The pointers are valid during the
 * callback. */
typedef struct {
    hp_event_kind kind;
    long step; /* 1-based: the step just done */
    float loss, lr, grad_norm, val_loss;
    int nonfinite;
    double tokens_per_s, step_ms, eta_s, seconds;
    long steps_done;
    const char *dir;
    const char *message; /* HP_EVENT_NOTE, HP_EVENT_WARNING: one line */
    long nparams;
    int ranks, ranks_here;
    const char *mesh;
    long start_step;
    int checked_ops;
    double worst_grad_error;
    const hp_validation *validation; /* HP_EVENT_VALIDATED: the whole report */
    const hp_plan_memory *memory;    /* HP_EVENT_START: rank 0's program (bytes, as `hyperpar plan` counts them) */
    const char *fsdp_summary;        /* HP_EVENT_START: FSDP / ZeRO in one line (hp_plan_fsdp.summary:
                                      * "level 3 (ZeRO-3), 3 units, shard group dp=2, ..."); NULL: none */
} hp_event;

/* One resolved setting of a run, as the run directory records it. */
typedef struct {
    const char *key;    /* "lr" */
    const char *value;  /* "0.001" */
    const char *source; /* where the value came from: "default", "config" (a settings file), "flag",
                         * "checkpoint" (a resumed run's saved settings) */
} hp_run_setting;

typedef struct {
    /* the model and its distribution */
    const hp_model *model;      /* required (borrowed) */
    const hp_shard_plan *plan;  /* NULL: one rank (borrowed) */
    hp_world *world;            /* NULL: the one the plan needs (borrowed); its size must be the mesh's */
    double comm_timeout_s;      /* the world made here: a collective waiting longer fails; 0: 300 */
    long a2a_fuse_bytes;        /* the world made here: the all-to-all fuses a pair of supernodes' messages into
                                 * one below this mean per rank pair; 0: the comm default (8 KiB), < 0: never */
    int threads;                /* compute threads of this process, shared out among its ranks (>= 1) */
    int overlap;                /* 1: gradient reductions start early and wait late */
    int ep_overlap;             /* expert-parallel exchanges started before and waited after the compute that
                                 * does not need them: 0 those whose group spans supernodes (auto: inside a
                                 * process the exchange is the CPU's own copies, which overlapping only slows
                                 * on busy cores), 1 every one, -1 none; --overlap off: none either way */
    int validate;               /* 1: step 1 through the validation executor (needs a plan) */
    int bf16;                   /* 1: compute in bf16 (--dtype bf16): bf16 copies of the fp32 master weights,
                                 * bf16 activations where the operator allows, GEMMs through oneDNN; norms'
                                 * statistics, softmax and the loss in fp32; gradients, optimizer state and
                                 * checkpoints fp32. 0: fp32 throughout */
    int bf16_params_all;        /* with bf16: every parameter reaches compute rounded to bf16, norm weights
                                 * and biases too (Megatron's --bf16, FSDP2's param_dtype=bf16); 0: only
                                 * those the bf16 kernels read (linear weights, embeddings). A plan whose
                                 * fsdp line says gather=bf16 implies 1 */
    int fp32_gemm;              /* the fp32 linear layers' GEMMs: 0 OpenBLAS (reproducible), 1 oneDNN,
                                 * 2 the faster of the two per product and shape, measured on each rank's
                                 * threads at start (a run's last bits may then differ between runs) */
    int dp_reduce_bf16;         /* 1: the parameter gradients' data-parallel all-reduces move bf16 (each
                                 * rank's fp32 gradient narrowed, the terms summed in fp32 and rounded
                                 * once, widened into the fp32 gradient; still overlapped with the
                                 * backward): half the bytes. Not with deterministic (the rounding of a
                                 * rank's partial sum depends on the rank count) nor FSDP/ZeRO (their
                                 * reductions: the plan's fsdp reduce=bf16). 0: fp32 */
    double memory_limit_bytes;  /* the memory this process may use: when the programs of its ranks need more
                                 * (as hp_plan_fit_check counts them), hp_train_create fails before they
                                 * are allocated, saying by how much and what would fit (hp_plan_fit.hint).
                                 * 0: hp_memory_available's; < 0: no check */
    /* optimization */
    hp_optimizer_type optimizer;
    float lr;                   /* AdamW peak lr */
    float beta1, beta2, eps, weight_decay;
    float muon_lr, muon_beta, muon_weight_decay;
    const char *muon_momentum;  /* NULL: "ema"; or "sum" */
    const char *muon_scale;     /* NULL: "keller"; or "moonlight" */
    const char *muon_dist;      /* NULL: "layout" (one owner per matrix, chosen by work); or a competing
                                 * strategy, built in the same code: "round-robin" | "zero1-gather" |
                                 * "all-to-all" | "gather-all" (docs/architecture.md, distributed Muon) */
    int muon_waves;             /* distributed Muon's exchange waves per group: wave w + 1's gather and wave
                                 * w - 1's return overlap wave w's Newton-Schulz (1: none; 0: 2) */
    float muon_balance;         /* the layout rule's bound on the busiest rank's Newton-Schulz FLOPs over the
                                 * mean above which matrices are iterated by teams of ranks, row blocks each
                                 * (docs/architecture.md, distributed Muon): 0: 1.10; < 0: never */
    const char *newton_schulz;  /* NULL: "quintic"; or "perstep" | "polar" (the coefficients) */
    const char *muon_params;    /* NULL: none; extra parameters for Muon (comma-separated globs) */
    const char *adamw_params;   /* NULL: none; parameters kept on AdamW (comma-separated globs) */
    hp_schedule_type schedule;
    long warmup_steps;
    float min_lr_frac;
    float grad_clip;            /* global-norm clipping; 0: off */
    const char *remat;          /* rematerialisation: "none" (NULL), "selective" (the attention core and the
                                 * pointwise and normalisation operators recomputed in the backward, GEMM outputs
                                 * kept) or "full" (each block recomputed from its input) */
    const char *remat_save;     /* selective: the operators kept instead ("linear,attention"; NULL: linear) */
    int loss_chunk;             /* > 0: the LM head and the cross-entropy fused over this many vocabulary columns
                                 * at a time, the logits never stored whole (0: off) */
    int moe_chunks;             /* > 1: each MoE layer's tokens cut into this many chunks, each its own dispatch,
                                 * experts and combine (and under expert parallelism its own exchanges, so one
                                 * chunk's experts run while another's rows travel); dropless routing under EP */
    const char *pp_schedule;    /* a pipelined plan (a mesh axis "pp"): "gpipe", "1f1b" (NULL), "zb-h1" or
                                 * "interleaved" (pp_chunks model chunks per stage, Megatron's virtual stages) */
    int pp_chunks;              /* interleaved: chunks per stage (0: 2) */
    const char *pp_split;       /* its blocks over the stages: "balanced" (NULL: by forward FLOPs, the head's
                                 * GEMM included), "even" (torchtitan's rule) or blocks per stage ("3,5") */
    int grad_accum;             /* micro-batches per optimizer step (0 or 1: none); the model's batch is one
                                 * micro-batch, the gradients are their mean (accumulated per rank; under
                                 * FSDP every micro-batch's reduced shard into a sharded accumulator) */
    int grad_accum_comm_last;   /* FSDP levels 2, 3: no communication before the last micro-batch; each unit's
                                 * whole gradient accumulated per rank instead (4 bytes per parameter more) */
    int deterministic;          /* 1: every sum over ranks and micro-batches in a fixed binary-tree order, so
                                 * that a model batch of one micro-slice per rank (hp_deterministic_split)
                                 * gives the same losses bit for bit at 1, 2, 4, ... ranks, threads or
                                 * processes. fp32 compute only (not bf16); pure data parallelism (DP, FSDP,
                                 * ZeRO; no TP, HSDP or pipeline),
                                 * a power-of-two rank count and grad_accum, not grad_accum_comm_last;
                                 * the gradient norm exact (clipping included) */
    int on_nan;                 /* a step whose loss or gradient norm is NaN/Inf: 0 stops the run with an
                                 * error naming the step (nothing of that state is checkpointed), 1 skips
                                 * the step (HP_ON_NAN_STOP / HP_ON_NAN_SKIP) */
    int max_skipped_steps;      /* HP_ON_NAN_SKIP: this many consecutive skipped steps end the run with an
                                 * error (it diverged for good); 0: 10 */
    long steps;                 /* optimizer steps in the run */
    long stop_at;               /* stop (with a checkpoint) after this step; 0: none */
    uint64_t seed;              /* initialisation and data order */
    const char *init_llmc;      /* NULL: GPT-2 initialisation; else start from these llm.c weights */
    const char *init_hf;        /* NULL: none; else start from this Hugging Face directory's weights (the model's
                                 * shape must be config.json's: hp_hf_model_config) */
    /* data: llm.c token shards (a file or a glob) or text read as bytes */
    const char *data;
    hp_train_data_kind data_kind; /* of data and val_data (one kind for both) */
    const char *val_data;       /* NULL: the last val_fraction of data */
    float val_fraction;         /* 0: validate on the training data */
    int shuffle;                /* 1: seeded random order of B*T windows per epoch */
    long val_every;             /* validate every N steps (0: only at the end) */
    long val_steps;             /* batches per validation; 0: no validation */
    /* outputs */
    const char *metrics;        /* NULL: none; else one JSON object per line (on resume: lines of
                                 * steps after the resumed one dropped, then appended) */
    const char *ckpt_dir;       /* NULL: no checkpoints */
    long ckpt_every;            /* 0: only at the end (and at stop_at) */
    int keep_last;              /* 0: keep every checkpoint; K: after each save, only the K newest
                                 * step_* of this run's lineage (this run and the runs it resumed, up to
                                 * where each was resumed; and the one latest names). Checkpoints of other
                                 * lineages in ckpt_dir are left alone. */
    int overwrite;              /* 0: ckpt_dir holding a checkpoint past the step the run starts from
                                 * (a newer one than it resumed, or another run's) is refused before the
                                 * first step; 1: the run writes over them as it reaches their steps */
    int on_write_error;         /* a failed metrics or trace write (a full disk):
                                 * HP_ON_WRITE_ERROR_FAIL ends the run with an error naming the file,
                                 * HP_ON_WRITE_ERROR_WARN warns once (HP_EVENT_WARNING) and that output
                                 * stops. Checkpoint writes always fail the run. */
    int ckpt_sharded;           /* 0: whole tensors (model.safetensors, optim.safetensors) written by rank 0's
                                 * process; 1: the sharded format (every rank writes its own pieces, no
                                 * gathering; pieces.json describes them). Any plan resumes either. */
    /* The caller's settings, written as the object "args" of every
     * checkpoint's state.json (keys and values: strings; read back with
     * hp_ckpt_info). 0: none (state.json then holds batch, seq, optimizer). */
    int ckpt_nargs;
    const char *const *ckpt_arg_keys;   /* [ckpt_nargs] */
    const char *const *ckpt_arg_values; /* [ckpt_nargs] */
    const char *resume;         /* NULL: a fresh run; else a checkpoint directory or a ckpt_dir with 'latest' */
    const char *trace;          /* NULL: none; else PREFIX for Chrome traces PREFIX.rankN.json (PREFIX's
                                 * missing directories are made at create, as ckpt_dir's) */
    long trace_steps;           /* steps traced from the first (>= 1) */
    /* The run directory (see "run directories and reports"): NULL: none. */
    const char *run_dir;
    double run_refresh_s;               /* run.json rewritten at least this often while steps go by (s; 0: every step) */
    int run_nsettings;                  /* the resolved settings recorded in config.json */
    const hp_run_setting *run_settings; /* [run_nsettings] */
    const char *run_command;            /* the command line, recorded in run.json; NULL: none */
    void (*on_event)(void *ctx, const hp_event *e);
    void *event_ctx;
} hp_train_config;

/* The defaults: those of the options table ("training options by name"),
 * which `hyperpar train` has too (2 threads, overlap on, AdamW lr 1e-3,
 * betas 0.9/0.95, eps 1e-8, no weight decay; Muon lr 0.02, beta 0.95; cosine
 * with 20 warmup steps down to 0.1 lr; grad clip 1; 300 steps; seed 1337;
 * val_fraction 0.1, val_every 100, val_steps 10); every string NULL (no data:
 * give it), no plan, no outputs. */
void hp_train_config_default(hp_train_config *c, const hp_model *model);

/* run.json is rewritten at least this often while steps go by (seconds): the
 * default of hp_train_config.run_refresh_s and of `hyperpar train --run-refresh`. */
#define HP_RUN_REFRESH_S 10

typedef struct hp_train hp_train;

/* The deterministic mode's split of a step's batch: `batch` sequences in
 * `slices` equal micro-slices (a power of two) over `ranks` data-parallel
 * ranks (dividing slices): rank r runs slices r, r + ranks, r + 2 ranks, ...
 * one per micro-batch, so *micro_batch = batch * ranks / slices sequences
 * per micro-batch over all ranks (the model's batch) and *grad_accum =
 * slices / ranks. The gradients are summed as one tree over the slices
 * whatever the rank count. Errors name the setting (one line). */
hp_status hp_deterministic_split(int *micro_batch, int *grad_accum, int batch, int ranks, int slices);

/* Compiles, initialises or resumes, opens the data and outputs; the config
 * and its strings are copied (model, plan and world are borrowed). */
hp_status hp_train_create(hp_train **out, const hp_train_config *c);
/* Runs the loop from the first step (or the resumed one) to steps. */
hp_status hp_train_run(hp_train *t);
/* One training step on the next batch, at the schedule's lr, for a loop of
 * one's own (no events or validation; checkpoints when it calls
 * hp_train_save); loss and grad_norm may be NULL. A trainer runs either
 * hp_train_run or hp_train_step, not both. */
hp_status hp_train_step(hp_train *t, float *loss, float *grad_norm);
/* Steps done so far (the resumed step included). */
long hp_train_steps_done(const hp_train *t);
/* 1 when this process hosts rank 0: it alone gets events (warnings aside),
 * writes metrics and checkpoints (under mpirun the other processes get none). */
int hp_train_is_lead(const hp_train *t);
void hp_train_free(hp_train *t);

/* For a loop of hp_train_step (tutorial, step 5). Under mpirun every process
 * calls each of these at the same point of its loop (they communicate). */

/* Writes a checkpoint of the state after the steps done, as hp_train_run's
 * saves do: ckpt_dir/step_NNNNNN in the configured format (ckpt_sharded),
 * atomically, then ckpt_dir/latest naming it; keep_last applies. ckpt_dir
 * NULL or "": hp_train_config.ckpt_dir. Another directory is locked (a run
 * writing there refuses the save) and recovered from an interrupted save
 * first, for this save only. A checkpoint of the same step there is
 * replaced. The training stream's position is saved with it. */
hp_status hp_train_save(hp_train *t, const char *ckpt_dir);
/* Loads a checkpoint (a checkpoint directory, or a ckpt_dir with 'latest';
 * any plan and either format wrote it) into the trainer: the weights, the
 * optimizer state, the steps done and the training stream's position, so
 * that the next hp_train_step continues that run bit for bit (under the
 * plan that wrote it). The model, batch, sequence and optimizer must be the
 * trainer's. Not after hp_train_run; a trainer it loaded runs hp_train_step
 * only (hp_train_config.resume does the same at create for either). On error
 * the trainer's state is undefined: free it. */
hp_status hp_train_load(hp_train *t, const char *ckpt);
/* The model's parameters, in the model's order (as checkpoints name them):
 * how many, the i-th's name (owned by t; NULL outside 0..count-1), and its
 * global shape into dims[HP_PLAN_MAX_DIMS], returning the number of
 * dimensions (-1 outside). wte has the padded vocabulary's rows. */
int hp_train_param_count(const hp_train *t);
const char *hp_train_param_name(const hp_train *t, int i);
int hp_train_param_shape(const hp_train *t, int i, int64_t *dims);
/* The whole (global) fp32 tensor of parameter `name`, n its element count,
 * whatever the plan: each piece read from a rank that holds it current
 * (tensor-parallel boxes, FSDP shards; from other processes under mpirun,
 * where every process gets the whole tensor). */
hp_status hp_train_get_weight(hp_train *t, const char *name, float *out, size_t n);
/* Writes parameter `name` whole from in[n]: every copy of it in every rank of
 * this process (data-parallel replicas, tensor-parallel pieces, FSDP shards);
 * the copies made from it (bf16 compute copies, FSDP's gathered units and
 * bf16 mirror) are remade by the next step. The optimizer state is left as it
 * is. Under mpirun every process passes the same values. Errors name the
 * tensor: an unknown name, a count that is not its size, a value that is not
 * finite. */
hp_status hp_train_set_weight(hp_train *t, const char *name, const float *in, size_t n);

/* ---- training options by name ------------------------------------------ */

/* Every setting of a training run is defined once, in one table: its name
 * (the flag without "--" and the settings-file key), type, field of
 * hp_train_options, default, range, groups and help. `hyperpar train`'s flags,
 * --help and --config keys, a checkpoint's state.json args and the resume
 * rules are made from it; hp_train_config_default takes its defaults from it,
 * and hp_train_options_config turns a set of options into an
 * hp_train_config. A new option is a row here and the field it sets. */

/* A value's type, and text read into a field of that type as a flag would be
 * (an int, long, float — finite —, string of at most cap - 1 bytes, flag —
 * true/false/1/0/yes/no/on/off — or uint64); errors begin with `where`. */
typedef enum { HP_OPT_INT, HP_OPT_LONG, HP_OPT_FLOAT, HP_OPT_STR, HP_OPT_FLAG, HP_OPT_U64 } hp_opt_type;
hp_status hp_opt_parse(void *field, hp_opt_type type, size_t cap, const char *text, const char *where);
/* A field's value as text that hp_opt_parse reads back to the same value
 * (floats: the shortest of %.1g .. %.9g that does, 1e-3f as "0.001"). */
void hp_opt_format(char *buf, size_t n, const void *field, hp_opt_type type);
void hp_opt_format_float(char *buf, size_t n, float v);

/* The training data when none is given: text files every Debian system has. */
#define HP_DEFAULT_DATA "/usr/share/common-licenses/*"

/* The options' values, as text and numbers (the table's fields). */
typedef struct {
    int layers, heads, channels, vocab, max_seq;
    char model[32];             /* gpt2 | pangu-tiny | pangu-2.6b | pangu-13b | pangu-200b */
    float capacity_factor;      /* a MoE model's capacity factor (0: the preset's) */
    char init[512];
    char init_hf[512];          /* a Hugging Face model directory to start from (config.json + safetensors) */
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
    float muon_lr, muon_beta, muon_weight_decay, muon_balance;
    int muon_waves;
    char muon_momentum[16], muon_scale[16], muon_dist[16], ns[16], muon_params[256], adamw_params[256];
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
    int ep;                     /* expert-parallel members: a MoE model's routed experts split by expert, the tokens
                                 * exchanged by all-to-all (mesh dp,ep,tp; the batch split over dp and ep) */
    int pp;                     /* pipeline stages (the GPT-2 plan's mesh pp=N outermost) */
    char pp_schedule[16];       /* gpipe | 1f1b | zb-h1 | interleaved */
    int pp_chunks;              /* interleaved: model chunks per stage */
    char pp_split[256];         /* balanced | even | blocks per stage ("3,5") */
    char remat[16];             /* none | selective | full */
    char remat_save[128];       /* selective's kept operators */
    int loss_chunk;             /* vocabulary columns per chunk of the fused head and loss (0: off) */
    int moe_chunks;             /* each MoE layer's tokens in this many chunks (0 or 1: one) */
    int micro_batches;          /* micro-batches per step (the pipeline's; --grad-accum's field) */
    int fsdp, zero, prefetch;   /* FSDP over --fsdp ranks; ZeRO level; units gathered ahead */
    char hsdp[32];              /* "R,S": R replicas x S shards */
    char fsdp_style[16], reshard[8];
    char fsdp_reduce[8];        /* fp32 | bf16: FSDP's gradient reduce-scatters */
    char fsdp_gather[8];        /* fp32 | bf16: FSDP's parameter all-gathers */
    char fsdp_unit_bytes[24];   /* FSDP units by bytes ("8M"); empty: one per block plus the root */
    char fsdp_keep_bytes[24];   /* FSDP across supernodes: gathered units kept for the backward ("64M"); empty: none */
    char bf16_params[8];        /* gemm | all: which parameters reach compute in bf16 */
    char dp_reduce[8];          /* fp32 | bf16: the data-parallel gradient all-reduces */
    int validate;
    char dtype[8];              /* fp32 | bf16 */
    char fp32_gemm[12];         /* openblas | onednn | auto */
    float comm_timeout;
    long a2a_fuse_bytes;        /* --a2a-fuse-bytes (0: never) */
    float memory;               /* GB this process may use (0: detect; < 0: no check) */
    char overlap[8];
    char ep_overlap[8];         /* auto | always | off */
    char on_nan[16];
    int max_skipped_steps;
    /* tracing */
    char trace[512];
    /* the run directory ("" : runs/<timestamp> unless --metrics is given; "none": none) */
    char run_dir[512];
    float run_refresh;  /* seconds between rewrites of run.json while steps go by */
    long trace_steps;
} hp_train_options;

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
void hp_train_options_default(hp_train_options *o);
/* Each option's range (its definition), then the checks across options;
 * errors name the flag ("hyperpar train: --lr must be > 0, got 0"). */
hp_status hp_train_options_check(const hp_train_options *o);
/* The model's batch and the micro-batches per step: batch and grad_accum,
 * or in the deterministic mode the split of batch into its slices. */
hp_status hp_train_micro_batch(int *batch, int *grad_accum, const hp_train_options *o);
/* The run's plan: the plan file, else GPT-2's over dp/tp, with FSDP from
 * fsdp/hsdp/zero and their settings (prog names the command in errors);
 * NULL for one rank. */
hp_status hp_train_options_plan(hp_shard_plan **out, const hp_train_options *o, const char *prog);
/* The hp_train_config fields the options set (every one but model, plan,
 * world, resume, trace, run_dir, the run's settings and command, the saved
 * args and the event callback, which are left as they are); strings point
 * into o, which must outlive c's use. */
hp_status hp_train_options_config(hp_train_config *c, const hp_train_options *o);
/* The options that change the program, as a plan report config for `plan` (its world, rank, processes and
 * listing left at their defaults; the model's batch: one micro-batch, as `hyperpar train` runs it); strings
 * point into o, the plan is borrowed. */
hp_status hp_plan_report_config_from_options(hp_plan_report_config *c, const hp_train_options *o,
                                             const hp_shard_plan *plan);

/* `hyperpar simulate --check`: the options' run predicted (hp_simulate, this machine: the world's supernodes
 * emulated in this process over a link of inter_bw_GBps and inter_latency_us, or the processes of mpirun) and
 * measured (the same options trained for warmup + steps steps on that world, each step timed; the median). */
typedef struct {
    int warmup, steps;      /* steps not timed, then timed (0: 3 and 10) */
    int supernodes;         /* emulated supernodes in this process (0: 1; under mpirun: the processes) */
} hp_check_config;

typedef struct {
    double predicted_s, measured_s; /* per optimizer step */
    double error;                   /* predicted / measured - 1 */
    double measured_min_s, measured_max_s;
    hp_sim_report *sim;             /* the prediction in full (owned) */
} hp_check_result;

/* sc: the prediction's settings (its cluster must be NULL: a check runs here); o: the run (its plan options,
 * model, batch, ...; its steps, metrics, checkpoints and run directory are ignored). Only the process hosting
 * rank 0 gets the result filled (*lead 1). */
hp_status hp_simulate_check(hp_check_result *out, int *lead, const hp_train_options *o, const hp_sim_config *sc,
                            const hp_check_config *cc);
void hp_check_result_free(hp_check_result *r);

/* ---- the strategy search (`hyperpar plan --auto`) ------------------------ */

/* Every way the project runs `base`'s model on `world` ranks — mesh factorisations pp x dp x ep x tp, the
 * data-parallel form (replicated, ZeRO-1/2, FSDP, HSDP with each shard-group size), micro-batches, the
 * pipeline's schedule, remat — each compiled and priced by the cost model as `hyperpar simulate` prices a plan,
 * pruned by memory, ranked by predicted step time (src/autopar/search.h states the method). The global batch
 * is base's --batch x --grad-accum, split into each candidate's micro-batches; base's other settings (model,
 * seq, dtype, optimizer, ...) are kept. */
enum { HP_AUTO_NO_PP = 1, HP_AUTO_NO_TP = 2, HP_AUTO_NO_EP = 4, HP_AUTO_NO_SHARD = 8, HP_AUTO_NO_REMAT = 16,
       HP_AUTO_NO_HSDP = 32, HP_AUTO_DTYPE = 64 /* also search the compute dtype (fp32, bf16; else base's) */ };

typedef struct {
    int world;              /* ranks (required) */
    hp_sim_config sim;      /* the cluster, profile, links and compute scale, as hp_simulate takes them */
    int processes;          /* without a cluster file: the supernodes (processes) of this machine (0: 1) */
    double memory_bytes;    /* per rank; 0: the cluster's memory_GB, or without a cluster file this machine's
                             * available memory over the world's ranks per process */
    int max_micro;          /* most micro-batches tried (0: 16) */
    unsigned skip;          /* HP_AUTO_NO_*: dimensions left out; HP_AUTO_DTYPE: one added */
} hp_auto_config;

typedef struct {
    char flags[256];        /* the candidate as `hyperpar train` flags (--batch, the mesh, the form, --grad-accum,
                             * --pp-schedule, --remat) */
    int pp, dp, ep, tp, micro, remat; /* its mesh, micro-batches and remat (0 none, 1 selective, 2 full) */
    char form[12];          /* "replicated", "zero-1", "zero-2", "fsdp", "hsdp" */
    char sched[12];         /* the pipeline's schedule ("" without one) */
    int ok;                 /* 1: compiles, fits and was priced */
    int fits;               /* compiled: 1 when it fits the memory */
    double step_s, tokens_per_s, memory_bytes;
    double compute_s, exposed_intra_s, exposed_inter_s, bubble_s, optimizer_s;
    char why[200];          /* !ok: why not (a refusal of the settings or the compile, or the memory) */
} hp_auto_row;

typedef struct {
    hp_auto_row *rows;      /* every candidate evaluated: ok ones fastest first, then the rest in search order */
    int nrows, nok, nmeshes, nskipped;
    double memory_limit;    /* bytes per rank the candidates were held to */
    char method[512];       /* how the space was searched */
    hp_shard_plan *best;    /* the winner's plan (NULL: nothing fits) */
    char best_flags[256];   /* what train needs besides --plan FILE: --batch, --grad-accum, --pp-schedule, --remat */
    char cluster[64], profile[64];
} hp_auto_report;

hp_status hp_plan_auto(hp_auto_report **out, const hp_train_options *base, const hp_auto_config *c);
void hp_auto_report_free(hp_auto_report *r);

/* ---- inference ---------------------------------------------------------- */

/* Inference: a forward-only GPT-2 program for 1 x T tokens with the weights
 * of a checkpoint, on its own pool of threads (`hyperpar sample`). */
typedef struct hp_infer hp_infer;

/* ckpt: a checkpoint directory or a ckpt_dir with 'latest'; T: positions per
 * forward (0: the model's max_seq; at most max_seq); threads in 1..256. */
hp_status hp_infer_create(hp_infer **out, const char *ckpt, int T, int threads);
void hp_infer_free(hp_infer *inf);
int hp_infer_vocab(const hp_infer *inf);        /* V: tokens are 0..V-1 */
int hp_infer_padded_vocab(const hp_infer *inf); /* Vp: the length of a logits row */
int hp_infer_seq(const hp_infer *inf);          /* T */
/* Runs the forward over tokens[0..n) (1 <= n <= T; the rest of the window is
 * token 0) and gives the logits of position pos < n: a row of Vp floats, the
 * first V meaningful, valid until the next call or hp_infer_free. */
hp_status hp_infer_logits(hp_infer *inf, const float **logits, const int32_t *tokens, int n, int pos);

/* A seeded random stream for sampling (the library's generator). */
typedef struct {
    uint64_t s[4];
} hp_sampler;
void hp_sampler_seed(hp_sampler *r, uint64_t seed);
/* A token from logits[0..V): the argmax at temperature <= 0 (no draw), else
 * a draw from softmax(logits / temperature). */
int hp_sampler_pick(hp_sampler *r, const float *logits, int V, float temperature);

/* The shape of a GPT-2 in llm.c's terms (`hyperpar export` prints it). */
typedef struct {
    int layers, heads, channels, vocab, padded_vocab, max_seq;
} hp_llmc_shape;

/* The parameters' type in an llm.c file written by hp_export_llmc or
 * hp_llmc_reexport: FP32 is llm.c's version 3 (the floats as they are), BF16
 * its version 5 (each rounded to bf16, nearest even; half the size). Reading
 * takes either (bf16 widened to fp32 exactly). */
typedef enum { HP_LLMC_FP32 = 0, HP_LLMC_BF16 = 1 } hp_llmc_dtype;
/* "fp32" | "bf16" (as `hyperpar export --llmc-dtype` spells them); another
 * name is an error naming it. */
hp_status hp_llmc_dtype_parse(hp_llmc_dtype *out, const char *name);

/* The model shape of a checkpoint (a checkpoint directory or a ckpt_dir). */
hp_status hp_ckpt_llmc_shape(hp_llmc_shape *out, const char *ckpt_dir);
/* An llm.c file (fp32 or bf16) read into GPT-2's parameters and written
 * again as llm.c in `dtype` (atomically): the round trip; *shape (may be
 * NULL) gets its shape. */
hp_status hp_llmc_reexport(hp_llmc_shape *shape, const char *llmc_path, const char *llmc_in, hp_llmc_dtype dtype);

#define HP_ON_NAN_STOP 0
#define HP_ON_NAN_SKIP 1
#define HP_ON_WRITE_ERROR_FAIL 0
#define HP_ON_WRITE_ERROR_WARN 1

/* ---- tokenizers ---------------------------------------------------------- */

/* GPT-2's byte-level BPE (`hyperpar tokenize`, `sample --tokenizer`): the
 * same ids as GPT-2's encoder.py, for any bytes (text that is not UTF-8
 * too); decode(encode(text)) == text. <|endoftext|> in the text is plain
 * text, as in GPT-2's encoder. Not for use by two threads at once (it caches
 * the pieces it has seen). */
typedef struct hp_tokenizer hp_tokenizer;

/* path: a directory with vocab.json + merges.txt, encoder.json + vocab.bpe
 * or tokenizer.json (Hugging Face, byte-level BPE); or one of those files
 * (a vocabulary .json finds its merges file beside it). */
hp_status hp_tokenizer_load(hp_tokenizer **out, const char *path);
void hp_tokenizer_free(hp_tokenizer *t);
int hp_tokenizer_vocab_size(const hp_tokenizer *t); /* V: ids are 0..V-1 */
int hp_tokenizer_eot(const hp_tokenizer *t);        /* the id of <|endoftext|>, -1 if none */
/* The ids of text[0..len): *ids malloc'd (free with free()), *n of them. */
hp_status hp_tokenizer_encode(int32_t **ids, size_t *n, hp_tokenizer *t, const char *text, size_t len);
/* The same for the whole of a regular file (a FIFO or device is refused). */
hp_status hp_tokenizer_encode_file(int32_t **ids, size_t *n, hp_tokenizer *t, const char *path);
/* The bytes of ids[0..n) (*text malloc'd, NUL after the *len bytes); an id
 * outside [0, V) is an error. */
hp_status hp_tokenizer_decode(char **text, size_t *len, const hp_tokenizer *t, const int32_t *ids, size_t n);
/* The bytes of one token (not NUL-terminated; *len of them; a token may end
 * inside a UTF-8 sequence), NULL for an id outside [0, V). */
const char *hp_tokenizer_token(const hp_tokenizer *t, int id, size_t *len);

/* Text files to llm.c token shards (`hyperpar tokenize`): every file, in
 * order, preceded by <|endoftext|> (as llm.c's data scripts do). The first
 * val_fraction of the text's bytes (to the end of the piece it ends in) is
 * the validation split; the rest, training. Shards of at most shard_tokens
 * tokens are written as DIR/PREFIX_val_000000.bin, ... and
 * DIR/PREFIX_train_000000.bin, ..., each atomically (temporary name, fsync,
 * rename). Shards of PREFIX already in DIR are an error unless overwrite,
 * which removes them first. */
typedef struct {
    long long bytes_done, bytes_total, tokens;
    int file, files; /* the file being read (0-based) of so many */
    double seconds;
} hp_tokenize_progress;

typedef struct {
    const char *tokenizer;           /* as for hp_tokenizer_load */
    const char *const *inputs;       /* files or glob patterns (each pattern's matches sorted) */
    int ninputs;
    const char *out_dir, *prefix;    /* the shards' directory (made if missing) and name prefix */
    double val_fraction;             /* in [0, 1) */
    long long shard_tokens;          /* tokens per shard, 1 .. 2^31 - 1 */
    int overwrite;
    /* called about every MiB of text and at the end (may be NULL) */
    void (*on_progress)(void *ctx, const hp_tokenize_progress *p);
    void *ctx;
} hp_tokenize_config;

typedef struct {
    long long bytes, val_tokens, train_tokens; /* tokens include the <|endoftext|> separators */
    int files, val_shards, train_shards, vocab;
    double seconds;
} hp_tokenize_summary;

void hp_tokenize_config_default(hp_tokenize_config *c);
hp_status hp_tokenize_files(hp_tokenize_summary *sum, const hp_tokenize_config *c);

/* ---- run directories and reports ---------------------------------------- */

/* A run directory (hp_train_config.run_dir) is written as the run goes, by
 * the process hosting rank 0, each file atomically:
 *   run.json      the run's record: status ("running", then "done" or
 *                 "failed" with the error), the command, start and update
 *                 times, steps, mesh and ranks, the metrics file, the trace
 *                 prefix and the files it names (trace_files: every rank's
 *                 PREFIX.rankN.json), the checkpoints' directory, the last step and
 *                 the process's peak memory; rewritten at the start, after
 *                 every validation and checkpoint, and at the end
 *   config.json   every setting with its value and source (run_settings)
 *   plan.json     the plan as compiled: the passes, and per rank the
 *                 layouts and local shapes, the collectives with totals per
 *                 phase and kind, the memory of its program
 *   machine.json  CPU model, cores, the ISA the kernels use, library versions
 *   metrics.jsonl the metrics when hp_train_config.metrics is NULL
 *                 (appended and flushed line by line)
 * Traces go where hp_train_config.trace says (PREFIX.rankN.json; a prefix
 * inside the directory keeps them with the run; PREFIX's missing directories
 * are made). A run killed mid-way keeps
 * everything up to its last completed step. hp_train_run writes the end
 * status; a loop of hp_train_step leaves run.json "running" and writes no
 * metrics (it has no events). */

/* A fresh directory name under parent ("runs" when NULL):
 * parent/YYYYmmdd-HHMMSS, with -2, -3, ... when that exists (not created). */
hp_status hp_run_dir_default(char *buf, int n, const char *parent);

/* hp_report_write: one self-contained HTML page (inline SVG and CSS, a few
 * lines of inline JavaScript, no URL of anything outside the file). */
typedef struct {
    const char *run_dir;               /* the run (a run directory, or a metrics file); NULL with bench */
    const char *const *compare;        /* [ncompare] runs overlaid on it, each compared with it */
    int ncompare;
    const char *const *bench;          /* [nbench] benchmark JSON files (bench, bench comm, bench
                                        * parallel --json): a benchmark page instead of a run's */
    int nbench;
    const char *out;                   /* the page; NULL: RUN_DIR/report.html, or the first bench file's
                                        * name with .html for .json */
    int width;                         /* plot width in CSS pixels; points are decimated to it; 0: 760 */
    long trace_from, trace_to;         /* traced steps in the timeline (1-based, inclusive); 0: all */
} hp_report_config;

#define HP_REPORT_MAX_COMPARE 16

typedef struct {
    char out[1024];     /* the file written */
    long bytes;         /* its size */
    long steps;         /* training-loss points of the run */
    int truncated;      /* its metrics' last line was cut short (the page says so) */
    int finished;       /* its run.json says "done" */
    int ncompare;
    struct {
        char run[256];
        long steps;          /* steps both runs have */
        double pearson;      /* of the training losses over them; NaN when undefined */
        double max_abs_delta; /* max |loss difference| over them */
    } compare[HP_REPORT_MAX_COMPARE];
    int traced_ranks;
    double hidden_share; /* share of communication time overlapping compute, the shown steps; -1: no trace */
    int simulated;       /* the directory held a simulated step (hyperpar simulate --timeline), not a run */
    double predicted_ms; /* its predicted step time */
} hp_report_summary;

/* Reads the run (or benchmark files) and writes the page atomically; errors
 * are one line naming the file (and line) at fault. sum may be NULL. */
hp_status hp_report_write(hp_report_summary *sum, const hp_report_config *c);

/* ---- for programs: errors, clocks, settings files ----------------------- */

/* A new error with a printf-style message (one line: name the file, field or
 * value at fault), and an error wrapped with a prefix ("FILE: inner"). */
hp_status hp_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
hp_status hp_error_wrap(hp_status inner, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes text to path atomically (a temporary name, fsync, rename, the directory fsynced); errors name path. */
hp_status hp_write_text_file(const char *path, const char *text);
#ifndef HP_TRY
/* Returns the status of expr from the calling function when it is an error. */
#define HP_TRY(expr)                     \
    do {                                 \
        hp_status hp_try_st_ = (expr);   \
        if (hp_try_st_) return hp_try_st_; \
    } while (0)
#endif
/* Monotonic seconds; the median of v[n] (reorders v). */
double hp_now(void);
double hp_median(double *v, int n);

/* A settings file (`key = value` per line, `#` comments, double-quoted
 * values with escapes): the format of `hyperpar train --config FILE`. Errors
 * read "FILE:LINE: problem"; a key given twice is one. */
typedef struct hp_settings hp_settings;
hp_status hp_settings_load(hp_settings **out, const char *path);
void hp_settings_free(hp_settings *s);
int hp_settings_count(const hp_settings *s);
/* Entry i in file order: its key, value and line. */
void hp_settings_entry(const hp_settings *s, int i, const char **key, const char **value, int *line);
const char *hp_settings_file(const hp_settings *s);

/* ---- checkpoints -------------------------------------------------------- */

/* Writes the weights of a checkpoint (a checkpoint directory, or a ckpt_dir
 * with 'latest'; its fp32 master weights) as an llm.c GPT-2 file in `dtype`
 * (HP_LLMC_FP32: version 3, HP_LLMC_BF16: version 5), atomically: written
 * under a temporary name, synced, then renamed. */
hp_status hp_export_llmc(const char *llmc_path, const char *ckpt_dir, hp_llmc_dtype dtype);
/* transformers' save_pretrained default shard limit: 5 GB */
#define HP_HF_MAX_SHARD_DEFAULT 5000000000LL
/* A checkpoint's weights as a Hugging Face model directory out_dir (new; written beside it, then renamed):
 * config.json and the tensors ("format": "pt"; fp32, or bf16 when bf16 != 0) with the names, shapes and
 * layouts transformers' GPT2LMHeadModel (Conv1D weights transposed, the head tied), LlamaForCausalLM (q/k/v/o
 * and gate/up/down apart, the query and key rows permuted to Hugging Face's RoPE halves) and
 * MixtralForCausalLM (MoE presets without shared experts) load; the padded vocabulary rows are cut. The
 * tensors are one model.safetensors when that file is at most max_shard_bytes (0: HP_HF_MAX_SHARD_DEFAULT),
 * else model-00001-of-0000N.safetensors ... (each file at most max_shard_bytes, header included, unless it
 * holds a single larger tensor; tensors never split) and model.safetensors.index.json, as transformers
 * writes them. */
hp_status hp_export_hf(const char *out_dir, const char *ckpt_dir, int bf16, int64_t max_shard_bytes);
/* A shard limit as transformers' max_shard_size spells it: bytes ("1000000"), or digits and a unit, in any
 * case: KB, MB, GB, TB (powers of 1000; a lowercase final b, as in "5Gb", counts bits: an eighth) or KiB,
 * MiB, GiB, TiB (powers of 1024). More than 0; an error quotes the text. */
hp_status hp_hf_size_parse(int64_t *bytes, const char *text);
/* A Hugging Face model directory's shape: config.json's model_type (gpt2, llama, mixtral) as the model family
 * (family: "gpt2", "llama" or "moe", cap bytes) and its sizes in *out; errors name the file and the key. The
 * weights themselves are read by the trainer (hp_train_config.init_hf): F32 or BF16, model.safetensors or the
 * shards of model.safetensors.index.json, in the layouts hp_export_hf writes. */
hp_status hp_hf_model_config(hp_model_config *out, char *family, size_t cap, const char *dir);

/* Writes checkpoint src (a checkpoint directory, or a ckpt_dir with 'latest')
 * as the new checkpoint directory dst (which must not exist) in the format
 * asked: sharded 1: pieces.json and one data file holding every tensor whole;
 * 0: model.safetensors and optim.safetensors (what a 1-rank run writes);
 * -1: the other format than src's.
 * Every tensor and state.json are carried over unchanged, bit for bit; dst is
 * written under a temporary name and renamed into place. *was_sharded (may
 * be NULL) tells src's format. */
hp_status hp_ckpt_convert(const char *dst, const char *src, int sharded, int *was_sharded);

/* The model shape in an llm.c GPT-2 file's header (its weights are what
 * hp_train_config.init_llmc loads). */
hp_status hp_model_config_llmc(hp_model_config *out, const char *llmc_path);

/* A checkpoint's state.json, for a program resuming its own runs: the step,
 * the model shape and the caller's settings (hp_train_config.ckpt_arg_*).
 * The training stream's position inside it is the trainer's (resume). */
typedef struct hp_ckpt_info hp_ckpt_info;

/* path: a checkpoint directory, or a ckpt_dir with 'latest'. */
hp_status hp_ckpt_info_open(hp_ckpt_info **out, const char *path);
void hp_ckpt_info_free(hp_ckpt_info *ci);
/* The checkpoint directory resolved (owned by ci). */
const char *hp_ckpt_info_dir(const hp_ckpt_info *ci);
/* The steps done when it was written. */
long hp_ckpt_info_step(const hp_ckpt_info *ci);
/* The model shape it holds. */
void hp_ckpt_info_model(const hp_ckpt_info *ci, hp_model_config *out);
/* The settings saved with it: a count (-1: the checkpoint has no "args"
 * object), and entry i's key and value (owned by ci); string values only. */
int hp_ckpt_info_nargs(const hp_ckpt_info *ci);
void hp_ckpt_info_arg(const hp_ckpt_info *ci, int i, const char **key, const char **value);

/* ---- benchmarks ----------------------------------------------------------
 * For `hyperpar bench` and its kin: measurements, peaks and kernel listings,
 * kept out of the tutorial's path. */

/* Benchmarks. Each measures in the calling process; run them in a process of
 * their own to keep peak memory per configuration. */

/* One single-process training step of GPT-2 (forward, backward, AdamW phase
 * with clipping at 1) on a fixed random batch: two warm-up steps, then
 * `steps` timed ones. */
typedef struct {
    hp_model_config model;
    int B, T;
    int threads;       /* >= 1 */
    int steps;         /* timed steps >= 1 */
    const char *trace; /* NULL or "": none; else every timed step traced to PREFIX.rank0.json */
    int bf16;          /* 1: the step computes in bf16 (as train --dtype bf16) */
} hp_bench_train_config;

typedef struct {
    double tokens_per_s;            /* B * T / median step */
    double step_ms, forward_ms, backward_ms, optimizer_ms; /* medians */
    double gflops;                  /* the program's forward + backward FLOPs / median step */
    double flops;                   /* the program's forward + backward FLOPs per step */
} hp_bench_train_result;

hp_status hp_bench_train_step(hp_bench_train_result *res, const hp_bench_train_config *cfg);

/* This machine's FP32 FMA peak (GFLOP/s) on `threads` threads, with the
 * widest FMA vectors the build targets: the best of 8 measurements spread
 * over about a second. *isa: "avx512", "avx2+fma" or "scalar" (static). */
hp_status hp_bench_fma_peak(double *gflops, const char **isa, int threads);

/* Which instruction set each kernel family uses on this machine, detected at
 * run time (cpuid; oneDNN's own choice for probe matmuls): one row per family
 * ("gemm fp32 (OpenBLAS)", "gemm fp32 (oneDNN)", "gemm bf16 (oneDNN)",
 * "bf16 conversions", "hand-written fp32", "hand-written bf16"), isa one of
 * "amx", "avx512-bf16", "avx512", "avx2", "portable". HP_KERNELS_PORTABLE=1
 * in the environment forces the portable bf16 paths (same results, slower). */
typedef struct {
    char family[32];
    char isa[16];
    char detail[96]; /* the implementation's own name (OpenBLAS core, oneDNN impl) */
} hp_kernel_isa;
#define HP_KERNEL_ISA_MAX 8
/* Fills rows[0..HP_KERNEL_ISA_MAX); returns the number of rows. */
int hp_kernels_isa(hp_kernel_isa *rows);
/* Which kernels OpenBLAS runs: its core name (as hp_kernels_isa's first row
 * has it) and the core type OPENBLAS_CORETYPE in the environment forces. */
typedef struct {
    char core[64];
    char coretype[64]; /* "" when unset */
    int coretype_set;  /* 1: OPENBLAS_CORETYPE is set */
} hp_openblas_kernels;
void hp_kernels_openblas(hp_openblas_kernels *out);
/* The CPU's model name as /proc/cpuinfo gives it ("unknown" when it does not). */
void hp_cpu_model(char *buf, size_t n);

/* The bf16 matmul peak (GFLOP/s) on `threads` threads: oneDNN bf16 matmuls
 * (bf16 in, fp32 accumulation and out) of cache-friendly square shapes in a
 * loop, best of several runs (AMX tiles where present, AVX512-BF16 dot
 * products elsewhere, the portable fallback without AVX-512). *isa: what ran
 * ("amx", "avx512-bf16", ..., as hp_kernels_isa; static); impl[64]: oneDNN's
 * name for it. */
hp_status hp_bench_bf16_peak(double *gflops, const char **isa, char impl[64], int threads);

/* The bf16 peak as instruction throughput (GFLOP/s) on `threads` threads, the
 * counterpart of hp_bench_fma_peak and the peak bf16 MFU is taken against:
 * AMX tile dot products (TDPBF16PS) where the CPU and OS offer AMX tiles,
 * else AVX512-BF16 dot products (VDPBF16PS); best of 8 runs over about a
 * second. *isa: "amx tdpbf16ps", "avx512-bf16 vdpbf16ps", or "none" with
 * *gflops 0 where neither exists (static). */
hp_status hp_bench_bf16_insn_peak(double *gflops, const char **isa, int threads);

/* This machine's clock, for bounds on a measured peak: base_ghz (the nominal
 * clock: cpufreq's base_frequency, else the "@ 2.40GHz" of /proc/cpuinfo's
 * model name), max_ghz (cpufreq's cpuinfo_max_freq, turbo included) and
 * cores (physical cores: distinct physical id / core id pairs), each 0 where
 * unknown (KVM guests often show no clock at all); source: where they came
 * from, or why not. cpuinfo and cpufreq_dir: NULL for /proc/cpuinfo and
 * /sys/devices/system/cpu/cpu0/cpufreq (other paths: tests). A missing file
 * is "unknown", never an error. */
typedef struct {
    double base_ghz, max_ghz;
    int cores;
    char source[256];
} hp_cpu_clock;
void hp_cpu_clock_read(hp_cpu_clock *c, const char *cpuinfo, const char *cpufreq_dir);

/* A peak settled for MFU (`hyperpar bench`). A measured peak is a lower
 * estimate (a busy core only lowers it), so it is raised to the floor where
 * one is known: min(threads, cores) x base clock x the FLOPs one unit of the
 * peak's instruction retires per cycle (one unit per core: 32 for avx512, 16
 * for avx2+fma, 1024 for amx tdpbf16ps, 64 for avx512-bf16 vdpbf16ps). The
 * ceiling (threads x max clock x FLOPs per cycle x the most units a core has:
 * 2, AMX 1) is never applied, only reported when the measurement exceeds it
 * (then the clock the system reports is doubtful). */
typedef struct {
    double measured; /* the best of the runs (GFLOP/s) */
    double floor;    /* 0: not known (clock, cores or the instruction's width unknown) */
    double ceiling;  /* 0: not known */
    double peak;     /* MFU's denominator: max(measured, floor) */
    char note[400];  /* one line: how peak was settled, the bounds and their inputs, or why there are none */
} hp_bench_peak;
/* isa: the *isa of hp_bench_fma_peak or hp_bench_bf16_insn_peak (another
 * name: no bounds); clock NULL: this machine's (hp_cpu_clock_read). */
void hp_bench_peak_settle(hp_bench_peak *p, double measured, const char *isa, int threads, const hp_cpu_clock *clock);

/* MFU of an achieved rate against a peak, as `hyperpar bench` prints and
 * writes it: known = 1 and mfu = achieved / peak in [0, 1] when the achieved
 * rate is at most the peak; else (the peak was under-measured, or there is no
 * peak) known = 0, mfu 0, the table cell "n/a" and the JSON fields
 * "mfu": null with "mfu_note" saying why. Never a figure above 100%. */
typedef struct {
    int known;
    double mfu;
    char cell[16];   /* the table's MFU column: "61.3%" or "n/a" */
    char note[160];  /* "" when known; else why (one line, no quotes) */
    char json[256];  /* the row's fields: "\"mfu\": 0.6130" or "\"mfu\": null, \"mfu_note\": \"...\"" */
} hp_bench_mfu;
void hp_bench_mfu_get(hp_bench_mfu *m, double achieved_gflops, double peak_gflops);

/* One linear-layer product of a GEMM shape (`hyperpar bench --gemm`):
 * out[N,OC] = inp[N,IC] . W^T (fwd), dinp = dout . W (bwd-data) or
 * dW = dout^T . inp (bwd-weight), timed (best of reps) through the engine's
 * OpenBLAS kernels (fp32), oneDNN fp32, and oneDNN bf16 (bf16 inputs, fp32
 * accumulation; bf16 output, fp32 for bwd-weight), on random data. */
typedef enum { HP_GEMM_PRODUCT_FWD = 0, HP_GEMM_PRODUCT_BWD_DATA = 1, HP_GEMM_PRODUCT_BWD_WEIGHT = 2 } hp_gemm_product;
typedef struct {
    int N, IC, OC;
    hp_gemm_product product;
    int threads; /* >= 1 */
    int reps;    /* timed runs >= 1 (after one warm-up) */
} hp_bench_gemm_config;

typedef struct {
    double gflops_openblas, gflops_onednn_f32, gflops_onednn_bf16;
    const char *faster_f32; /* "OpenBLAS" or "oneDNN": the per-shape choice in fp32 mode */
    char impl_f32[64], impl_bf16[64]; /* oneDNN's implementation names */
    char isa_bf16[16];                /* the ISA the bf16 product ran on */
} hp_bench_gemm_result;

hp_status hp_bench_gemm(hp_bench_gemm_result *res, const hp_bench_gemm_config *cfg);

/* GPT-2's training step through a sharding plan on rank threads (GPT-2's
 * dp x tp plan; dp = tp = 0: the plain engine, no plan), profiled on rank 0:
 * two warm-up steps, then medians of `steps`. */
typedef struct {
    hp_model_config model;
    int B, T;
    int dp, tp;
    int overlap; /* 1: gradient reductions overlapped with the backward */
    int threads; /* in all, shared out among the ranks */
    int steps;
} hp_bench_parallel_config;

typedef struct {
    double tokens_per_s, step_ms;
    double compute_ms;   /* kernels */
    double comm_ms;      /* collectives run inside the step (exposed) */
    double optimizer_ms; /* the optimizer phase */
    double other_ms;     /* the rest: dispatch, hand-offs, input scatter */
} hp_bench_parallel_result;

hp_status hp_bench_parallel_row(hp_bench_parallel_result *res, const hp_bench_parallel_config *cfg);

/* FSDP side by side (`hyperpar bench fsdp`): GPT-2's step under plain data
 * parallel (fsdp NULL: replicated, all-reduce), FSDP over `ranks`, or HSDP
 * (replicas x ranks / replicas shards), on rank threads in emulated
 * supernodes (contiguous ranks; the inter-supernode link throttled). */
typedef struct {
    hp_model_config model;
    int B, T;
    int ranks, replicas;        /* replicas > 1: HSDP */
    const char *fsdp;           /* NULL: DP; else the plan's fsdp settings besides the axes ("level=3 style=fsdp2") */
    int supernodes;             /* emulated (>= 1) */
    double inter_bw_gbps, inter_latency_us; /* 0: unthrottled */
    int threads, steps;
    int bf16;                   /* 1: bf16 compute (train --dtype bf16); fsdp may then say gather=bf16 */
    hp_world *world;            /* borrowed: run on this world (under mpirun: its processes are the supernodes,
                                 * ranks and supernodes must be its own, its link options apply; every
                                 * process calls, rank 0's process gets the result); NULL: emulated here.
                                 * A 1-rank row never uses it */
} hp_bench_fsdp_config;

typedef struct {
    double tokens_per_s, step_ms, compute_ms;
    double exposed_comm_ms;     /* time rank 0's thread was blocked on collectives in the forward and backward
                                 * (waits and blocking calls, not starts) */
    double comm_steps_ms;       /* time rank 0 spent in its communicating steps (exposed_comm_ms plus the
                                 * starts, and the copies those steps make: the fsdp2 style's staging) */
    double optimizer_ms;
    double comm_busy_ms;        /* time rank 0's collectives were running */
    double hidden_pct;          /* 100 (1 - exposed / busy): the share that hid behind compute */
    double memory_mb;           /* rank 0's program (parameters, gradients, state, arena, scratch) */
} hp_bench_fsdp_result;

hp_status hp_bench_fsdp_row(hp_bench_fsdp_result *res, const hp_bench_fsdp_config *cfg);

/* Distributed Muon side by side (`hyperpar bench muon`): GPT-2's step on
 * hp_bench_fsdp_row's plans and emulated supernodes, with Muon under one
 * strategy of its distributed update (muon_dist: "layout", "round-robin",
 * "zero1-gather", "all-to-all", "gather-all"; parallel/muon_plan.h says how
 * each is built) or with AdamW (muon_dist NULL), at their defaults. */
typedef struct {
    hp_bench_fsdp_config run;
    const char *muon_dist;
    int waves;              /* exchange waves per group (hp_train_config.muon_waves; 0: the default) */
} hp_bench_muon_config;

typedef struct {
    double step_ms;          /* the whole training step, optimizer included */
    double compute_ms;       /* the forward's and backward's kernels */
    double exposed_comm_ms;  /* rank 0 blocked on collectives in the forward and backward */
    double optimizer_ms;     /* the optimizer phase, split below (rank 0's nodes) */
    double gather_ms;        /* momentum, packing and the collectives to the owners */
    double ns_ms;            /* Newton-Schulz (muon_orth) */
    double return_ms;        /* the collectives that bring the updates back */
    double update_ms;        /* the updates written into the parameters (muon_apply) */
    double rest_ms;          /* everything else: AdamW's updates, norms, clipping */
    double opt_comm_ms;      /* every communicating node of the optimizer (exposed: the phase follows the backward) */
    double memory_mb;        /* rank 0's program */
} hp_bench_muon_result;

hp_status hp_bench_muon_row(hp_bench_muon_result *res, const hp_bench_muon_config *cfg);

/* `hyperpar bench pipeline` (issue 26): one GPT-2 training configuration on rank threads of this process,
 * mesh pp=PP,dp=DP (tp 1): `micro` micro-batches of batch x seq per data-parallel rank and step. */
typedef struct {
    hp_model_config model;
    int batch, seq;          /* one micro-batch (split over dp) */
    int pp, dp;              /* stages, data-parallel ranks (0 or 1: none) */
    int micro;               /* micro-batches per step (0 or 1: one) */
    const char *schedule;    /* "gpipe", "1f1b" (NULL), "zb-h1", "interleaved" */
    int chunks;              /* interleaved: chunks per stage (0: 2) */
    const char *remat;       /* "none" (NULL), "selective", "full" */
    int loss_chunk;          /* the fused head and loss's columns per chunk (0: off) */
    int threads;             /* compute threads in all, shared out among the ranks */
    int steps;               /* timed steps after 2 untimed (0: 3) */
} hp_bench_pipeline_config;

typedef struct {
    int ranks;
    double step_ms;          /* median step */
    double tokens_per_s;     /* micro x batch x seq per step */
    double busy_ms[64];      /* per rank: its computing steps, the optimizer's included (median) */
    double idle[64];         /* per rank: its idle share of the step: 1 - busy / step */
    double bubble;           /* the pipeline's stages' mean idle share (the first data-parallel replica's;
                              * without a pipeline: rank 0's) */
    double wait[64];         /* per rank: its communicating steps' share of the step (a stage: its sends and
                              * receives, waiting for its neighbours, and the tied gradients' exchange) */
    double bubble_wait;      /* the stages' mean wait share */
    double bubble_formula;   /* (p - 1) / (m + p - 1) */
    double bubble_sim;       /* the schedule simulated with forward 1, backward 2 (input and weight parts 1) */
    double arena_mb[64];     /* per rank: the activation arena its program allocated */
    double planned_mb[64];   /* per rank: the compile's plan of it (what `hyperpar plan` reports) */
} hp_bench_pipeline_result;

hp_status hp_bench_pipeline_row(hp_bench_pipeline_result *res, const hp_bench_pipeline_config *cfg);

/* A Mixture-of-Experts model's training step under expert parallelism (`hyperpar bench moe`): the named model
 * (moe-tiny, moe-small) on ep rank-threads of one compute thread each (ep 1: one rank, no plan), in
 * `supernodes` emulated supernodes (0 or 1: one) whose link is throttled to inter_bw_gbps per rank (0: not)
 * with inter_latency_us per message; two warm-up steps, then medians of `steps`. blocking: the exchanges block
 * (as --overlap off does to them; the gradient reductions still overlap), else they are started before and waited
 * after the compute that does not need them. */
typedef struct {
    const char *model;
    int B, T;
    int ep;
    int supernodes;
    double inter_bw_gbps, inter_latency_us;
    int steps;
    int blocking;
    int moe_chunks;  /* each MoE layer's tokens in this many chunks (0 or 1: one) */
} hp_bench_moe_config;

typedef struct {
    int ranks;
    double tokens_per_s, step_ms;
    double a2a_ms;         /* the time per step in the exchange's nodes (starts, waits or blocking calls), the
                            * slowest rank's: what of the exchange the step waits for */
    double a2a_rank0_ms;   /* rank 0's */
    double a2a_exposed_ms; /* = a2a_ms (blocking: all of the exchange; else what was not hidden) */
    double max_tokens_per_expert, mean_tokens_per_expert; /* the first MoE layer, over the group */
} hp_bench_moe_result;

hp_status hp_bench_moe_row(hp_bench_moe_result *res, const hp_bench_moe_config *cfg);

/* Collectives (`hyperpar bench comm`), sizes as nccl-tests count them
 * (all-reduce buffer, reduce-scatter input, all-gather output, all-to-all
 * send buffer: bytes / n to each member; Open MPI's as MPI_Alltoallv). */
typedef enum {
    HP_BENCH_REDUCE_SCATTER = 0,
    HP_BENCH_ALL_GATHER = 1,
    HP_BENCH_ALL_REDUCE = 2,
    HP_BENCH_ALL_TO_ALL = 3
} hp_bench_coll;

/* How every measurement runs: the median of `repeat` runs (1..64); bind:
 * rank g's thread pinned to the (g mod n)-th of the n CPUs the process may
 * use (read here), and the calling thread to the (index mod n)-th. */
typedef struct hp_bench_comm hp_bench_comm;
hp_status hp_bench_comm_create(hp_bench_comm **out, int repeat, int bind, int index);
void hp_bench_comm_free(hp_bench_comm *b);

typedef struct {
    hp_bench_coll coll;
    int64_t bytes;
    int iters;
    int fused;   /* 0: one call; 1: one call on 100 tensors of 4 KiB; -1: 100 separate calls on them (bytes 409600) */
    int shared;  /* 1: one output buffer shared by the supernode */
    int inplace; /* all-gather: every shard already at its place in the output */
} hp_bench_comm_case;

/* Seconds per call on every rank of w this process hosts, each on its own
 * thread (timed on the first); runs[] (may be NULL) gets each run's time;
 * *inter_bytes (may be NULL): inter-supernode bytes per call of the first. */
hp_status hp_bench_comm_run(double *sec, int64_t *inter_bytes, double *runs, hp_bench_comm *b, hp_world *w,
                            const hp_bench_comm_case *c);
/* The traffic per call of the first hosted rank in the last
 * hp_bench_comm_run, per tier: [0] intra-supernode, [1] inter (bytes and
 * messages as the comm layer counts them; docs/architecture.md "Collective
 * volumes"). Zeros before any run. */
void hp_bench_comm_tiers(const hp_bench_comm *b, int64_t bytes[2], int64_t msgs[2]);
/* Seconds per call of Open MPI's own collective on MPI_COMM_WORLD (sep100:
 * per 100 separate calls on 4 KiB tensors); every process calls (MPI
 * initialised by the caller). */
double hp_bench_comm_mpi(hp_bench_comm *b, hp_bench_coll coll, int64_t bytes, int iters, int inplace, int sep100);
/* Processes other than the measuring one wait here without spinning (an
 * MPI barrier the measuring process enters when done). */
void hp_bench_comm_idle_wait(void);
/* The MPI job that hp_bench_comm_mpi runs in. Started by mpirun
 * (hp_world_launched_processes() > 0): MPI initialised with threads, *rank
 * and *size this process's place in MPI_COMM_WORLD; otherwise nothing (rank
 * 0 of 1). _end finalises MPI (after hp_world_free of any world over MPI);
 * _abort ends the whole job with `code`, returning only when MPI is not running. */
hp_status hp_bench_comm_mpi_start(int *rank, int *size);
void hp_bench_comm_mpi_end(void);
void hp_bench_comm_mpi_abort(int code);
/* Seconds per memcpy of `bytes` on this thread (median of the repeats). */
double hp_bench_comm_memcpy(hp_bench_comm *b, int64_t bytes, int iters);

/* ---- calibration (`hyperpar calibrate`, issue 28) -----------------------
 * Measures this machine for the auto-parallel cost model and makes a
 * calibration profile (the JSON format of src/autopar/profile.h, shipped
 * default profiles/generic-cpu.json): per kernel family (gemm, grouped_gemm,
 * attention, pointwise, norm, softmax_xent, embedding) and FLOP bucket one
 * operator of the table timed at a representative shape (fp32), the fp32 and
 * bf16 peaks as `hyperpar bench` measures them, and every collective kind in
 * groups of 2 ranks on both tiers (2 rank-threads of one supernode; 2
 * emulated supernodes over the link emulator) at several buffer sizes, with
 * α–β fitted by least squares. Not under mpirun: one process does it all. */
typedef struct {
    int threads;             /* kernel threads (1..256); 0: the CPUs this process may run on */
    int quick;               /* smaller shapes, 3 sizes, fewer repetitions: seconds, for tests */
    double inter_bw_gbps;    /* the emulated inter-supernode link per rank (GB/s); 0: unthrottled */
    double inter_latency_us; /* and its latency per message */
    const int64_t *sizes;    /* collective buffer sizes in bytes (2..32 distinct multiples of 8); NULL: the defaults
                              * (4 KiB .. 16 MiB by 4x; quick: 4 KiB, 64 KiB, 1 MiB) */
    int nsizes;
    const char *machine;     /* the profile's machine name (letters, digits, '.', '_', '-'); NULL: "local" */
} hp_calibrate_options;

/* threads 0, quick 0, the link of `hyperpar bench moe` (1 GB/s, 20 us), default sizes, machine "local". */
void hp_calibrate_options_default(hp_calibrate_options *o);

typedef struct hp_calibration hp_calibration;

/* Runs the measurements (seconds with quick, about a minute without). */
hp_status hp_calibrate(hp_calibration **out, const hp_calibrate_options *o);
/* What was measured and the fits, as lines of text to print (owned by c). */
const char *hp_calibration_table(const hp_calibration *c);
/* The profile as JSON text (owned by c); it parses back to the same profile. */
const char *hp_calibration_json(const hp_calibration *c);
/* Writes the profile to path: a temporary name in its directory, synced, then renamed. */
hp_status hp_calibration_write(const hp_calibration *c, const char *path);
void hp_calibration_free(hp_calibration *c);

/* Reads and checks a profile file (`hyperpar calibrate --check`): *kernels
 * and *collectives get its numbers of kernel and collective entries. Errors
 * are one line, `FILE: PATH: problem`. */
hp_status hp_calibration_check_file(const char *path, int *kernels, int *collectives);

#ifdef __cplusplus
}
#endif

#endif
