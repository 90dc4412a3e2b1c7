/* tools/plan_json: the report of `hyperpar plan` as JSON (--json FILE): the
 * mesh, model and plan, then per rank its tensors, collectives, totals and
 * memory, and the propagation notes — the same as the text report. */
#include <stdio.h>
#include <stdlib.h>

#include "io/json.h"
#include "plan_report.h"

static void jw_shape(hp_jw *w, const char *key, const hp_shape *s) {
    hp_jw_key(w, key);
    hp_jw_array_begin(w);
    for (int i = 0; i < s->ndim; i++) hp_jw_int(w, s->d[i]);
    hp_jw_array_end(w);
}

static void jw_str(hp_jw *w, const char *key, const char *s) {
    hp_jw_key(w, key);
    hp_jw_string(w, s);
}

static void jw_num(hp_jw *w, const char *key, double v) {
    hp_jw_key(w, key);
    hp_jw_double(w, v);
}

static void json_rank(hp_jw *w, const planner *p, const rank_report *r) {
    const hp_graph *g = p->g;
    const hp_mesh *m = &p->plan.mesh;
    char b[200];
    hp_jw_object_begin(w);
    jw_num(w, "rank", r->rank);
    hp_jw_key(w, "tensors");
    hp_jw_array_begin(w);
    for (int k = 0; k < p->nlisted; k++) {
        int v = p->listed[k];
        const hp_value *val = &g->vals[v];
        hp_shape loc;
        hp_local_shape(&loc, NULL, &val->shape, &p->prop->val[v], m, r->rank);
        hp_jw_object_begin(w);
        jw_str(w, "name", val->name);
        jw_str(w, "kind", hp_planner_kind_name(val->kind));
        jw_shape(w, "shape", &val->shape);
        jw_str(w, "layout", hp_layout_str(b, sizeof b, &p->prop->val[v], m));
        jw_shape(w, "local_shape", &loc);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    hp_jw_key(w, "collectives");
    hp_jw_array_begin(w);
    for (int i = 0; i < r->nc; i++) {
        const coll *c = &r->c[i];
        if (!c->comm && !p->po.all) continue;
        hp_jw_object_begin(w);
        jw_str(w, "phase", hp_planner_phase_name(c->phase));
        jw_str(w, "where", c->where);
        jw_str(w, "steps", c->steps);
        jw_str(w, "groups", c->groups);
        jw_num(w, "bytes", c->bytes);
        hp_jw_key(w, "communicates");
        hp_jw_bool(w, c->comm);
        hp_jw_object_end(w);
    }
    hp_jw_array_end(w);
    hp_jw_key(w, "totals");
    hp_jw_array_begin(w);
    for (int ph = 0; ph < HP_NPHASES; ph++)
        for (int k = 0; k < NKINDS; k++) {
            if (!r->count[ph][k]) continue;
            hp_jw_object_begin(w);
            jw_str(w, "phase", hp_planner_phase_name((hp_phase)ph));
            jw_str(w, "kind", hp_rd_kind_name((hp_rd_kind)k));
            jw_num(w, "count", r->count[ph][k]);
            jw_num(w, "bytes", r->bytes[ph][k]);
            hp_jw_object_end(w);
        }
    hp_jw_array_end(w);
    hp_jw_key(w, "memory");
    hp_jw_object_begin(w);
    jw_num(w, "params", r->m.params);
    jw_num(w, "grads", r->m.grads);
    jw_num(w, "optimizer", r->m.optim);
    jw_num(w, "activations", r->m.arena);
    jw_num(w, "scratch", r->m.scratch);
    jw_num(w, "inputs", r->m.inputs);
    jw_num(w, "total", r->m.total);
    hp_jw_object_end(w);
    hp_jw_object_end(w);
}

hp_status hp_planner_write_json(const planner *p, const char *path) {
    const hp_mesh *m = &p->plan.mesh;
    hp_jw w;
    hp_jw_init(&w);
    char b[160];
    hp_jw_object_begin(&w);
    jw_str(&w, "mesh", hp_mesh_str(b, sizeof b, m));
    hp_jw_key(&w, "axes");
    hp_jw_array_begin(&w);
    for (int a = 0; a < m->ndim; a++) {
        hp_jw_object_begin(&w);
        jw_str(&w, "name", m->name[a]);
        jw_num(&w, "size", m->size[a]);
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    jw_num(&w, "nranks", hp_mesh_size(m));
    jw_num(&w, "world", p->po.world);
    hp_jw_key(&w, "model");
    hp_jw_object_begin(&w);
    jw_num(&w, "L", p->mc.L), jw_num(&w, "NH", p->mc.NH), jw_num(&w, "C", p->mc.C);
    jw_num(&w, "V", p->mc.V), jw_num(&w, "Vp", p->mc.Vp), jw_num(&w, "maxT", p->mc.maxT);
    jw_num(&w, "B", p->po.o.batch), jw_num(&w, "T", p->po.o.seq);
    jw_num(&w, "params", (double)hp_gpt2_num_params(&p->mc));
    hp_jw_object_end(&w);
    size_t pn = hp_plan_str_size(&p->plan);
    char *pt = malloc(pn);
    if (!pt) {
        hp_jw_free(&w);
        return hp_errorf("out of memory");
    }
    jw_str(&w, "plan", hp_plan_str(pt, pn, &p->plan));
    free(pt);
    hp_jw_key(&w, "passes");
    hp_jw_array_begin(&w);
    for (int i = 0; i < p->r[0].cc.npasses; i++) {
        hp_jw_object_begin(&w);
        jw_str(&w, "name", p->r[0].cc.passes[i].name);
        jw_str(&w, "note", p->r[0].cc.passes[i].note);
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_key(&w, "ranks");
    hp_jw_array_begin(&w);
    for (int i = 0; i < p->nr; i++) json_rank(&w, p, &p->r[i]);
    hp_jw_array_end(&w);
    hp_jw_key(&w, "notes");
    hp_jw_array_begin(&w);
    for (int i = 0; i < p->prop->nnotes; i++) hp_jw_string(&w, p->prop->notes[i]);
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);
    char *text;
    size_t len;
    HP_TRY(hp_jw_finish(&text, &len, &w));
    FILE *f = fopen(path, "w");
    int ok = f && fwrite(text, 1, len, f) == len && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    return ok ? HP_OK : hp_errorf("%s: cannot write the JSON report", path);
}
