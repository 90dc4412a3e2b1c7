/* examples/own_loop.c: a training loop of one's own through the public C API
 * alone — hp_train_step a step at a time, a checkpoint saved half-way
 * (hp_train_save), the weights read by name (hp_train_get_weight), and a
 * second trainer that loads the checkpoint (hp_train_load) and continues with
 * the same losses. Exits 0 only if they are the same, bit for bit.
 *
 * Run: ./own_loop [CKPT_DIR [TEXT_FILE [STEPS]]]
 *   (default ./own_loop_ckpt, /usr/share/common-licenses/GPL-3, 20 steps) */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static hp_status make(hp_train **t, const hp_model *m, const char *text, long steps) {
    hp_train_config tc;
    hp_train_config_default(&tc, m);
    tc.data = text;
    tc.steps = steps;
    tc.warmup_steps = 0;
    tc.val_steps = 0;
    return hp_train_create(t, &tc);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "own_loop_ckpt";
    const char *text = argc > 2 ? argv[2] : "/usr/share/common-licenses/GPL-3";
    long steps = argc > 3 ? atol(argv[3]) : 20, half = steps / 2;
    hp_model_config mc = {.layers = 2, .heads = 4, .channels = 64, .vocab = 256, .max_seq = 32};
    hp_model *m = NULL;
    hp_train *a = NULL, *b = NULL;
    float *later = calloc((size_t)(steps > 0 ? steps : 1), sizeof(float)), loss = 0, wpe[32 * 64];
    int same = 1;
    hp_status st = later ? hp_model_gpt2(&m, &mc, 4, 32) : hp_errorf("own_loop: out of memory");
    if (!st) st = make(&a, m, text, steps);
    for (long s = 0; s < steps && !st; s++) {
        st = hp_train_step(a, &later[s], NULL);
        if (!st) printf("step %3ld  loss %.4f\n", s + 1, (double)later[s]);
        if (!st && s + 1 == half) st = hp_train_save(a, dir); /* dir/step_<half>, dir/latest */
    }
    if (!st) st = hp_train_get_weight(a, "wpe", wpe, 32 * 64);
    if (!st) {
        double sq = 0;
        for (int i = 0; i < 32 * 64; i++) sq += (double)wpe[i] * wpe[i];
        printf("own_loop: %d parameter tensors, |wpe| = %.4f\n", hp_train_param_count(a), sqrt(sq));
    }
    /* a second trainer continues from the checkpoint */
    if (!st) st = make(&b, m, text, steps);
    if (!st) st = hp_train_load(b, dir);
    for (long s = half; s < steps && !st; s++) {
        st = hp_train_step(b, &loss, NULL);
        same &= loss == later[s];
    }
    hp_train_free(a);
    hp_train_free(b);
    hp_model_free(m);
    free(later);
    if (st) {
        fprintf(stderr, "own_loop: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return 1;
    }
    printf("own_loop: resumed from step %ld: %s\n", half, same ? "the same losses, bit for bit" : "losses DIFFER");
    return same ? 0 : 1;
}
