/* api/infer_llmc: llm.c shapes of checkpoints and files, and the llm.c round
 * trip (io/llmc read into GPT-2's named parameters, models/gpt2, and written
 * back) behind `hyperpar export --init`. */
#include <stdlib.h>
#include <string.h>

#include "api/ckpt_state.h"
#include "api/infer.h"
#include "io/llmc.h"
#include "models/gpt2_config.h"
#include "runtime/params.h"

static hp_llmc_shape shape_of(const hp_gpt2_config *c) {
    return (hp_llmc_shape){c->L, c->NH, c->C, c->V, c->Vp, c->maxT};
}

hp_status hp_ckpt_llmc_shape(hp_llmc_shape *out, const char *ckpt_dir) {
    memset(out, 0, sizeof *out);
    if (!ckpt_dir || !ckpt_dir[0]) return hp_errorf("hp_ckpt_llmc_shape: no checkpoint directory given");
    char *dir = NULL;
    hp_ckpt ck;
    HP_TRY(hp_api_ckpt_open(&ck, &dir, ckpt_dir, 0));
    hp_gpt2_config c;
    hp_status st = hp_api_ckpt_gpt2(&ck, dir, "the llm.c shape");
    if (!st) st = hp_ckpt_model_config(&c, &ck, dir);
    if (!st) *out = shape_of(&c);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}

/* flat (llm.c order) -> the parameters of a model graph -> flat again; a
 * non-finite weight is refused, named as `train --init` names it (path: the
 * file it came from). */
static hp_status round_trip(float *flat, const hp_gpt2_config *c, const char *path) {
    hp_api_store s;
    HP_TRY(hp_api_store_create(&s, c));
    const char(*names)[HP_NAME_LEN] = (const char(*)[HP_NAME_LEN])s.ps.name;
    hp_status st = hp_gpt2_llmc_copy(flat, s.ptrs, names, s.ps.shape, s.ps.n, c, 0);
    if (!st) st = hp_api_params_finite(&s.ps, path);
    if (!st) memset(flat, 0, hp_gpt2_num_params(c) * sizeof(float));
    if (!st) st = hp_gpt2_llmc_copy(flat, s.ptrs, names, s.ps.shape, s.ps.n, c, 1);
    hp_api_store_free(&s);
    return st;
}

hp_status hp_api_llmc_load(float **flat, hp_llmc_header *h, const char *path, const hp_gpt2_config *c) {
    *flat = NULL;
    HP_TRY(hp_llmc_read(h, flat, path));
    hp_llmc_header want = {c->maxT, c->V, c->L, c->NH, c->C, c->Vp};
    if (memcmp(h, &want, sizeof *h) == 0) return HP_OK;
    free(*flat);
    *flat = NULL;
    return hp_errorf("%s: model shape (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d) differs from the run's", path, h->L, h->NH,
                     h->C, h->V, h->Vp, h->maxT);
}

hp_status hp_llmc_reexport(hp_llmc_shape *shape, const char *llmc_path, const char *llmc_in, hp_llmc_dtype dtype) {
    if (shape) memset(shape, 0, sizeof *shape);
    if (!llmc_path || !llmc_path[0]) return hp_errorf("hp_llmc_reexport: no output path given");
    if (!llmc_in || !llmc_in[0]) return hp_errorf("hp_llmc_reexport: no llm.c file given");
    int version = HP_LLMC_VERSION_FP32;
    HP_TRY(hp_api_llmc_version(&version, dtype, llmc_path));
    hp_gpt2_config c;
    HP_TRY(hp_llmc_model_config(&c, llmc_in));
    hp_llmc_header h;
    float *flat = NULL;
    HP_TRY(hp_api_llmc_load(&flat, &h, llmc_in, &c));
    hp_status st = round_trip(flat, &c, llmc_in);
    if (!st) st = hp_llmc_write(llmc_path, &h, flat, version);
    if (!st && shape) *shape = shape_of(&c);
    free(flat);
    return st;
}
