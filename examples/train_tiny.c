/* examples/train_tiny.c: trains a tiny GPT-2 (2 layers, 4 heads, 64 channels,
 * byte-level vocabulary of 256) on a text file through the public C API
 * alone, prints the loss of every step, and exits 0 only if the last loss is
 * below the first.
 *
 * Build against an installed hyperpar (cmake --install build --prefix P):
 *     PKG_CONFIG_PATH=P/lib/pkgconfig cc train_tiny.c $(pkg-config --cflags --libs hyperpar) -o train_tiny
 * Run: ./train_tiny [TEXT_FILE [STEPS [DP TP]]]
 *   (default /usr/share/common-licenses/GPL-3, 30 steps, one rank; DP x TP > 1
 *   trains the same model with GPT-2's data x tensor parallel plan, one thread
 *   per rank; under mpirun -np N the ranks are spread over N processes) */
#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    float first, last;
    long steps;
} losses;

static void on_event(void *ctx, const hp_event *e) {
    losses *l = ctx;
    switch (e->kind) {
    case HP_EVENT_START:
        printf("train_tiny: %ld parameters, mesh %s (%d ranks)\n", e->nparams, e->mesh, e->ranks);
        break;
    case HP_EVENT_STEP:
        if (l->steps++ == 0) l->first = e->loss;
        l->last = e->loss;
        printf("step %3ld  loss %.4f  lr %.2e  grad norm %.3f\n", e->step, (double)e->loss, (double)e->lr,
               (double)e->grad_norm);
        break;
    case HP_EVENT_VAL: printf("step %3ld  val loss %.4f\n", e->step, (double)e->val_loss); break;
    default: break;
    }
}

int main(int argc, char **argv) {
    const char *text = argc > 1 ? argv[1] : "/usr/share/common-licenses/GPL-3";
    long steps = argc > 2 ? atol(argv[2]) : 30;
    int dp = argc > 4 ? atoi(argv[3]) : 1, tp = argc > 4 ? atoi(argv[4]) : 1;
    printf("train_tiny: hyperpar %s\n", hp_version());

    hp_model_config mc = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};
    hp_model *m = NULL;
    hp_shard_plan *plan = NULL;
    hp_train *t = NULL;
    losses l = {0, 0, 0};
    int lead = 1;
    hp_status st = hp_model_gpt2(&m, &mc, 4, 32); /* B = 4, T = 32 */
    if (!st && dp * tp > 1) st = hp_shard_plan_gpt2(&plan, dp, tp);
    if (!st) {
        hp_train_config tc;
        hp_train_config_default(&tc, m);
        tc.plan = plan;
        tc.threads = plan ? hp_shard_plan_ranks(plan) : 1;
        tc.data = text;
        tc.steps = steps;
        tc.lr = 3e-3f;
        tc.warmup_steps = 0;
        tc.val_steps = 4, tc.val_every = 0; /* validate at the end */
        tc.on_event = on_event, tc.event_ctx = &l;
        st = hp_train_create(&t, &tc);
    }
    if (!st) st = hp_train_run(t);
    if (t) lead = hp_train_is_lead(t);
    hp_train_free(t);
    hp_shard_plan_free(plan);
    hp_model_free(m);
    if (st) {
        fprintf(stderr, "train_tiny: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return 1;
    }
    if (!lead) return 0; /* under mpirun: the process hosting rank 0 reports */
    int fell = l.steps > 1 && l.last < l.first;
    printf("train_tiny: loss %.4f -> %.4f over %ld steps: %s\n", (double)l.first, (double)l.last, l.steps,
           fell ? "falls" : "does NOT fall");
    return fell ? 0 : 1;
}
