/* tools/export: `hyperpar export` — writes a checkpoint's weights in the llm.c
 * format (atomically). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "io/ckpt.h"
#include "session.h"

/* An llm.c file read into a session and written again (a round trip). */
static hp_status reexport_llmc(const char *in, const char *out) {
    hp_gpt2_config m;
    hp_session s;
    memset(&s, 0, sizeof s);
    HP_TRY(hp_llmc_model_config(&m, in));
    hp_status st = hp_session_create(&s, &m, 1, 1, 1, 0, NULL);
    if (!st) st = hp_session_import_llmc(&s, in);
    if (!st) st = hp_session_export_llmc(&s, out);
    if (!st) printf("wrote %s (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d)\n", out, m.L, m.NH, m.C, m.V, m.Vp, m.maxT);
    hp_session_destroy(&s);
    return st;
}

static hp_status export_llmc(const char *ckpt, const char *init, const char *out) {
    if (!out[0]) return hp_errorf("hyperpar export: --llmc FILE is required");
    if (init[0]) return reexport_llmc(init, out);
    if (!ckpt[0]) return hp_errorf("hyperpar export: --ckpt DIR (or --init FILE.bin) is required");
    char *dir = NULL;
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/%s", ckpt, HP_CKPT_STATE);
    FILE *f = fopen(probe, "r");
    if (f) {
        fclose(f);
        dir = strdup(ckpt);
    } else {
        HP_TRY(hp_ckpt_get_latest(&dir, ckpt));
    }
    hp_ckpt ck;
    hp_status st = hp_ckpt_open(&ck, dir);
    free(dir);
    if (st) return st;
    hp_gpt2_config m;
    hp_session s;
    memset(&s, 0, sizeof s);
    st = hp_ckpt_model_config(&m, &ck, ckpt);
    if (!st) st = hp_session_create(&s, &m, 1, 1, 1, 0, NULL);
    if (!st) st = hp_session_load(&s, &ck);
    if (!st) st = hp_session_export_llmc(&s, out);
    if (!st) printf("wrote %s (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d)\n", out, m.L, m.NH, m.C, m.V, m.Vp, m.maxT);
    hp_ckpt_close(&ck);
    hp_session_destroy(&s);
    return st;
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
