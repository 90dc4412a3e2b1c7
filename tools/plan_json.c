/* tools/plan_json: the report of `hyperpar plan` as JSON (--json FILE): the
 * mesh, model and plan, the passes, then per rank its tensors, collectives,
 * totals and memory, and the propagation notes — the same as the text
 * report, as one line of compact JSON written with stdio. */
#include <stdio.h>
#include <stdlib.h>

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
    fputs("}}", f);
}

static void json_report(FILE *f, const hp_plan_report *rep, int all) {
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
    fputs(rep->nnotes ? "]}\n" : "[]}\n", f);
}

hp_status hp_planner_write_json(const planner *p, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return hp_errorf("%s: cannot write the JSON report", path);
    json_report(f, p->rep, p->po.all);
    int ok = !ferror(f);
    if (fclose(f) != 0) ok = 0;
    return ok ? HP_OK : hp_errorf("%s: cannot write the JSON report", path);
}
