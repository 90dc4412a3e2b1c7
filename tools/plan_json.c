/* tools/plan_json: the report of `hyperpar plan` as JSON (--json FILE): the
 * mesh, model and plan, the passes, then per rank its tensors (FSDP: each
 * parameter's unit and part), collectives, totals, memory and FSDP units,
 * the propagation notes, and the fit per process — the same as the text
 * report, as one line of compact JSON written with stdio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_report.h"

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*c < 0x20)
                fprintf(f, "\\u%04x", *c);
            else
                fputc(*c, f);
        }
    }
    fputc('"', f);
}

/* A number with the fewest digits that read back to v (15 to 17). */
static void put_num(FILE *f, double v) {
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
}

/* ,"key": — sep is the text before the key ("" for a first member). */
static void key(FILE *f, const char *sep, const char *k) {
    fputs(sep, f);
    put_str(f, k);
    fputc(':', f);
}

static void kv_str(FILE *f, const char *sep, const char *k, const char *v) {
    key(f, sep, k);
    put_str(f, v);
}

static void kv_num(FILE *f, const char *sep, const char *k, double v) {
    key(f, sep, k);
    put_num(f, v);
}

static void kv_shape(FILE *f, const char *sep, const char *k, const int64_t *d, int ndim) {
    key(f, sep, k);
    fputc('[', f);
    for (int i = 0; i < ndim; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)d[i]);
    fputc(']', f);
}

static void json_tensor(FILE *f, const hp_plan_tensor *t) {
    kv_str(f, "{", "name", t->name);
    kv_str(f, ",", "kind", t->kind);
    kv_shape(f, ",", "shape", t->shape, t->ndim);
    kv_str(f, ",", "layout", t->layout);
    kv_shape(f, ",", "local_shape", t->local_shape, t->ndim);
    if (t->fsdp_unit >= 0 && !strcmp(t->kind, "param")) { /* its unit, and the part in the rank's shard */
        kv_num(f, ",\"fsdp\":{", "unit", t->fsdp_unit);
        kv_num(f, ",", "offset", (double)t->fsdp_offset);
        kv_num(f, ",", "begin", (double)t->fsdp_begin);
        kv_num(f, ",", "end", (double)t->fsdp_end);
        fputc('}', f);
    }
    fputc('}', f);
}

static void json_fsdp(FILE *f, const hp_plan_fsdp *x) {
    kv_num(f, "{", "level", x->level);
    kv_str(f, ",", "summary", x->summary);
    kv_str(f, ",", "style", x->style);
    kv_str(f, ",", "shard_axis", x->shard_axis);
    kv_str(f, ",", "shard_group", x->shard_group);
    kv_num(f, ",", "members", x->members);
    kv_num(f, ",", "member", x->member);
    kv_num(f, ",", "replicas", x->replicas);
    kv_num(f, ",", "prefetch", x->prefetch);
    key(f, ",", "reshard");
    fputs(x->reshard ? "true" : "false", f);
    kv_num(f, ",", "transient_slots", x->transient_slots);
    key(f, ",", "units");
    for (int u = 0; u < x->nunits; u++) {
        const hp_plan_fsdp_unit *y = &x->units[u];
        kv_str(f, u ? ",{" : "[{", "name", y->name);
        kv_num(f, ",", "params", y->nparams);
        kv_num(f, ",", "offset", (double)y->offset);
        kv_num(f, ",", "size", (double)y->size);
        kv_num(f, ",", "shard", (double)y->shard);
        kv_num(f, ",", "begin", (double)y->begin);
        kv_num(f, ",", "end", (double)y->end);
        kv_num(f, ",", "reduce_step", y->reduce_step);
        kv_num(f, ",", "bwd_steps", y->bwd_steps);
        fputc('}', f);
    }
    fputs(x->nunits ? "]}" : "[]}", f);
}

static void json_fit(FILE *f, const hp_plan_fit *x) {
    kv_num(f, "{", "first_rank", x->first_rank);
    kv_num(f, ",", "ranks_here", x->ranks_here);
    kv_num(f, ",", "needed", x->needed);
    kv_num(f, ",", "available", x->available);
    kv_str(f, ",", "source", hp_planner_fit_source(x));
    key(f, ",", "fits");
    fputs(x->fits ? "true" : "false", f);
    kv_num(f, ",", "short", x->short_by);
    key(f, ",", "closest");
    fputs(x->closest ? "true" : "false", f);
    key(f, ",", "hints");
    for (int i = 0; i < x->nhints; i++) {
        kv_num(f, i ? ",{" : "[{", "processes", x->hints[i].processes);
        kv_str(f, ",", "flags", x->hints[i].flags);
        kv_num(f, ",", "needed", x->hints[i].needed);
        fputc('}', f);
    }
    fputs(x->nhints ? "]" : "[]", f);
    kv_str(f, ",", "hint", x->hint);
    fputc('}', f);
}

static void json_coll(FILE *f, const hp_plan_collective *c) {
    kv_str(f, "{", "phase", c->phase);
    kv_str(f, ",", "where", c->where);
    kv_str(f, ",", "steps", c->steps);
    kv_str(f, ",", "groups", c->groups);
    kv_num(f, ",", "bytes", c->bytes);
    key(f, ",", "communicates");
    fputs(c->communicates ? "true}" : "false}", f);
}

static void json_rank(FILE *f, const hp_plan_rank_report *r, int all) {
    kv_num(f, "{", "rank", r->rank);
    key(f, ",", "tensors");
    for (int k = 0; k < r->ntensors; k++) fputs(k ? "," : "[", f), json_tensor(f, &r->tensors[k]);
    fputs(r->ntensors ? "]" : "[]", f);
    key(f, ",", "collectives");
    const char *sep = "[";
    for (int i = 0; i < r->ncollectives; i++) {
        if (!r->collectives[i].communicates && !all) continue;
        fputs(sep, f), sep = ",";
        json_coll(f, &r->collectives[i]);
    }
    fputs(*sep == '[' ? "[]" : "]", f);
    key(f, ",", "totals");
    for (int i = 0; i < r->ntotals; i++) {
        const hp_plan_total *t = &r->totals[i];
        kv_str(f, i ? ",{" : "[{", "phase", t->phase);
        kv_str(f, ",", "kind", t->kind);
        kv_num(f, ",", "count", t->count);
        kv_num(f, ",", "bytes", t->bytes);
        fputc('}', f);
    }
    fputs(r->ntotals ? "]" : "[]", f);
    const hp_plan_memory *m = &r->memory;
    kv_num(f, ",\"memory\":{", "params", m->params);
    kv_num(f, ",", "grads", m->grads);
    kv_num(f, ",", "optimizer", m->optimizer);
    kv_num(f, ",", "activations", m->activations);
    kv_num(f, ",", "scratch", m->scratch);
    kv_num(f, ",", "inputs", m->inputs);
    kv_num(f, ",", "total", m->total);
    fputc('}', f);
    key(f, ",", "fsdp");
    if (r->fsdp.level) json_fsdp(f, &r->fsdp);
    else fputs("null", f);
    fputc('}', f);
}

static void json_muon(FILE *f, const hp_plan_muon *m) {
    if (!m->nmatrices) {
        fputs("null", f);
        return;
    }
    kv_num(f, "{", "matrices", m->nmatrices);
    kv_num(f, ",", "imbalance", m->imbalance);
    kv_num(f, ",", "split", m->nsplit);
    kv_num(f, ",", "refused", m->refused);
    kv_str(f, ",", "status", m->status);
    key(f, ",", "groups");
    for (int i = 0; i < m->ngroups; i++) {
        kv_str(f, i ? ",{" : "[{", "key", m->groups[i].key);
        kv_num(f, ",", "matrices", m->groups[i].nmatrices);
        kv_num(f, ",", "ranks", m->groups[i].nranks);
        kv_num(f, ",", "gflops", m->groups[i].gflops);
        fputc('}', f);
    }
    fputs(m->ngroups ? "]" : "[]", f);
    key(f, ",", "strategies");
    for (int i = 0; i < m->nstrategies; i++) {
        kv_str(f, i ? ",{" : "[{", "name", m->strategies[i].name);
        kv_num(f, ",", "max_gflops", m->strategies[i].max_gflops);
        kv_num(f, ",", "total_gflops", m->strategies[i].total_gflops);
        kv_num(f, ",", "imbalance", m->strategies[i].imbalance);
        kv_num(f, ",", "received_mean", m->strategies[i].recv_mean);
        fputc('}', f);
    }
    fputs(m->nstrategies ? "]" : "[]", f);
    key(f, ",", "ranks");
    for (int r = 0; r < m->nranks; r++) {
        kv_num(f, r ? ",{" : "[{", "rank", r);
        kv_num(f, ",", "gflops", m->gflops[r]);
        kv_num(f, ",", "sent", m->sent[r]);
        kv_num(f, ",", "received", m->recv[r]);
        fputc('}', f);
    }
    fputs(m->nranks ? "]" : "[]", f);
    key(f, ",", "owners");
    for (int i = 0; i < m->nmatrices; i++) {
        const hp_plan_muon_matrix *x = &m->matrices[i];
        kv_str(f, i ? ",{" : "[{", "name", x->name);
        kv_str(f, ",", "group", m->groups[x->group].key);
        kv_num(f, ",", "owner", x->owner);
        kv_num(f, ",", "team", x->team);
        kv_num(f, ",", "count", x->count);
        kv_num(f, ",", "rows", (double)x->rows);
        kv_num(f, ",", "cols", (double)x->cols);
        kv_num(f, ",", "gflops", x->gflops);
        fputc('}', f);
    }
    fputs(m->nmatrices ? "]" : "[]", f);
    fputc('}', f);
}

static void json_pipeline(FILE *f, const hp_plan_pipeline *pl) {
    if (!pl->stages) {
        fputs("null", f);
        return;
    }
    kv_num(f, "{", "stages", pl->stages);
    kv_str(f, ",", "schedule", pl->schedule);
    kv_num(f, ",", "micro_batches", pl->micro);
    kv_str(f, ",", "split", pl->split);
    kv_num(f, ",", "imbalance", pl->imbalance);
    kv_num(f, ",", "bubble", pl->bubble);
    kv_num(f, ",", "bubble_formula", pl->bubble_formula);
    key(f, ",", "in_flight");
    for (int s = 0; s < pl->stages && s < 64; s++) fputs(s ? "," : "[", f), put_num(f, pl->peak_inflight[s]);
    fputs("]", f);
    kv_str(f, ",", "timeline", pl->timeline ? pl->timeline : "");
    fputc('}', f);
}

static void json_report(FILE *f, const planner *p) {
    const hp_plan_report *rep = p->rep;
    int all = p->po.all;
    kv_str(f, "{", "mesh", rep->mesh);
    key(f, ",", "axes");
    for (int a = 0; a < rep->naxes; a++) {
        kv_str(f, a ? ",{" : "[{", "name", rep->axis_name[a]);
        kv_num(f, ",", "size", rep->axis_size[a]);
        fputc('}', f);
    }
    fputs(rep->naxes ? "]" : "[]", f);
    kv_num(f, ",", "nranks", rep->nranks);
    kv_num(f, ",", "world", rep->world);
    const hp_model_config *mc = &rep->model;
    kv_num(f, ",\"model\":{", "L", mc->layers);
    kv_num(f, ",", "NH", mc->heads);
    kv_num(f, ",", "C", mc->channels);
    kv_num(f, ",", "V", mc->vocab);
    kv_num(f, ",", "Vp", rep->vocab_padded);
    kv_num(f, ",", "maxT", mc->max_seq);
    kv_num(f, ",", "B", rep->batch);
    kv_num(f, ",", "T", rep->seq);
    kv_num(f, ",", "params", (double)rep->nparams);
    fputc('}', f);
    kv_str(f, ",", "plan", rep->plan_text);
    key(f, ",", "passes");
    for (int i = 0; i < rep->npasses; i++) {
        kv_str(f, i ? ",{" : "[{", "name", rep->passes[i].name);
        kv_str(f, ",", "note", rep->passes[i].note);
        fputc('}', f);
    }
    fputs(rep->npasses ? "]" : "[]", f);
    key(f, ",", "ranks");
    for (int i = 0; i < rep->nreported; i++) fputs(i ? "," : "[", f), json_rank(f, &rep->ranks[i], all);
    fputs(rep->nreported ? "]" : "[]", f);
    key(f, ",", "notes");
    for (int i = 0; i < rep->nnotes; i++) fputs(i ? "," : "[", f), put_str(f, rep->notes[i]);
    fputs(rep->nnotes ? "]" : "[]", f);
    key(f, ",", "muon");
    json_muon(f, &rep->muon);
    key(f, ",", "pipeline");
    json_pipeline(f, &rep->pipeline);
    key(f, ",", "fit");
    if (p->have_fit) json_fit(f, &p->fit);
    else fputs("null", f);
    fputs("}\n", f);
}

hp_status hp_planner_write_json(const planner *p, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return hp_errorf("%s: cannot write the JSON report", path);
    json_report(f, p);
    int ok = !ferror(f);
    if (fclose(f) != 0) ok = 0;
    return ok ? HP_OK : hp_errorf("%s: cannot write the JSON report", path);
}
