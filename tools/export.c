/* tools/export: `hyperpar export` — writes a checkpoint's weights in the llm.c
 * format, fp32 or bf16 (atomically), or as a Hugging Face model directory. */
#include <stdio.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"

static void print_written(const char *out, const char *dtype, const hp_llmc_shape *m) {
    printf("wrote %s (%s, L=%d NH=%d C=%d V=%d Vp=%d maxT=%d)\n", out, dtype, m->layers, m->heads, m->channels,
           m->vocab, m->padded_vocab, m->max_seq);
}

static hp_status export_llmc(const char *ckpt, const char *init, const char *out, const char *dtype) {
    hp_llmc_dtype dt;
    hp_status e = hp_llmc_dtype_parse(&dt, dtype);
    if (e) {
        hp_status w = hp_errorf("hyperpar export: --llmc-dtype: %s", hp_status_msg(e));
        hp_status_free(e);
        return w;
    }
    if (!out[0]) return hp_errorf("hyperpar export: --llmc FILE is required");
    hp_llmc_shape m;
    if (init[0]) { /* an llm.c file read and written again (a round trip) */
        HP_TRY(hp_llmc_reexport(&m, out, init, dt));
        print_written(out, dtype, &m);
        return HP_OK;
    }
    if (!ckpt[0]) return hp_errorf("hyperpar export: --ckpt DIR (or --init FILE.bin) is required");
    HP_TRY(hp_ckpt_llmc_shape(&m, ckpt));
    HP_TRY(hp_export_llmc(out, ckpt, dt));
    print_written(out, dtype, &m);
    return HP_OK;
}

int hp_cmd_export(int argc, char **argv) {
    char ckpt[512] = "", llmc[512] = "", init[512] = "", dtype[16] = "fp32", hf[512] = "", hf_dtype[16] = "fp32",
         shard[64] = "5GB";
    hp_opt tab[] = {
        {"ckpt", HP_OPT_STR, ckpt, sizeof ckpt, "checkpoint directory (or a run directory with 'latest')"},
        {"init", HP_OPT_STR, init, sizeof init, "read the weights from an llm.c checkpoint instead"},
        {"llmc", HP_OPT_STR, llmc, sizeof llmc, "write the weights as an llm.c checkpoint (.bin)"},
        {"llmc-dtype", HP_OPT_STR, dtype, sizeof dtype,
         "the parameters' type in the file: fp32 (llm.c version 3) or bf16 (version 5, rounded to nearest even)"},
        {"hf", HP_OPT_STR, hf, sizeof hf,
         "write a Hugging Face model directory (config.json, model.safetensors): GPT-2, Llama, Mixtral-style MoE"},
        {"hf-dtype", HP_OPT_STR, hf_dtype, sizeof hf_dtype, "the Hugging Face tensors' type: fp32 or bf16"},
        {"max-shard-size", HP_OPT_STR, shard, sizeof shard,
         "the largest Hugging Face weight file (5GB, 500MB, 2GiB or bytes); past it, shards and an index"},
    };
    int help = 0, n = 7;
    hp_status st = hp_args_parse(&help, tab, n, argc, argv, 2, "export");
    if (!st && help) {
        hp_args_usage(tab, n, "export", "Writes a checkpoint's weights in the llm.c or the Hugging Face format.");
        return 0;
    }
    if (!st && hf[0]) {
        if (strcmp(hf_dtype, "fp32") && strcmp(hf_dtype, "bf16"))
            st = hp_errorf("hyperpar export: --hf-dtype must be fp32 or bf16, got '%s'", hf_dtype);
        else if (!ckpt[0]) st = hp_errorf("hyperpar export: --hf needs --ckpt DIR");
        else if (llmc[0] || init[0]) st = hp_errorf("hyperpar export: give --hf or --llmc, not both");
        int64_t max_shard = 0;
        if (!st) {
            hp_status e = hp_hf_size_parse(&max_shard, shard);
            if (e) st = hp_errorf("hyperpar export: --max-shard-size: %s", hp_status_msg(e)), hp_status_free(e);
        }
        if (!st) st = hp_export_hf(hf, ckpt, !strcmp(hf_dtype, "bf16"), max_shard);
        if (!st) printf("wrote %s (config.json and the weights, %s, files of at most %s)\n", hf, hf_dtype, shard);
    } else if (!st) {
        st = export_llmc(ckpt, init, llmc, dtype);
    }
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
