/* models/gpt2_params: GPT-2's initialisation and the llm.c order of its
 * parameters (models/gpt2.h). */
#include "models/gpt2.h"

#include <stdio.h>
#include <string.h>

#include "models/build.h"

hp_status hp_gpt2_init(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                       int n, const hp_gpt2_config *c, uint64_t seed) {
    (void)shapes; /* the graph's: hp_model_init checks the names against it */
    hp_gpt2_config cc = *c; /* Vp filled */
    HP_TRY(hp_gpt2_config_check(&cc));
    hp_graph *g;
    hp_gpt2_io io;
    HP_TRY(hp_graph_create(&g));
    hp_status st = hp_gpt2_build(g, &io, &cc, 1, 1); /* the inits are stated where gpt2.c declares each parameter */
    if (!st) st = hp_model_init(params, g, names, n, seed);
    hp_graph_destroy(g);
    return st;
}

/* The llm.c tensor order: name pattern (with %d for the layer), size per layer, stacked over L? */
typedef struct {
    const char *pattern;
    int per_layer;
} llmc_entry;

static const llmc_entry llmc_order[16] = {
    {"wte", 0},           {"wpe", 0},              {"h.%d.ln1.weight", 1},      {"h.%d.ln1.bias", 1},
    {"h.%d.attn.qkv.weight", 1}, {"h.%d.attn.qkv.bias", 1}, {"h.%d.attn.proj.weight", 1},
    {"h.%d.attn.proj.bias", 1},  {"h.%d.ln2.weight", 1},    {"h.%d.ln2.bias", 1},
    {"h.%d.mlp.fc.weight", 1},   {"h.%d.mlp.fc.bias", 1},   {"h.%d.mlp.proj.weight", 1},
    {"h.%d.mlp.proj.bias", 1},   {"lnf.weight", 0},         {"lnf.bias", 0},
};

static int find_name(const char (*names)[HP_NAME_LEN], int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

hp_status hp_gpt2_llmc_copy(float *flat, float *const *params, const char (*names)[HP_NAME_LEN],
                            const hp_shape *shapes, int n, const hp_gpt2_config *c, int to_llmc) {
    size_t at = 0, total = hp_gpt2_num_params(c);
    char nm[HP_NAME_LEN];
    for (int e = 0; e < 16; e++) {
        int layers = llmc_order[e].per_layer ? c->L : 1;
        for (int l = 0; l < layers; l++) {
            snprintf(nm, sizeof nm, llmc_order[e].pattern, l);
            int i = find_name(names, n, nm);
            if (i < 0) return hp_errorf("gpt2: llm.c layout: parameter '%s' is missing", nm);
            size_t numel = (size_t)hp_shape_numel(&shapes[i]);
            if (at + numel > total)
                return hp_errorf("gpt2: llm.c layout: parameter '%s' overruns the %zu-float buffer", nm, total);
            if (to_llmc)
                memcpy(flat + at, params[i], numel * sizeof(float));
            else
                memcpy(params[i], flat + at, numel * sizeof(float));
            at += numel;
        }
    }
    if (at != total) return hp_errorf("gpt2: llm.c layout: %zu floats copied, the model has %zu", at, total);
    return HP_OK;
}
