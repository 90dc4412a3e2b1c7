/* api/export: a checkpoint's weights as an llm.c GPT-2 file (io/llmc): the
 * tensors named as GPT-2's parameters are read whole from model.safetensors
 * and laid out in llm.c order (models/gpt2). */
#include <stdlib.h>
#include <string.h>

#include "api/ckpt_state.h"
#include "io/llmc.h"
#include "runtime/params.h"

/* Reads the weights of opened checkpoint ck (model shape c) into flat, in llm.c order. */
static hp_status read_flat(float *flat, const hp_ckpt *ck, const hp_gpt2_config *c) {
    hp_graph *g = NULL;
    hp_gpt2_io io;
    hp_param_store ps;
    memset(&ps, 0, sizeof ps);
    HP_TRY(hp_graph_create(&g));
    hp_status st = hp_gpt2_build(g, &io, c, 1, 1);
    if (!st) st = hp_param_store_create(&ps, g);
    float **ptrs = st ? NULL : malloc(sizeof(float *) * (size_t)(ps.n ? ps.n : 1));
    if (!st && !ptrs) st = hp_errorf("hp_export_llmc: out of memory");
    for (int i = 0; !st && i < ps.n; i++) {
        ptrs[i] = hp_param_ptr(&ps, i);
        st = hp_safetensors_read_into(ck->model, ps.name[i], HP_F32, &ps.shape[i], ptrs[i]);
    }
    if (!st) st = hp_gpt2_llmc_copy(flat, ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, c, 1);
    free(ptrs);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return st;
}

hp_status hp_export_llmc(const char *llmc_path, const char *ckpt_dir) {
    if (!llmc_path || !llmc_path[0]) return hp_errorf("hp_export_llmc: no output path given");
    if (!ckpt_dir || !ckpt_dir[0]) return hp_errorf("hp_export_llmc: no checkpoint directory given");
    char *dir = NULL;
    HP_TRY(hp_api_ckpt_dir(&dir, ckpt_dir));
    hp_ckpt ck;
    hp_status st = hp_ckpt_open(&ck, dir);
    if (st) {
        free(dir);
        return st;
    }
    hp_gpt2_config c;
    float *flat = NULL;
    st = hp_api_ckpt_model(&c, &ck, dir);
    if (!st) {
        flat = malloc(hp_gpt2_num_params(&c) * sizeof(float));
        if (!flat) st = hp_errorf("%s: out of memory", llmc_path);
    }
    if (!st) st = read_flat(flat, &ck, &c);
    if (!st) {
        hp_llmc_header h = {c.maxT, c.V, c.L, c.NH, c.C, c.Vp};
        st = hp_llmc_write(llmc_path, &h, flat);
    }
    free(flat);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}
