/* api/plan_report_fsdp: FSDP / ZeRO in a rank's plan report, read off its
 * compile (parallel/fsdp's plan) — the units with their place in the
 * parameter store, their padded size and this rank's shard [begin, end), each
 * managed parameter's unit and the part of it in that shard, and the summary
 * line the plan and the train header print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_report.h"

/* The listed parameters' units and parts: t[k] for global value listed[k]. */
static void gather_params(hp_plan_tensor *t, const hp_compiled *cc, const int *listed, int nlisted) {
    const hp_fsdp_plan *f = &cc->fsdp;
    for (int k = 0; k < nlisted; k++) {
        t[k].fsdp_unit = hp_pp_holds(&cc->pp, &cc->mesh, listed[k], cc->rank) ? -1 : -2;
        int p = 0; /* FSDP's parameter order: the rank's (a pipeline stage's) parameters */
        while (p < f->nparams && f->gval[p] != listed[k]) p++;
        if (p == f->nparams || f->unit_of[p] < 0) continue;
        const hp_fsdp_unit *un = &f->units[f->unit_of[p]];
        int64_t numel = 1;
        for (int d = 0; d < t[k].ndim; d++) numel *= t[k].local_shape[d];
        t[k].fsdp_unit = f->unit_of[p];
        t[k].fsdp_offset = (int64_t)(f->offset[p] - un->offset);
        hp_fsdp_shard_part(&t[k].fsdp_begin, &t[k].fsdp_end, f, p, numel);
    }
}

/* Where node `start` (a unit's reduction start) runs among the backward's steps. */
static void reduce_at(hp_plan_fsdp_unit *o, const hp_compiled *cc, int start) {
    const hp_schedule *s = &cc->sched;
    int a = s->begin[HP_PHASE_BWD], b = s->begin[HP_PHASE_BWD + 1];
    o->reduce_step = -1;
    o->bwd_steps = b - a;
    for (int i = a; start >= 0 && i < b; i++)
        if (s->order[i] == start) o->reduce_step = i - a;
}

hp_status hp_plan_gather_fsdp(hp_plan_fsdp *out, hp_plan_tensor *t, const hp_compiled *cc, const int *listed,
                              int nlisted) {
    const hp_fsdp_plan *f = &cc->fsdp;
    const hp_mesh *m = &cc->mesh;
    memset(out, 0, sizeof *out);
    for (int k = 0; k < nlisted; k++) t[k].fsdp_unit = -1;
    if (!f->level) return HP_OK;
    out->level = f->level;
    snprintf(out->style, sizeof out->style, "%s", f->style == HP_FSDP_STYLE_FSDP2 ? "fsdp2" : "hyperpar");
    snprintf(out->shard_axis, sizeof out->shard_axis, "%s", m->name[f->shard_axis]);
    hp_plan_group_str(out->shard_group, sizeof out->shard_group, m, f->shard_axis, cc->rank);
    out->members = f->members, out->member = f->me;
    out->replicas = f->replicas;
    if (f->replicate_axis >= 0)
        snprintf(out->replicate_axis, sizeof out->replicate_axis, "%s", m->name[f->replicate_axis]);
    out->prefetch = f->prefetch;
    out->reshard = 1; /* the default; hp_api_fsdp_finish reads the plan's */
    out->reduce_bf16 = f->reduce_bf16, out->gather_bf16 = f->gather_bf16;
    out->transient_slots = f->transient ? f->nslots : 0;
    out->units = calloc((size_t)(f->nunits ? f->nunits : 1), sizeof *out->units);
    if (!out->units) return hp_errorf("hp_plan_report_create: out of memory");
    out->nunits = f->nunits;
    for (int u = 0; u < f->nunits; u++) {
        const hp_fsdp_unit *un = &f->units[u];
        hp_plan_fsdp_unit *o = &out->units[u];
        snprintf(o->name, sizeof o->name, "%s", un->name);
        o->nparams = un->nparams;
        o->offset = (int64_t)un->offset, o->size = (int64_t)un->size, o->shard = (int64_t)un->shard;
        o->begin = o->shard * f->me, o->end = o->begin + o->shard;
        reduce_at(o, cc, un->reduce_node[0]);
    }
    gather_params(t, cc, listed, nlisted);
    hp_api_fsdp_finish(out, NULL);
    return HP_OK;
}

void hp_api_fsdp_finish(hp_plan_fsdp *f, const hp_plan *plan) {
    if (!f->level) return;
    if (plan && plan->fsdp.level) f->reshard = plan->fsdp.reshard_after_forward != 0;
    char rep[64] = "", extra[96] = "";
    if (f->replicas > 1) snprintf(rep, sizeof rep, ", replicas %s=%d (HSDP)", f->replicate_axis, f->replicas);
    size_t u = 0;
    if (f->reduce_bf16) u += (size_t)snprintf(extra + u, sizeof extra - u, ", reduce bf16");
    if (f->gather_bf16 && u < sizeof extra) u += (size_t)snprintf(extra + u, sizeof extra - u, ", gather bf16");
    if (f->transient_slots && u < sizeof extra)
        snprintf(extra + u, sizeof extra - u, ", %d transient slots", f->transient_slots);
    char line[1024];
    snprintf(line, sizeof line,
             "level %d (ZeRO-%d), %d unit%s, shard group %s=%d%s, prefetch %d, reshard %s, style %s%s", f->level,
             f->level, f->nunits, f->nunits == 1 ? "" : "s", f->shard_axis, f->members, rep, f->prefetch,
             f->reshard ? "on" : "off", f->style, extra);
    size_t n = strlen(line);
    if (n >= sizeof f->summary) { /* axis names are short: not expected */
        n = sizeof f->summary - 4;
        memcpy(line + n, "...", 4);
        n += 3;
    }
    memcpy(f->summary, line, n + 1);
}
