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

hp_status hp_api_pp_opts(hp_pp_opts *out, const char *schedule, const char *split) {
    memset(out, 0, sizeof *out);
    out->chunks = 1;
    out->kind = HP_PP_1F1B;
    if (schedule && *schedule) {
        hp_status st = hp_pp_kind_parse(&out->kind, schedule);
        if (st) return hp_error_wrap(st, "--pp-schedule");
        if (out->kind == HP_PP_INTERLEAVED)
            return hp_errorf("--pp-schedule interleaved: model chunks per stage are not built into the compiled step "
                             "yet (gpipe, 1f1b or zb-h1)");
    }
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
