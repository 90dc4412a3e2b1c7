/* api/util: small helpers of the api room. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "parallel/schedule.h"

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

int hp_api_ep_overlap(int overlap, int ep_overlap) {
    if (!overlap || ep_overlap < 0) return HP_EP_OVERLAP_OFF;
    return ep_overlap > 0 ? HP_EP_OVERLAP_ALWAYS : HP_EP_OVERLAP_AUTO;
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

/* "key=value" tokens of a plan line: the value of key (into buf), 1 when present; an unknown key is an error. */
static hp_status plan_tokens(const char *text, const char *where, const char *const *keys, int nkeys, char (*vals)[256],
                             char *first, size_t nfirst) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    if (first) first[0] = 0;
    for (int k = 0; k < nkeys; k++) vals[k][0] = 0;
    int i = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save), i++) {
        char *eq = strchr(t, '=');
        if (!eq && i == 0 && first) {
            snprintf(first, nfirst, "%s", t);
            continue;
        }
        int k = 0;
        while (eq && k < nkeys && (strlen(keys[k]) != (size_t)(eq - t) || strncmp(t, keys[k], (size_t)(eq - t)))) k++;
        if (!eq || k == nkeys) return hp_errorf("%s: '%s' is not one of this line's settings", where, t);
        snprintf(vals[k], 256, "%s", eq + 1);
    }
    return HP_OK;
}

hp_status hp_api_plan_lines(hp_pp_opts *pp, hp_remat_opts *rm, const hp_plan *plan) {
    if (!plan) return HP_OK;
    char v[3][256];
    if (plan->pipeline[0]) {
        static const char *const keys[] = {"schedule", "split", "chunks"};
        HP_TRY(plan_tokens(plan->pipeline, plan->pipeline_where, keys, 3, v, NULL, 0));
        char *end;
        long chunks = v[2][0] ? strtol(v[2], &end, 10) : 0;
        if (v[2][0] && (*end || chunks < 1 || chunks > 16))
            return hp_errorf("%s: chunks=%s: 1..16 model chunks per stage", plan->pipeline_where, v[2]);
        hp_status st = hp_api_pp_opts(pp, v[0][0] ? v[0] : NULL, v[1][0] ? v[1] : NULL, (int)chunks);
        if (st) return hp_error_wrap(st, "%s", plan->pipeline_where);
    }
    if (plan->remat[0] && rm->policy == HP_REMAT_NONE) { /* the run's --remat, when given, wins */
        static const char *const keys[] = {"save"};
        char policy[32];
        HP_TRY(plan_tokens(plan->remat, plan->remat_where, keys, 1, v, policy, sizeof policy));
        hp_status st = hp_api_remat_opts(rm, policy, v[0][0] ? v[0] : NULL);
        if (st) return hp_error_wrap(st, "%s", plan->remat_where);
    }
    return HP_OK;
}
