/* api/util: small helpers of the api room. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

hp_status hp_api_strdup(char **out, const char *s) {
    *out = NULL;
    if (!s) return HP_OK;
    *out = strdup(s);
    return *out ? HP_OK : hp_errorf("hyperpar: out of memory copying '%s'", s);
}

hp_status hp_api_pp_opts(hp_pp_opts *out, const char *schedule, const char *split, int chunks) {
    memset(out, 0, sizeof *out);
    out->kind = HP_PP_1F1B;
    if (schedule && *schedule) {
        hp_status st = hp_pp_kind_parse(&out->kind, schedule);
        if (st) return hp_error_wrap(st, "--pp-schedule");
    }
    if (chunks < 0 || chunks > 16) return hp_errorf("--pp-chunks must be in 1..16, got %d", chunks);
    if (chunks > 1 && out->kind != HP_PP_INTERLEAVED)
        return hp_errorf("--pp-chunks %d: model chunks per stage need --pp-schedule interleaved", chunks);
    out->chunks = out->kind == HP_PP_INTERLEAVED ? (chunks > 1 ? chunks : 2) : 1;
    if (!split || !*split || !strcmp(split, "balanced")) return HP_OK;
    if (!strcmp(split, "even")) {
        out->split = HP_PP_SPLIT_EVEN;
        return HP_OK;
    }
    out->split = HP_PP_SPLIT_EXPLICIT;
    for (const char *c = split; *c;) {
        char *end;
        long n = strtol(c, &end, 10);
        if (end == c || n < 1 || n > 1000000 || (*end && *end != ',') || out->nblocks == HP_PP_MAX_STAGES)
            return hp_errorf("--pp-split '%s': balanced, even or blocks per stage (e.g. 3,5; each >= 1, at most %d "
                             "stages)", split, HP_PP_MAX_STAGES);
        out->blocks[out->nblocks++] = (int)n;
        c = *end ? end + 1 : end;
    }
    return HP_OK;
}

hp_status hp_api_remat_opts(hp_remat_opts *out, const char *policy, const char *save) {
    memset(out, 0, sizeof *out);
    HP_TRY(hp_remat_parse(&out->policy, policy));
    for (const char *c = save ? save : ""; *c;) {
        const char *end = strchr(c, ',');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (!n || n >= sizeof out->save[0] || out->nsave == HP_REMAT_MAX_SAVE)
            return hp_errorf("--remat-save '%s': operator names separated by commas (at most %d, each under %zu "
                             "characters)", save, HP_REMAT_MAX_SAVE, sizeof out->save[0]);
        memcpy(out->save[out->nsave], c, n);
        out->save[out->nsave++][n] = 0;
        c = end ? end + 1 : c + n;
    }
    if (out->nsave && out->policy != HP_REMAT_SELECTIVE)
        return hp_errorf("--remat-save applies to --remat selective");
    return HP_OK;
}
