/* layout/plan_fsdp: the FSDP part of a sharding plan — the `fsdp:` line's
 * settings and the `unit` entries (see plan.h), parsed, checked against the
 * mesh, and printed back in the file's form. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/plan.h"
#include "layout/text.h"


void hp_fsdp_spec_free(hp_fsdp_spec *f) {
    for (int i = 0; i < f->nunits; i++) {
        for (int k = 0; k < f->units[i].nglobs; k++) free(f->units[i].globs[k]);
        free(f->units[i].globs);
        free(f->units[i].name);
        free(f->units[i].where);
    }
    free(f->units);
    free(f->where);
    memset(f, 0, sizeof *f);
    f->replicate_axis = -1;
}

static hp_status axis_of(int *out, const hp_mesh *m, const char *name, const char *key, const char *where) {
    *out = hp_mesh_axis(m, name);
    if (*out >= 0) return HP_OK;
    char ms[128];
    return hp_errorf("%s: fsdp %s=%s: the mesh '%s' has no axis '%s'", where, key, name, hp_mesh_str(ms, sizeof ms, m),
                     name);
}

static hp_status on_off(int *out, const char *v, const char *key, const char *where) {
    if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true")) *out = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false")) *out = 0;
    else return hp_errorf("%s: fsdp %s=%s: expected on or off", where, key, v);
    return HP_OK;
}

static hp_status small_int(int *out, const char *v, int lo, int hi, const char *key, const char *where) {
    char *end;
    long x = strtol(v, &end, 10);
    if (!v[0] || *end || x < lo || x > hi) return hp_errorf("%s: fsdp %s=%s: expected an integer in %d..%d", where, key, v, lo, hi);
    *out = (int)x;
    return HP_OK;
}

static hp_status byte_size(int64_t *out, const char *v, const char *key, const char *where) {
    if (hp_text_bytes(out, v))
        return hp_errorf("%s: fsdp %s=%s: expected a byte count >= 1 (e.g. 8M, 65536; K, M, G: 2^10, 2^20, 2^30)",
                         where, key, v);
    return HP_OK;
}

void hp_fsdp_request_default(hp_fsdp_request *r) {
    memset(r, 0, sizeof *r);
    r->level = 3;
    r->reshard_after_forward = 1;
    r->prefetch = 1;
}

/* One key=value of the fsdp line; the axes' names are copied to shard and replicate ([128] each). */
static hp_status set_key(hp_fsdp_request *r, char *shard, char *replicate, const char *key, const char *v,
                         const char *where) {
    if (!strcmp(key, "shard") || !strcmp(key, "replicate")) {
        char *to = key[0] == 's' ? shard : replicate;
        snprintf(to, 128, "%s", v);
        if (key[0] == 's') r->shard = to;
        else r->replicate = to;
        return HP_OK;
    }
    if (!strcmp(key, "level")) return small_int(&r->level, v, 1, 3, key, where);
    if (!strcmp(key, "reshard")) return on_off(&r->reshard_after_forward, v, key, where);
    if (!strcmp(key, "prefetch")) return small_int(&r->prefetch, v, 0, 8, key, where);
    if (!strcmp(key, "reduce")) {
        if (strcmp(v, "fp32") && strcmp(v, "bf16")) return hp_errorf("%s: fsdp reduce=%s: expected fp32 or bf16", where, v);
        r->reduce_bf16 = !strcmp(v, "bf16");
        return HP_OK;
    }
    if (!strcmp(key, "gather")) {
        if (strcmp(v, "fp32") && strcmp(v, "bf16")) return hp_errorf("%s: fsdp gather=%s: expected fp32 or bf16", where, v);
        r->gather_bf16 = !strcmp(v, "bf16");
        return HP_OK;
    }
    if (!strcmp(key, "unit_bytes")) return byte_size(&r->unit_bytes, v, key, where);
    if (!strcmp(key, "keep_bytes")) {
        if (!strcmp(v, "auto")) {
            r->keep_bytes = HP_FSDP_KEEP_AUTO;
            return HP_OK;
        }
        if (hp_text_bytes(&r->keep_bytes, v))
            return hp_errorf("%s: fsdp keep_bytes=%s: expected a byte count >= 1 (e.g. 64M; K, M, G: 2^10, 2^20, "
                             "2^30) or auto (as many units as the memory budget allows)", where, v);
        return HP_OK;
    }
    if (!strcmp(key, "style")) {
        if (!strcmp(v, "hyperpar")) r->style = HP_FSDP_STYLE_HYPERPAR;
        else if (!strcmp(v, "fsdp2")) r->style = HP_FSDP_STYLE_FSDP2;
        else return hp_errorf("%s: fsdp style=%s: expected hyperpar or fsdp2", where, v);
        return HP_OK;
    }
    return hp_errorf("%s: fsdp: unknown setting '%s' (shard, replicate, level, reshard, prefetch, reduce, gather, "
                     "unit_bytes, keep_bytes, style)", where,
                     key);
}

hp_status hp_plan_set_fsdp_request(hp_plan *p, const hp_fsdp_request *r, const char *where) {
    if (!where) where = "api";
    hp_fsdp_spec *f = &p->fsdp;
    if (f->where) return hp_errorf("%s: fsdp given twice (first at %s)", where, f->where);
    int units = f->nunits;
    hp_fsdp_unit_rule *keep = f->units;
    int cap = f->capunits;
    memset(f, 0, sizeof *f);
    f->units = keep, f->nunits = units, f->capunits = cap;
    f->replicate_axis = -1;
    hp_status st = HP_OK;
    char v[16];
    if (r->level < 1 || r->level > 3) snprintf(v, sizeof v, "%d", r->level), st = small_int(&f->level, v, 1, 3, "level", where);
    else if (r->prefetch < 0 || r->prefetch > 8)
        snprintf(v, sizeof v, "%d", r->prefetch), st = small_int(&f->prefetch, v, 0, 8, "prefetch", where);
    if (!st && r->replicate) st = axis_of(&f->replicate_axis, &p->mesh, r->replicate, "replicate", where);
    if (!st && !r->shard) st = hp_errorf("%s: fsdp: no shard axis (e.g. 'fsdp: shard=dp')", where);
    if (!st) st = axis_of(&f->shard_axis, &p->mesh, r->shard, "shard", where);
    if (!st && f->replicate_axis == f->shard_axis) st = hp_errorf("%s: fsdp: the replicate axis is the shard axis", where);
    f->level = r->level, f->prefetch = r->prefetch, f->reshard_after_forward = r->reshard_after_forward ? 1 : 0;
    f->reduce_bf16 = r->reduce_bf16 ? 1 : 0, f->gather_bf16 = r->gather_bf16 ? 1 : 0, f->style = r->style;
    f->unit_bytes = r->unit_bytes;
    f->keep_bytes = r->keep_bytes;
    if (!st && r->keep_bytes < 0 && r->keep_bytes != HP_FSDP_KEEP_AUTO)
        st = hp_errorf("%s: fsdp keep_bytes=%lld: expected a byte count >= 1 or auto (HP_FSDP_KEEP_AUTO)", where,
                                                 (long long)r->keep_bytes);
    if (!st && r->unit_bytes < 0) st = hp_errorf("%s: fsdp unit_bytes=%lld: expected a byte count >= 1", where,
                                                 (long long)r->unit_bytes);
    if (!st && r->unit_bytes > 0 && f->nunits)
        st = hp_errorf("%s: fsdp unit_bytes=%lld: the plan names its units (%s: unit %s); give one or the other",
                       where, (long long)r->unit_bytes, f->units[0].where, f->units[0].name);
    if (!st) {
        f->where = strdup(where);
        if (!f->where) st = hp_errorf("plan: out of memory");
    }
    if (st) f->level = 0;
    return st;
}

hp_status hp_plan_set_fsdp(hp_plan *p, const char *settings, const char *where) {
    if (!where) where = "api";
    if (p->fsdp.where) return hp_errorf("%s: fsdp given twice (first at %s)", where, p->fsdp.where);
    hp_fsdp_request r;
    hp_fsdp_request_default(&r);
    char shard[128], replicate[128];
    const char *s = settings;
    hp_status st = HP_OK;
    while (!st && *s) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        const char *e = s;
        while (*e && !isspace((unsigned char)*e)) e++;
        char tok[128];
        if ((size_t)(e - s) >= sizeof tok) return hp_errorf("%s: fsdp: setting '%.40s...' is too long", where, s);
        memcpy(tok, s, (size_t)(e - s));
        tok[e - s] = 0;
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) st = hp_errorf("%s: fsdp: '%s' is not key=value", where, tok);
        else {
            *eq = 0;
            st = set_key(&r, shard, replicate, tok, eq + 1, where);
        }
        s = e;
    }
    if (st) {
        p->fsdp.level = 0;
        return st;
    }
    return hp_plan_set_fsdp_request(p, &r, where);
}

hp_status hp_plan_add_fsdp_unit(hp_plan *p, const char *name, const char *globs, const char *where) {
    if (!where) where = "api";
    hp_fsdp_spec *f = &p->fsdp;
    if (f->unit_bytes > 0)
        return hp_errorf("%s: unit '%s': the fsdp line (%s) sizes its units by bytes (unit_bytes=%lld); give one or "
                         "the other", where, name, f->where ? f->where : "api", (long long)f->unit_bytes);
    for (int i = 0; i < f->nunits; i++)
        if (!strcmp(f->units[i].name, name))
            return hp_errorf("%s: unit '%s' given twice (first at %s)", where, name, f->units[i].where);
    if (f->nunits == f->capunits) {
        int cap = f->capunits ? 2 * f->capunits : 16;
        hp_fsdp_unit_rule *u = realloc(f->units, sizeof *u * (size_t)cap);
        if (!u) return hp_errorf("plan: out of memory");
        f->units = u;
        f->capunits = cap;
    }
    hp_fsdp_unit_rule *u = &f->units[f->nunits];
    memset(u, 0, sizeof *u);
    u->name = strdup(name);
    u->where = strdup(where);
    if (!u->name || !u->where) {
        free(u->name), free(u->where);
        return hp_errorf("plan: out of memory");
    }
    f->nunits++;
    for (const char *s = globs; *s;) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        const char *e = s;
        while (*e && !isspace((unsigned char)*e)) e++;
        char **g = realloc(u->globs, sizeof *g * (size_t)(u->nglobs + 1));
        if (!g) return hp_errorf("plan: out of memory");
        u->globs = g;
        u->globs[u->nglobs] = malloc((size_t)(e - s) + 1);
        if (!u->globs[u->nglobs]) return hp_errorf("plan: out of memory");
        memcpy(u->globs[u->nglobs], s, (size_t)(e - s));
        u->globs[u->nglobs++][e - s] = 0;
        s = e;
    }
    if (!u->nglobs) return hp_errorf("%s: unit '%s' has no parameter globs after ':'", where, name);
    return HP_OK;
}


void hp_fsdp_spec_print(char *buf, size_t n, size_t *used, const hp_fsdp_spec *f, const hp_mesh *m) {
    if (f->level > 0) {
        hp_text_appendf(buf, n, used, "fsdp: shard=%s", m->name[f->shard_axis]);
        if (f->replicate_axis >= 0) hp_text_appendf(buf, n, used, " replicate=%s", m->name[f->replicate_axis]);
        hp_text_appendf(buf, n, used, " level=%d reshard=%s prefetch=%d reduce=%s gather=%s style=%s", f->level,
            f->reshard_after_forward ? "on" : "off", f->prefetch, f->reduce_bf16 ? "bf16" : "fp32",
            f->gather_bf16 ? "bf16" : "fp32", f->style == HP_FSDP_STYLE_FSDP2 ? "fsdp2" : "hyperpar");
        if (f->unit_bytes > 0) hp_text_appendf(buf, n, used, " unit_bytes=%lld", (long long)f->unit_bytes);
        if (f->keep_bytes > 0) hp_text_appendf(buf, n, used, " keep_bytes=%lld", (long long)f->keep_bytes);
        if (f->keep_bytes == HP_FSDP_KEEP_AUTO) hp_text_appendf(buf, n, used, " keep_bytes=auto");
        hp_text_appendf(buf, n, used, "\n");
    }
    for (int i = 0; i < f->nunits; i++) {
        hp_text_appendf(buf, n, used, "unit %s:", f->units[i].name);
        for (int k = 0; k < f->units[i].nglobs; k++) hp_text_appendf(buf, n, used, " %s", f->units[i].globs[k]);
        hp_text_appendf(buf, n, used, "\n");
    }
}
