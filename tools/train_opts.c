/* tools/train_opts: the flag table of `hyperpar train` over the library's options (see the header). */
#include "train_opts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hp_train_opt_table(hp_opt *t, hp_train_options *o) {
    const hp_train_optdef *defs;
    int n = hp_train_optdefs(&defs);
    for (int i = 0; t && i < n; i++)
        t[i] = (hp_opt){defs[i].name, defs[i].type, (char *)o + defs[i].offset, defs[i].size, defs[i].help};
    return n;
}

void hp_train_shape_unset(hp_train_options *o) {
    o->layers = o->heads = o->channels = o->vocab = o->max_seq = HP_SHAPE_UNSET;
}

hp_status hp_train_shape_resolve(hp_train_options *o, const hp_model_config *init, const char *init_path, const char *cmd) {
    hp_train_options d;
    hp_train_options_default(&d);
    struct {
        const char *flag;
        int *v, def, file;
    } f[] = {{"layers", &o->layers, d.layers, init ? init->layers : 0},
             {"heads", &o->heads, d.heads, init ? init->heads : 0},
             {"channels", &o->channels, d.channels, init ? init->channels : 0},
             {"vocab", &o->vocab, d.vocab, init ? init->vocab : 0},
             {"max-seq", &o->max_seq, d.max_seq, init ? init->max_seq : 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (init && *f[i].v != HP_SHAPE_UNSET && *f[i].v != f[i].file)
            return hp_errorf("hyperpar %s: --%s %d conflicts with %s%s, whose model has %s %d (it sets the "
                             "model shape: leave --%s out)",
                             cmd, f[i].flag, *f[i].v, strncmp(init_path, "--", 2) ? "--init " : "", init_path, f[i].flag,
                             f[i].file, f[i].flag);
        *f[i].v = init ? f[i].file : *f[i].v == HP_SHAPE_UNSET ? f[i].def : *f[i].v;
    }
    return HP_OK;
}

int hp_train_is_distributed(const hp_train_options *o) {
    return o->plan[0] || o->dp > 1 || o->tp > 1 || o->ep > 1 || o->pp > 1 || o->fsdp > 1 || o->hsdp[0] || o->zero > 0;
}

void hp_train_plan_describe(char *buf, size_t n, const hp_train_options *o) {
    char tp[64] = "", zero[32] = "";
    if (o->ep > 1) snprintf(tp, sizeof tp, " x ep %d", o->ep);
    if (o->tp > 1) snprintf(tp + strlen(tp), sizeof tp - strlen(tp), " x tp %d", o->tp);
    if (o->pp > 1) snprintf(tp + strlen(tp), sizeof tp - strlen(tp), " x pp %d (%s)", o->pp, o->pp_schedule);
    if (o->zero && o->zero != 3) snprintf(zero, sizeof zero, " (zero-%d)", o->zero);
    if (o->plan[0]) snprintf(buf, n, "plan file %s", o->plan);
    else if (o->hsdp[0]) snprintf(buf, n, "hsdp %s%s%s", o->hsdp, zero, tp);
    else if (o->fsdp > 1) snprintf(buf, n, "fsdp %d%s%s", o->fsdp, zero, tp);
    else if (o->zero) snprintf(buf, n, "zero-%d x dp %d%s", o->zero, o->dp, tp);
    else if (o->dp > 1) snprintf(buf, n, "dp %d%s", o->dp, tp);
    else if (o->tp > 1 || o->pp > 1 || o->ep > 1) snprintf(buf, n, "%s", tp + 3);
    else snprintf(buf, n, "1 rank");
}
