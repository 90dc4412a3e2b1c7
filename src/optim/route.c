#include "optim/route.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

hp_status hp_opt_kind_parse(hp_opt_kind *out, const char *name) {
    if (name && !strcmp(name, "adamw")) {
        *out = HP_OPT_ADAMW;
    } else if (name && !strcmp(name, "muon")) {
        *out = HP_OPT_MUON;
    } else {
        return hp_errorf("optimizer: unknown optimizer '%s' (expected adamw or muon)",
                         name ? name : "(null)");
    }
    return HP_OK;
}

const char *hp_opt_kind_name(hp_opt_kind k) { return k == HP_OPT_MUON ? "muon" : "adamw"; }

int hp_optim_is_matrix(const hp_shape *shape) { return shape->ndim >= 2; }

int64_t hp_optim_stack_count(const hp_shape *shape) {
    int64_t n = 1;
    for (int d = 0; d + 2 < shape->ndim; d++) n *= shape->d[d];
    return n;
}

int hp_optim_hidden_matrix(const char *name, const hp_shape *shape) {
    if (!hp_optim_is_matrix(shape)) return 0;
    size_t n = strlen(name);
    if (n >= 4 && !strcmp(name + n - 4, "bias")) return 0;
    /* the embeddings and the LM head (GPT-2's tied wte, Llama's and MoE's untied `output.weight`) */
    if (!strcmp(name, "wte") || !strcmp(name, "wpe") || strstr(name, "embed") || strstr(name, "lm_head") ||
        !strcmp(name, "output.weight"))
        return 0;
    return 1;
}

#define MAX_PATTERN 256

/* Calls visit(pattern) for each non-empty, space-trimmed entry of a
 * comma-separated list. Stops at the first error. */
typedef hp_status (*pattern_fn)(void *ctx, const char *pattern);

static hp_status each_pattern(const char *field, const char *list, pattern_fn visit, void *ctx) {
    if (!list) return HP_OK;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (b > a) {
            if (b - a >= MAX_PATTERN)
                return hp_errorf("%s: pattern '%.40s...' is longer than %d characters", field, a,
                                 MAX_PATTERN - 1);
            char pat[MAX_PATTERN];
            memcpy(pat, a, (size_t)(b - a));
            pat[b - a] = 0;
            HP_TRY(visit(ctx, pat));
        }
        p = *end ? end + 1 : end;
    }
    return HP_OK;
}

typedef struct {
    const char *field;
    const hp_opt_param *params;
    int nparams;
    char *hit;   /* [nparams]: matched by this list */
    int partial; /* params are one rank's part of the model: a pattern may match none of them */
} match_ctx;

static hp_status match_one(void *ctx_, const char *pattern) {
    match_ctx *c = ctx_;
    int any = 0;
    for (int i = 0; i < c->nparams; i++) {
        if (fnmatch(pattern, c->params[i].name, 0) == 0) {
            c->hit[i] = 1;
            any = 1;
        }
    }
    if (!any && !c->partial) return hp_errorf("%s: pattern '%s' matches no parameter", c->field, pattern);
    return HP_OK;
}

static hp_status route_muon(hp_opt_kind *out, const char *muon_params, const char *adamw_params,
                            const hp_opt_param *params, int nparams, char *to_muon,
                            char *to_adamw, int partial) {
    match_ctx mc = {"muon_params", params, nparams, to_muon, partial};
    HP_TRY(each_pattern("muon_params", muon_params, match_one, &mc));
    match_ctx ac = {"adamw_params", params, nparams, to_adamw, partial};
    HP_TRY(each_pattern("adamw_params", adamw_params, match_one, &ac));
    for (int i = 0; i < nparams; i++) {
        const hp_opt_param *p = &params[i];
        char sh[64];
        if (to_muon[i] && to_adamw[i])
            return hp_errorf("muon_params, adamw_params: parameter '%s' matches both lists",
                             p->name);
        if (to_muon[i] && !hp_optim_is_matrix(&p->shape))
            return hp_errorf("muon_params: parameter '%s' has shape %s, but Muon needs a matrix "
                             "[rows, cols] (or a stack of them: [..., rows, cols])",
                             p->name, hp_shape_str(sh, sizeof sh, &p->shape));
        if (p->hidden_matrix && !to_adamw[i] && !hp_optim_is_matrix(&p->shape))
            return hp_errorf("parameter '%s': hidden_matrix is set but its shape %s is not a "
                             "matrix",
                             p->name, hp_shape_str(sh, sizeof sh, &p->shape));
        if (to_adamw[i])
            out[i] = HP_OPT_ADAMW;
        else if (to_muon[i] || p->hidden_matrix)
            out[i] = HP_OPT_MUON;
        else
            out[i] = HP_OPT_ADAMW;
    }
    return HP_OK;
}

static hp_status route(hp_opt_kind *out, hp_opt_kind kind, const char *muon_params, const char *adamw_params,
                       const hp_opt_param *params, int nparams, int partial) {
    for (int i = 0; i < nparams; i++) out[i] = HP_OPT_ADAMW;
    if (kind == HP_OPT_ADAMW || nparams == 0) return HP_OK;
    char *marks = calloc((size_t)nparams * 2, 1);
    if (!marks) return hp_errorf("optimizer: out of memory routing %d parameters", nparams);
    hp_status st = route_muon(out, muon_params, adamw_params, params, nparams, marks,
                              marks + nparams, partial);
    free(marks);
    return st;
}

hp_status hp_optim_route(hp_opt_kind *out, hp_opt_kind kind, const char *muon_params,
                         const char *adamw_params, const hp_opt_param *params, int nparams) {
    return route(out, kind, muon_params, adamw_params, params, nparams, 0);
}

hp_status hp_optim_route_part(hp_opt_kind *out, hp_opt_kind kind, const char *muon_params,
                              const char *adamw_params, const hp_opt_param *params, int nparams) {
    return route(out, kind, muon_params, adamw_params, params, nparams, 1);
}
