/* models/zoo: the model families a run names with --model besides GPT-2
 * (PanGu-α, Llama, Mixture-of-Experts), each a table row: its presets, its graph builder and its
 * parameter count. The api and the commands look a name up here instead of
 * testing prefixes; a new family is a row. */
#ifndef HP_MODELS_ZOO_H
#define HP_MODELS_ZOO_H

#include <hyperpar/hyperpar.h>

typedef struct {
    const char *family;   /* "pangu", "llama", "moe" */
    const char *presets;  /* the preset names, for messages */
    hp_status (*preset)(hp_model_config *out, const char *name);
    hp_status (*build)(hp_graph *g, const hp_model_config *c, int B, int T);
    int64_t (*num_params)(const hp_model_config *c);
} hp_model_family;

/* The family with a preset of this name (NULL: none; "gpt2" is none). */
const hp_model_family *hp_model_family_of(const char *name);
/* The family called `family` ("pangu"), NULL: none. */
const hp_model_family *hp_model_family_named(const char *family);
/* Every --model name: "gpt2, pangu-tiny, ..., llama3-70b". */
const char *hp_model_names(void);

#endif
