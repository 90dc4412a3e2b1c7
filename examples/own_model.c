/* examples/own_model.c: a model of one's own, written here with the public
 * model-writing calls (not in the library): a 2-block decoder with RMSNorm,
 * rotary attention and a SwiGLU MLP on a byte-level vocabulary, each
 * parameter's init said where it is declared. It is trained
 * twice on a text file: on one rank, then under a data x tensor parallel plan
 * written for its parameter names; it prints both runs' losses and exits 0
 * only if the loss fell and every step's loss of the parallel run is within
 * 1e-5 of the one-rank run's.
 *
 * Run: ./own_model [TEXT_FILE [STEPS [DP TP]]]
 *   (default /usr/share/common-licenses/GPL-3, 12 steps, DP = 2, TP = 2; the
 *   ranks are threads of this process, one thread each) */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 4, T = 16, C = 32, HEADS = 4, HIDDEN = 64, VOCAB = 256, BLOCKS = 2 };

/* The model: tokens -> embedding -> 2 x (attention block, MLP block) -> norm
 * -> head -> cross-entropy against targets. Each parameter's init is said
 * where it is declared: norm weights 1, weights N(0, 0.02), the projections
 * into the residual stream scaled down by sqrt(2 x blocks) (as GPT-2 and
 * torchtitan's Llama do). Written straight through; the graph's first error
 * (if any) is checked once, by hp_model_from_graph. */
static hp_status build(hp_model **out) {
    hp_graph *g;
    hp_status st = hp_graph_create(&g);
    if (st) return st;
    hp_init ones = hp_init_ones(), normal = hp_init_normal(0.02);
    hp_init resid = hp_init_normal(0.02 / sqrt(2.0 * BLOCKS));
    char nm[HP_NAME_MAX];
    int tokens = hp_input(g, "tokens", HP_ELEM_I32, hp_dims2(B, T));
    int targets = hp_input(g, "targets", HP_ELEM_I32, hp_dims2(B, T));
    int x = hp_embedding(g, tokens, hp_param_init(g, "embed.weight", hp_dims2(VOCAB, C), normal));
    for (int l = 0; l < BLOCKS; l++) {
        /* the parameters as statements of their own: they keep this order (checkpoints, the init's draws) */
#define P(what, dims, init) (snprintf(nm, sizeof nm, "blocks.%d.%s", l, what), hp_param_init(g, nm, dims, init))
        int attn_norm = P("attn_norm.weight", hp_dims1(C), ones);
        int qkv = P("attn.qkv.weight", hp_dims3(3, C, C), normal);
        int attn_proj = P("attn.proj.weight", hp_dims2(C, C), resid);
        int mlp_norm = P("mlp_norm.weight", hp_dims1(C), ones);
        int fc = P("mlp.fc.weight", hp_dims3(2, HIDDEN, C), normal);
        int mlp_proj = P("mlp.proj.weight", hp_dims2(C, HIDDEN), resid);
#undef P
        hp_graph_scope(g, "blocks.%d.attn", l);
        int h = hp_rmsnorm(g, x, attn_norm, 1e-5f);
        h = hp_linear(g, h, qkv, -1); /* [B,T,3,C] */
        h = hp_rope(g, h, HEADS, 10000.0f);
        h = hp_attention(g, h, HEADS); /* [B,T,C] */
        x = hp_add(g, x, hp_linear(g, h, attn_proj, -1));
        hp_graph_scope(g, "blocks.%d.mlp", l);
        h = hp_rmsnorm(g, x, mlp_norm, 1e-5f);
        h = hp_linear(g, h, fc, -1); /* [B,T,2,H]: gate, up */
        h = hp_swiglu(g, h);         /* [B,T,H] */
        x = hp_add(g, x, hp_linear(g, h, mlp_proj, -1));
    }
    int final_norm = hp_param_init(g, "final_norm.weight", hp_dims1(C), ones);
    int head = hp_param_init(g, "head.weight", hp_dims2(VOCAB, C), normal);
    hp_graph_scope(g, "head");
    x = hp_rmsnorm(g, x, final_norm, 1e-5f);
    int logits = hp_linear(g, x, head, -1);
    int per_position;
    int loss = hp_xent(g, logits, targets, VOCAB, &per_position);
    hp_set_loss(g, loss, per_position);
    return hp_model_from_graph(out, g, VOCAB); /* takes g */
}

/* Megatron-style tensor parallelism over the heads and the MLP's hidden
 * units (column-parallel qkv and fc, row-parallel proj), the batch over dp;
 * every other parameter is replicated. */
static hp_status plan_for(hp_shard_plan **out, int dp, int tp) {
    char text[512];
    snprintf(text, sizeof text,
             "mesh: dp=%d,tp=%d\n"
             "input tokens: S(0)@dp\n"
             "input targets: S(0)@dp\n"
             "param blocks.*.attn.qkv.weight: S(1)@tp\n"
             "param blocks.*.attn.proj.weight: S(1)@tp\n"
             "param blocks.*.mlp.fc.weight: S(1)@tp\n"
             "param blocks.*.mlp.proj.weight: S(1)@tp\n",
             dp, tp);
    return hp_shard_plan_parse(out, text, "own_model.plan");
}

/* Trains m for `steps` steps under plan (NULL: one rank), writing each loss. */
static hp_status train(float *losses, const hp_model *m, const hp_shard_plan *plan, const char *text, long steps) {
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.plan = plan;
    tc.threads = plan ? hp_shard_plan_ranks(plan) : 1;
    tc.data = text;
    tc.steps = steps;
    tc.lr = 3e-3f;
    tc.warmup_steps = 0;
    tc.val_steps = 0;
    hp_train *t = NULL;
    hp_status st = hp_train_create(&t, &tc);
    for (long s = 0; s < steps && !st; s++) st = hp_train_step(t, &losses[s], NULL);
    hp_train_free(t);
    return st;
}

int main(int argc, char **argv) {
    const char *text = argc > 1 ? argv[1] : "/usr/share/common-licenses/GPL-3";
    long steps = argc > 2 ? atol(argv[2]) : 12;
    int dp = argc > 4 ? atoi(argv[3]) : 2, tp = argc > 4 ? atoi(argv[4]) : 2;
    if (steps < 2) steps = 2;
    float *one = calloc((size_t)steps, sizeof(float)), *par = calloc((size_t)steps, sizeof(float));
    hp_model *m = NULL;
    hp_shard_plan *plan = NULL;
    hp_status st = one && par ? build(&m) : hp_errorf("own_model: out of memory");
    if (!st) printf("own_model: %ld parameters\n", hp_model_num_params(m));
    if (!st) st = plan_for(&plan, dp, tp);
    if (!st) st = train(one, m, NULL, text, steps);
    if (!st) st = train(par, m, plan, text, steps);
    double worst = 0;
    for (long s = 0; !st && s < steps; s++) {
        double d = fabs((double)one[s] - (double)par[s]);
        if (d > worst || d != d) worst = d;
        printf("step %3ld  loss %.6f (1 rank)  %.6f (dp=%d,tp=%d)\n", s + 1, (double)one[s], (double)par[s], dp, tp);
    }
    hp_shard_plan_free(plan);
    hp_model_free(m);
    int fell = !st && one[steps - 1] < one[0];
    free(one), free(par);
    if (st) {
        fprintf(stderr, "own_model: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return 1;
    }
    int same = worst <= 1e-5;
    printf("own_model: loss %s; dp x tp against 1 rank: largest difference %.3g (%s)\n",
           fell ? "falls" : "does NOT fall", worst, same ? "within 1e-5" : "ABOVE 1e-5");
    return fell && same ? 0 : 1;
}
