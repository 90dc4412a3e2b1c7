/* api/export: a checkpoint's weights as an llm.c GPT-2 file (io/llmc), fp32
 * or bf16: the tensors named as GPT-2's parameters are read whole from the
 * checkpoint and laid out in llm.c order (models/gpt2); a non-finite weight
 * is refused (as `train` refuses to start from one). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/ckpt_state.h"
#include "api/infer.h"
#include "io/llmc.h"
#include "runtime/params.h"

/* Reads the weights of opened checkpoint ck (model shape c, in directory dir)
 * into flat, in llm.c order; a non-finite weight is refused, naming the
 * tensor and the element. */
static hp_status read_flat(float *flat, const hp_ckpt *ck, const hp_gpt2_config *c, const char *dir) {
    hp_api_store s;
    HP_TRY(hp_api_store_create(&s, c));
    hp_status st = HP_OK;
    for (int i = 0; !st && i < s.ps.n; i++)
        st = hp_ckpt_read(ck, HP_CKPT_GROUP_MODEL, s.ps.name[i], HP_F32, &s.ps.shape[i], s.ptrs[i]);
    if (!st) st = hp_api_params_finite(&s.ps, dir);
    if (!st) st = hp_gpt2_llmc_copy(flat, s.ptrs, (const char(*)[HP_NAME_LEN])s.ps.name, s.ps.shape, s.ps.n, c, 1);
    hp_api_store_free(&s);
    return st;
}

hp_status hp_llmc_dtype_parse(hp_llmc_dtype *out, const char *name) {
    if (name && !strcmp(name, "fp32")) *out = HP_LLMC_FP32;
    else if (name && !strcmp(name, "bf16")) *out = HP_LLMC_BF16;
    else return hp_errorf("unknown llm.c dtype '%s' (expected fp32 or bf16)", name ? name : "(null)");
    return HP_OK;
}

hp_status hp_api_llmc_version(int *version, hp_llmc_dtype dtype, const char *path) {
    if (dtype == HP_LLMC_FP32) *version = HP_LLMC_VERSION_FP32;
    else if (dtype == HP_LLMC_BF16) *version = HP_LLMC_VERSION_BF16;
    else return hp_errorf("%s: unknown llm.c dtype %d (expected HP_LLMC_FP32 or HP_LLMC_BF16)", path, (int)dtype);
    return HP_OK;
}

hp_status hp_export_llmc(const char *llmc_path, const char *ckpt_dir, hp_llmc_dtype dtype) {
    if (!llmc_path || !llmc_path[0]) return hp_errorf("hp_export_llmc: no output path given");
    if (!ckpt_dir || !ckpt_dir[0]) return hp_errorf("hp_export_llmc: no checkpoint directory given");
    int version = HP_LLMC_VERSION_FP32;
    HP_TRY(hp_api_llmc_version(&version, dtype, llmc_path));
    char *dir = NULL;
    hp_ckpt ck;
    HP_TRY(hp_api_ckpt_open(&ck, &dir, ckpt_dir, 0));
    hp_gpt2_config c;
    float *flat = NULL;
    hp_status st = hp_api_ckpt_gpt2(&ck, dir, "llm.c export");
    if (!st) st = hp_ckpt_model_config(&c, &ck, dir);
    if (!st) {
        flat = malloc(hp_gpt2_num_params(&c) * sizeof(float));
        if (!flat) st = hp_errorf("%s: out of memory", llmc_path);
    }
    if (!st) st = read_flat(flat, &ck, &c, dir);
    if (!st) {
        hp_llmc_header h = {c.maxT, c.V, c.L, c.NH, c.C, c.Vp};
        st = hp_llmc_write(llmc_path, &h, flat, version);
    }
    free(flat);
    hp_ckpt_close(&ck);
    free(dir);
    return st;
}
