/* layout/layout: placements and layouts — equality, text form (print and
 * parse), checks against a tensor's rank, and the local piece of a rank under
 * the ceil-chunk rule. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"
#include "layout/text.h"

int hp_placement_eq(hp_placement a, hp_placement b) {
    if (a.kind != b.kind) return 0;
    if (a.kind == HP_SHARD) return a.dim == b.dim;
    if (a.kind == HP_PARTIAL) return a.op == b.op;
    return 1;
}

int hp_layout_eq(const hp_layout *a, const hp_layout *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (!hp_placement_eq(a->p[i], b->p[i])) return 0;
    return 1;
}

hp_layout hp_layout_canonical(const hp_layout *l, const hp_mesh *m) {
    hp_layout c = *l;
    for (int i = 0; i < c.ndim && i < m->ndim; i++)
        if (m->size[i] == 1) c.p[i] = hp_replicate();
    return c;
}

hp_layout hp_layout_replicated(const hp_mesh *m) {
    hp_layout l;
    memset(&l, 0, sizeof l);
    l.ndim = m->ndim;
    for (int a = 0; a < m->ndim; a++) l.p[a] = hp_replicate();
    return l;
}

int hp_layout_is_replicated(const hp_layout *l) {
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind != HP_REPLICATE) return 0;
    return 1;
}

int hp_layout_has_partial(const hp_layout *l) {
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_PARTIAL) return 1;
    return 0;
}

static const char *op_name(hp_partial_op op) {
    switch (op) {
    case HP_PARTIAL_SUM: return "sum";
    case HP_PARTIAL_AVG: return "avg";
    case HP_PARTIAL_MAX: return "max";
    }
    return "?";
}

char *hp_placement_str(char *buf, size_t n, hp_placement p) {
    switch (p.kind) {
    case HP_REPLICATE: snprintf(buf, n, "R"); break;
    case HP_SHARD: snprintf(buf, n, "S(%d)", p.dim); break;
    case HP_PARTIAL: snprintf(buf, n, "P(%s)", op_name(p.op)); break;
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}

char *hp_layout_str(char *buf, size_t n, const hp_layout *l, const hp_mesh *m) {
    size_t used = 0;
    if (n) buf[0] = 0;
    if (l->ndim == 0) {
        snprintf(buf, n, "R");
        return buf;
    }
    for (int a = 0; a < l->ndim; a++) {
        char p[32];
        const char *axis = (m && a < m->ndim) ? m->name[a] : "?";
        int k = snprintf(buf + used, n - used, "%s%s@%s", a ? "," : "", hp_placement_str(p, sizeof p, l->p[a]), axis);
        if (k < 0) break;
        used += (size_t)k;
        if (used >= n) break;
    }
    return buf;
}


/* One placement "S(0)", "R", "P(sum)"; 0 if s is not one. */
static int parse_placement(hp_placement *out, const char *s) {
    if (!strcmp(s, "R")) {
        *out = hp_replicate();
        return 1;
    }
    if (!strcmp(s, "P(sum)")) {
        *out = hp_partial(HP_PARTIAL_SUM);
        return 1;
    }
    if (!strcmp(s, "P(avg)")) {
        *out = hp_partial(HP_PARTIAL_AVG);
        return 1;
    }
    if (!strcmp(s, "P(max)")) {
        *out = hp_partial(HP_PARTIAL_MAX);
        return 1;
    }
    if (s[0] == 'S' && s[1] == '(' && isdigit((unsigned char)s[2])) {
        char *stop = NULL;
        errno = 0;
        long d = strtol(s + 2, &stop, 10);
        if (errno || strcmp(stop, ")") || d > 1000) return 0;
        *out = hp_shard((int)d);
        return 1;
    }
    return 0;
}

hp_status hp_layout_parse(hp_layout *out, const char *text, const hp_mesh *m) {
    memset(out, 0, sizeof *out);
    if (!text) return hp_errorf("layout: no text given");
    char mesh[128];
    hp_mesh_str(mesh, sizeof mesh, m);
    hp_layout l = hp_layout_replicated(m);
    char whole[64];
    if (hp_text_trimmed(whole, sizeof whole, text, text + strlen(text)) >= 0 && !strcmp(whole, "R")) {
        *out = l;
        return HP_OK;
    }
    int given[HP_MESH_MAX_DIMS] = {0};
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        char item[96];
        if (hp_text_trimmed(item, sizeof item, p, end) < 0) return hp_errorf("layout '%s': an entry is too long", text);
        if (!item[0]) return hp_errorf("layout '%s': empty entry (expected placement@axis)", text);
        char *at = strchr(item, '@');
        if (!at)
            return hp_errorf("layout '%s': '%s' names no mesh axis (expected placement@axis, e.g. S(0)@%s)", text,
                             item, m->ndim ? m->name[0] : "dp");
        char pl[96], axis[96];
        hp_text_trimmed(pl, sizeof pl, item, at);
        hp_text_trimmed(axis, sizeof axis, at + 1, item + strlen(item));
        int a = hp_mesh_axis(m, axis);
        if (a < 0) return hp_errorf("layout '%s': unknown axis '%s' (mesh %s)", text, axis, mesh);
        if (given[a]) return hp_errorf("layout '%s': axis '%s' is given twice", text, axis);
        given[a] = 1;
        if (!parse_placement(&l.p[a], pl))
            return hp_errorf("layout '%s': bad placement '%s' (expected R, S(dim), P(sum), P(avg) or P(max))", text,
                             pl);
        if (!*end) break;
        p = end + 1;
    }
    *out = l;
    return HP_OK;
}

hp_status hp_layout_check(const hp_layout *l, const hp_mesh *m, int ndim, const char *tensor_name) {
    char ls[160], ms[128];
    const char *tn = tensor_name ? tensor_name : "?";
    if (l->ndim != m->ndim)
        return hp_errorf("layout '%s': has %d placements but mesh '%s' has %d axes (tensor '%s')",
                         hp_layout_str(ls, sizeof ls, l, m), l->ndim, hp_mesh_str(ms, sizeof ms, m), m->ndim, tn);
    for (int a = 0; a < l->ndim; a++) {
        const hp_placement *p = &l->p[a];
        if (p->kind == HP_SHARD && (p->dim < 0 || p->dim >= ndim))
            return hp_errorf("layout '%s': tensor '%s' has %d dims", hp_layout_str(ls, sizeof ls, l, m), tn, ndim);
        if (p->kind != HP_SHARD && p->kind != HP_REPLICATE && p->kind != HP_PARTIAL)
            return hp_errorf("layout on tensor '%s': axis '%s' has an unknown placement kind %d", tn, m->name[a],
                             (int)p->kind);
    }
    return HP_OK;
}

void hp_chunk(int64_t *begin, int64_t *end, int64_t n, int k, int i) {
    int64_t c = (n + k - 1) / k;
    int64_t b = (int64_t)i * c, e = b + c;
    if (b > n) b = n;
    if (e > n) e = n;
    *begin = b;
    *end = e;
}

void hp_local_shape(hp_shape *local, int64_t *offset, const hp_shape *global, const hp_layout *l,
                    const hp_mesh *m, int rank) {
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    *local = *global;
    int64_t off[HP_MAX_DIMS] = {0};
    for (int a = 0; a < l->ndim; a++) { /* outer axes first: each splits what the earlier ones left */
        if (l->p[a].kind != HP_SHARD) continue;
        int d = l->p[a].dim;
        int64_t b, e;
        hp_chunk(&b, &e, local->d[d], m->size[a], coord[a]);
        off[d] += b;
        local->d[d] = e - b;
    }
    if (offset)
        for (int d = 0; d < global->ndim; d++) offset[d] = off[d];
}
