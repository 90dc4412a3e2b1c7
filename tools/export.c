/* tools/export: `hyperpar export` — writes a checkpoint's weights in the llm.c
 * format (atomically). */
#include <stdio.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"

static void print_written(const char *out, const hp_llmc_shape *m) {
    printf("wrote %s (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d)\n", out, m->layers, m->heads, m->channels, m->vocab,
           m->padded_vocab, m->max_seq);
}

static hp_status export_llmc(const char *ckpt, const char *init, const char *out) {
    if (!out[0]) return hp_errorf("hyperpar export: --llmc FILE is required");
    hp_llmc_shape m;
    if (init[0]) { /* an llm.c file read and written again (a round trip) */
        HP_TRY(hp_llmc_reexport(&m, out, init));
        print_written(out, &m);
        return HP_OK;
    }
    if (!ckpt[0]) return hp_errorf("hyperpar export: --ckpt DIR (or --init FILE.bin) is required");
    HP_TRY(hp_ckpt_llmc_shape(&m, ckpt));
    HP_TRY(hp_export_llmc(out, ckpt));
    print_written(out, &m);
    return HP_OK;
}

int hp_cmd_export(int argc, char **argv) {
    char ckpt[512] = "", llmc[512] = "", init[512] = "";
    hp_opt tab[] = {
        {"ckpt", OPT_STR, ckpt, sizeof ckpt, "checkpoint directory (or a run directory with 'latest')"},
        {"init", OPT_STR, init, sizeof init, "read the weights from an llm.c checkpoint instead"},
        {"llmc", OPT_STR, llmc, sizeof llmc, "write the weights as an llm.c checkpoint (.bin)"},
    };
    int help = 0, n = 3;
    hp_status st = hp_args_parse(&help, tab, n, argc, argv, 2, "export");
    if (!st && help) {
        hp_args_usage(tab, n, "export", "Writes a checkpoint's weights in the llm.c format.");
        return 0;
    }
    if (!st) st = export_llmc(ckpt, init, llmc);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
