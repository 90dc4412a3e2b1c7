/* models/zoo: the table of model families (see the header). */
#include "models/zoo.h"

#include <string.h>

#include "models/llama.h"
#include "models/pangu.h"

static const hp_model_family families[] = {
    {"pangu", "pangu-tiny, pangu-2.6b, pangu-13b, pangu-200b", hp_pangu_preset, hp_pangu_build, hp_pangu_num_params},
    {"llama", "llama-tiny, llama3-8b, llama3-70b", hp_llama_preset, hp_llama_build, hp_llama_num_params},
    {"moe", "moe-tiny, mixtral-tiny, moe-small, moe-deepseek-v3, moe-500b", hp_moe_preset, hp_llama_build, hp_llama_num_params},
};

const hp_model_family *hp_model_family_of(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        hp_model_config c;
        hp_status st = families[i].preset(&c, name);
        if (!st) return &families[i];
        hp_status_free(st);
    }
    return NULL;
}

const hp_model_family *hp_model_family_named(const char *family) {
    for (size_t i = 0; family && i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].family, family)) return &families[i];
    return NULL;
}

const char *hp_model_names(void) {
    return "gpt2, pangu-tiny, pangu-2.6b, pangu-13b, pangu-200b, llama-tiny, llama3-8b, llama3-70b, moe-tiny, mixtral-tiny, moe-small, "
           "moe-deepseek-v3, moe-500b";
}
