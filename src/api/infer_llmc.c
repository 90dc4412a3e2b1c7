/* api/infer_llmc: llm.c shapes of checkpoints and files, and the llm.c round
 * trip (io/llmc read into GPT-2's named parameters, models/gpt2, and written
 * back) behind `hyperpar export --init`. */
#include <stdlib.h>
#include <string.h>

#include "api/ckpt_state.h"
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
    HP_TRY(hp_api_ckpt_dir(&dir, ckpt_dir));
    hp_ckpt ck;
    hp_status st = hp_ckpt_open(&ck, dir);
    if (!st) {
        hp_gpt2_config c;
        st = hp_api_ckpt_model(&c, &ck, dir);
        if (!st) *out = shape_of(&c);
        hp_ckpt_close(&ck);
    }
    free(dir);
    return st;
}

/* flat (llm.c order) -> the parameters of a model graph -> flat again. */
static hp_status round_trip(float *flat, const hp_gpt2_config *c) {
    hp_graph *g = NULL;
    hp_gpt2_io io;
    hp_param_store ps;
    memset(&ps, 0, sizeof ps);
    HP_TRY(hp_graph_create(&g));
    hp_status st = hp_gpt2_build(g, &io, c, 1, 1);
    if (!st) st = hp_param_store_create(&ps, g);
    float **ptrs = st ? NULL : malloc(sizeof(float *) * (size_t)(ps.n ? ps.n : 1));
    if (!st && !ptrs) st = hp_errorf("hp_llmc_reexport: out of memory");
    for (int i = 0; !st && i < ps.n; i++) ptrs[i] = hp_param_ptr(&ps, i);
    if (!st) st = hp_gpt2_llmc_copy(flat, ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, c, 0);
    if (!st) memset(flat, 0, hp_gpt2_num_params(c) * sizeof(float));
    if (!st) st = hp_gpt2_llmc_copy(flat, ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, c, 1);
    free(ptrs);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return st;
}

hp_status hp_llmc_reexport(hp_llmc_shape *shape, const char *llmc_path, const char *llmc_in) {
    if (shape) memset(shape, 0, sizeof *shape);
    if (!llmc_path || !llmc_path[0]) return hp_errorf("hp_llmc_reexport: no output path given");
    if (!llmc_in || !llmc_in[0]) return hp_errorf("hp_llmc_reexport: no llm.c file given");
    hp_gpt2_config c;
    HP_TRY(hp_llmc_model_config(&c, llmc_in));
    hp_llmc_header h;
    float *flat = NULL;
    HP_TRY(hp_llmc_read(&h, &flat, llmc_in));
    hp_llmc_header want = {c.maxT, c.V, c.L, c.NH, c.C, c.Vp};
    hp_status st = HP_OK;
    if (memcmp(&h, &want, sizeof h) != 0)
        st = hp_errorf("%s: model shape (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d) differs from the run's", llmc_in, h.L,
                       h.NH, h.C, h.V, h.Vp, h.maxT);
    if (!st) st = round_trip(flat, &c);
    if (!st) st = hp_llmc_write(llmc_path, &h, flat);
    if (!st && shape) *shape = shape_of(&c);
    free(flat);
    return st;
}
