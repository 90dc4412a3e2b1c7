/* tools/bench_models: the benchmarks' models (see the header). */
#include "bench_models.h"

#include <string.h>

hp_status hp_bench_model(hp_model_config *m, int *B, int *T, const char *name, const char *cmd) {
    if (!strcmp(name, "small")) {
        *m = (hp_model_config){.layers = 4, .heads = 4, .channels = 256, .vocab = 256, .max_seq = 128}, *B = 8, *T = 128;
        return HP_OK;
    }
    if (!strcmp(name, "gpt2-124m")) {
        *m = (hp_model_config){.layers = 12, .heads = 12, .channels = 768, .vocab = 50257, .max_seq = 1024}, *B = 4, *T = 256;
        return HP_OK;
    }
    return hp_errorf("hyperpar %s: --model '%s' is not small or gpt2-124m", cmd, name);
}
