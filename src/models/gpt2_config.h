/* models/gpt2_config: the GPT-2 model shape read from and written to the
 * places it is kept — a checkpoint's state.json ("model": {L, NH, C, V, Vp,
 * maxT}) and an llm.c checkpoint's header — with its checks. */
#ifndef HP_MODELS_GPT2_CONFIG_H
#define HP_MODELS_GPT2_CONFIG_H

#include "io/ckpt.h"
#include "io/json.h"
#include "models/gpt2.h"

/* The model shape as a JSON object and back (checkpoint state). */
void hp_gpt2_config_to_json(hp_jw *w, const hp_gpt2_config *c);
hp_status hp_gpt2_config_from_json(hp_gpt2_config *c, const hp_json *obj);
/* A checkpoint's model shape (state.json "model"); dir names it in errors. */
hp_status hp_ckpt_model_config(hp_gpt2_config *c, const hp_ckpt *ck, const char *dir);
/* An llm.c file's model shape. */
hp_status hp_llmc_model_config(hp_gpt2_config *c, const char *path);

#endif
