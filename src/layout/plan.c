/* layout/plan: sharding plans — parse, build, look up, print (plan.h). */
#include "layout/plan.h"
#include "layout/text.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strindex.h"

void hp_plan_init(hp_plan *out, const hp_mesh *m) {
    memset(out, 0, sizeof *out);
    out->mesh = *m;
    out->fsdp.replicate_axis = -1;
}

static void free_rules(hp_plan_rule *r, int n) {
    for (int i = 0; i < n; i++) {
        free(r[i].pattern);
        free(r[i].where);
    }
    free(r);
}

void hp_plan_free(hp_plan *p) {
    if (!p) return;
    free_rules(p->params, p->nparams);
    free_rules(p->inputs, p->ninputs);
    hp_fsdp_spec_free(&p->fsdp);
    memset(p, 0, sizeof *p);
}

/* Rule i's pattern, for the index that keeps the check for a repeated rule
 * linear while a file is parsed (core/strindex: a plan of 100k rules reports
 * its first problem at once, not after a quadratic scan). */
static const char *rule_pattern(const void *rules, int i) { return ((const hp_plan_rule *)rules)[i].pattern; }

/* ix: the index of this kind's rules (a file being parsed), or NULL (the C
 * API: the rules are compared one by one). */
static hp_status add_rule(hp_plan *p, int is_input, const char *pattern, const hp_layout *l, const char *where,
                          hp_strindex *ix) {
    const char *kind = is_input ? "input" : "param";
    if (!pattern || !pattern[0]) return hp_errorf("plan: %s rule has an empty pattern", kind);
    for (const char *c = pattern; *c; c++)
        if (isspace((unsigned char)*c) || *c == ':' || *c == '#')
            return hp_errorf("plan: %s pattern '%s' contains '%c' (blanks, ':' and '#' are not allowed)", kind,
                             pattern, isspace((unsigned char)*c) ? ' ' : *c);
    if (l->ndim != p->mesh.ndim) {
        char ms[128];
        return hp_errorf("plan: %s '%s': layout has %d placements but mesh '%s' has %d axes", kind, pattern,
                         l->ndim, hp_mesh_str(ms, sizeof ms, &p->mesh), p->mesh.ndim);
    }
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_SHARD && (l->p[a].dim < 0 || l->p[a].dim >= HP_MAX_DIMS)) {
            char ls[160];
            return hp_errorf("plan: %s '%s': layout '%s': shard dim %d is out of range (tensors have at most %d dims)",
                             kind, pattern, hp_layout_str(ls, sizeof ls, l, &p->mesh), l->p[a].dim, HP_MAX_DIMS);
        }
    hp_plan_rule **rules = is_input ? &p->inputs : &p->params;
    int *n = is_input ? &p->ninputs : &p->nparams, *cap = is_input ? &p->cap_inputs : &p->cap_params;
    int same = -1;
    if (ix) {
        if (!hp_strindex_reserve(ix, rule_pattern, *rules, *n)) return hp_errorf("plan: out of memory");
        same = *hp_strindex_slot(ix, rule_pattern, *rules, pattern) - 1;
    } else {
        for (int i = 0; i < *n && same < 0; i++)
            if (!strcmp((*rules)[i].pattern, pattern)) same = i;
    }
    if (same >= 0)
        return hp_errorf("plan: %s '%s' repeats the rule at %s (the first rule wins, so this one would never "
                         "apply)",
                         kind, pattern, (*rules)[same].where);
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        hp_plan_rule *nr = realloc(*rules, (size_t)nc * sizeof *nr);
        if (!nr) return hp_errorf("plan: out of memory");
        *rules = nr;
        *cap = nc;
    }
    hp_plan_rule *r = &(*rules)[*n];
    r->pattern = strdup(pattern);
    r->where = strdup(where);
    r->layout = *l;
    if (!r->pattern || !r->where) {
        free(r->pattern);
        free(r->where);
        return hp_errorf("plan: out of memory");
    }
    (*n)++;
    if (ix) *hp_strindex_slot(ix, rule_pattern, *rules, pattern) = *n;
    return HP_OK;
}

hp_status hp_plan_add_param(hp_plan *p, const char *pattern, const hp_layout *l) {
    return add_rule(p, 0, pattern, l, "api", NULL);
}

hp_status hp_plan_add_input(hp_plan *p, const char *pattern, const hp_layout *l) {
    return add_rule(p, 1, pattern, l, "api", NULL);
}

static hp_status add_str(hp_plan *p, int is_input, const char *pattern, const char *layout) {
    hp_layout l;
    hp_status st = hp_layout_parse(&l, layout, &p->mesh);
    if (st) return hp_error_wrap(st, "plan: %s '%s'", is_input ? "input" : "param", pattern ? pattern : "");
    return add_rule(p, is_input, pattern, &l, "api", NULL);
}

hp_status hp_plan_add_param_str(hp_plan *p, const char *pattern, const char *layout) {
    return add_str(p, 0, pattern, layout);
}

hp_status hp_plan_add_input_str(hp_plan *p, const char *pattern, const char *layout) {
    return add_str(p, 1, pattern, layout);
}


/* A rule's name pattern, and a unit's name, are at most this long (a line
 * itself has no limit: what the plan prints parses back). */
#define PATTERN_MAX_LEN 1024

/* One non-empty, comment-free line; ix: the rules' indexes (params, inputs);
 * buf: scratch of 3 * (strlen(line) + 1) bytes. */
static hp_status parse_line(hp_plan *p, int *have_mesh, const char *line, const char *name, int lineno,
                            hp_strindex ix[2], char *buf) {
    size_t cap = strlen(line) + 1;
    char *rest = buf, *head = buf + cap, *pattern = buf + 2 * cap;
    const char *colon = strchr(line, ':');
    const char *kw_end = line;
    while (*kw_end && !isspace((unsigned char)*kw_end) && *kw_end != ':') kw_end++;
    char kw[32];
    if (hp_text_trimmed(kw, sizeof kw, line, kw_end) < 0) kw[0] = 0;
    int is_mesh = !strcmp(kw, "mesh"), is_param = !strcmp(kw, "param"), is_input = !strcmp(kw, "input");
    int is_fsdp = !strcmp(kw, "fsdp"), is_unit = !strcmp(kw, "unit");
    int is_remat = !strcmp(kw, "remat"), is_pipeline = !strcmp(kw, "pipeline");
    if (!is_mesh && !is_param && !is_input && !is_fsdp && !is_unit && !is_remat && !is_pipeline)
        return hp_errorf("%s:%d: unknown entry '%.40s' (expected 'mesh:', 'param', 'input', 'fsdp:', 'unit', "
                         "'remat:' or 'pipeline:')", name, lineno, line);
    if (!colon) return hp_errorf("%s:%d: '%s' entry has no ':'", name, lineno, kw);
    hp_text_trimmed(rest, cap, strrchr(line, ':') + 1, line + strlen(line));
    char where[4096 + 32];
    snprintf(where, sizeof where, "%s:%d", name, lineno);
    if (is_mesh) {
        hp_text_trimmed(head, cap, kw_end, colon);
        if (head[0]) return hp_errorf("%s: unexpected '%.80s' between 'mesh' and ':'", where, head);
        if (*have_mesh) return hp_errorf("%s: mesh given twice", where);
        hp_mesh m;
        hp_status st = hp_mesh_parse(&m, rest);
        if (st) return hp_error_wrap(st, "%s", where);
        p->mesh = m;
        *have_mesh = 1;
        return HP_OK;
    }
    if (!*have_mesh) return hp_errorf("%s: '%s' before the 'mesh:' line (the mesh comes first)", where, kw);
    if (is_remat || is_pipeline) { /* kept as text: the compile's passes read their settings */
        hp_text_trimmed(head, cap, kw_end, colon);
        hp_text_trimmed(rest, cap, colon + 1, line + strlen(line));
        char *dst = is_remat ? p->remat : p->pipeline, *dw = is_remat ? p->remat_where : p->pipeline_where;
        size_t dn = is_remat ? sizeof p->remat : sizeof p->pipeline;
        if (head[0]) return hp_errorf("%s: unexpected '%.80s' between '%s' and ':'", where, head, kw);
        if (dst[0]) return hp_errorf("%s: '%s:' given twice", where, kw);
        if (!rest[0]) return hp_errorf("%s: '%s:' has no settings", where, kw);
        if (strlen(rest) >= dn) return hp_errorf("%s: '%s:' settings are longer than %zu characters", where, kw, dn - 1);
        snprintf(dst, dn, "%s", rest);
        snprintf(dw, sizeof p->remat_where, "%.63s", where);
        return HP_OK;
    }
    if (is_fsdp || is_unit) {
        hp_text_trimmed(head, cap, kw_end, colon);
        hp_text_trimmed(rest, cap, colon + 1, line + strlen(line));
        if (is_fsdp && head[0]) return hp_errorf("%s: unexpected '%.80s' between 'fsdp' and ':'", where, head);
        if (is_unit && !head[0]) return hp_errorf("%s: 'unit' entry has no unit name before ':'", where);
        if (is_unit && strlen(head) >= PATTERN_MAX_LEN)
            return hp_errorf("%s: unit name '%.40s...' is longer than %d characters", where, head, PATTERN_MAX_LEN - 1);
        return is_fsdp ? hp_plan_set_fsdp(p, rest, where) : hp_plan_add_fsdp_unit(p, head, rest, where);
    }
    const char *last = strrchr(line, ':');
    hp_text_trimmed(pattern, cap, kw_end, last);
    if (!pattern[0]) return hp_errorf("%s: '%s' entry has no name pattern before ':'", where, kw);
    if (strlen(pattern) >= PATTERN_MAX_LEN)
        return hp_errorf("%s: %s pattern '%.40s...' is longer than %d characters", where, kw, pattern,
                         PATTERN_MAX_LEN - 1);
    if (!rest[0]) return hp_errorf("%s: %s '%s' has no layout after ':'", where, kw, pattern);
    hp_layout l;
    hp_status st = hp_layout_parse(&l, rest, &p->mesh);
    if (st) return hp_error_wrap(st, "%s: %s '%s'", where, kw, pattern);
    st = add_rule(p, is_input, pattern, &l, where, &ix[is_input]);
    if (st) {
        /* drop add_rule's "plan: " prefix: the location says it */
        const char *msg = hp_status_msg(st);
        hp_status e = hp_errorf("%s: %s", where, strncmp(msg, "plan: ", 6) ? msg : msg + 6);
        hp_status_free(st);
        return e;
    }
    return HP_OK;
}

hp_status hp_plan_parse(hp_plan *out, const char *text, const char *name) {
    hp_mesh none;
    memset(&none, 0, sizeof none);
    hp_plan_init(out, &none);
    if (!name) name = "plan";
    if (!text) return hp_errorf("%s: no text", name);
    if (!strncmp(text, "\xEF\xBB\xBF", 3))
        return hp_errorf("%s:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF): save it as plain "
                         "text without one",
                         name);
    int have_mesh = 0, lineno = 0;
    const char *p = text;
    hp_status st = HP_OK;
    hp_strindex ix[2] = {{NULL, 0}, {NULL, 0}};
    while (*p && !st) {
        lineno++;
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        const char *hash = memchr(p, '#', (size_t)(end - p));
        const char *stop = hash ? hash : end;
        size_t cap = (size_t)(stop - p) + 1;
        char *line = malloc(4 * cap);
        if (!line) {
            st = hp_errorf("%s:%d: out of memory", name, lineno);
            break;
        }
        hp_text_trimmed(line, cap, p, stop);
        if (line[0]) st = parse_line(out, &have_mesh, line, name, lineno, ix, line + cap);
        free(line);
        p = nl ? nl + 1 : end;
    }
    hp_strindex_free(&ix[0]), hp_strindex_free(&ix[1]);
    if (!st && !have_mesh) st = hp_errorf("%s: no 'mesh:' line (e.g. 'mesh: dp=2,tp=2')", name);
    if (st) hp_plan_free(out);
    return st;
}

hp_status hp_plan_layout_of(hp_layout *out, const hp_plan *p, const char *name, int is_input, int tensor_ndim) {
    const hp_plan_rule *rules = is_input ? p->inputs : p->params;
    int n = is_input ? p->ninputs : p->nparams;
    *out = hp_layout_replicated(&p->mesh);
    for (int i = 0; i < n; i++) {
        if (fnmatch(rules[i].pattern, name, 0) != 0) continue;
        hp_status st = hp_layout_check(&rules[i].layout, &p->mesh, tensor_ndim, name);
        if (st)
            return hp_error_wrap(st, "%s: %s '%s'", rules[i].where, is_input ? "input" : "param", rules[i].pattern);
        *out = rules[i].layout;
        return HP_OK;
    }
    return HP_OK;
}

/* Levenshtein distance between a[0..na) and b[0..nb) (each clipped to
 * DIST_MAX characters: enough to rank parameter names). */
enum { DIST_MAX = 160 };
static int edit_distance(const char *a, const char *b) {
    int na = (int)strlen(a), nb = (int)strlen(b);
    if (na > DIST_MAX) na = DIST_MAX;
    if (nb > DIST_MAX) nb = DIST_MAX;
    int row[DIST_MAX + 1];
    for (int j = 0; j <= nb; j++) row[j] = j;
    for (int i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= nb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* name with every run of digits replaced by '*' ("h.11.ln1.weight" ->
 * "h.*.ln1.weight"): how a glob over layers spells it. */
static void digits_to_star(char *out, size_t n, const char *name) {
    size_t k = 0;
    for (const char *c = name; *c && k + 1 < n; c++) {
        if (isdigit((unsigned char)*c)) {
            if (k == 0 || out[k - 1] != '*' || !isdigit((unsigned char)c[-1])) out[k++] = '*';
            while (isdigit((unsigned char)c[1])) c++;
        } else {
            out[k++] = *c;
        }
    }
    out[k] = 0;
}

/* The name in names[n] closest to pattern (by itself or in its glob form). */
static const char *closest(const char *pattern, const char *const *names, int n) {
    const char *best = NULL;
    int bd = 0;
    for (int i = 0; i < n; i++) {
        char glob[DIST_MAX + 1];
        digits_to_star(glob, sizeof glob, names[i]);
        int d = edit_distance(pattern, names[i]), dg = edit_distance(pattern, glob);
        if (dg < d) d = dg;
        if (!best || d < bd) best = names[i], bd = d;
    }
    return best;
}

static hp_status check_rule_list(const hp_plan_rule *rules, int nr, const char *kind, const char *what,
                                 const char *const *names, int n) {
    for (int r = 0; r < nr; r++) {
        int hit = 0;
        for (int i = 0; i < n && !hit; i++) hit = fnmatch(rules[r].pattern, names[i], 0) == 0;
        if (hit) continue;
        const char *near = closest(rules[r].pattern, names, n);
        if (!near) return hp_errorf("%s: %s '%s' matches no %s (the model has none)", rules[r].where, kind,
                                    rules[r].pattern, what);
        return hp_errorf("%s: %s '%s' matches no %s of the model (closest: '%s')", rules[r].where, kind,
                         rules[r].pattern, what, near);
    }
    return HP_OK;
}

hp_status hp_plan_check_rules(const hp_plan *p, const char *const *params, int np, const char *const *inputs, int ni) {
    HP_TRY(check_rule_list(p->params, p->nparams, "param", "parameter", params, np));
    return check_rule_list(p->inputs, p->ninputs, "input", "input", inputs, ni);
}


static size_t plan_print(char *buf, size_t n, const hp_plan *p) {
    size_t used = 0;
    if (n) buf[0] = 0;
    char ms[128], ls[192];
    hp_text_appendf(buf, n, &used, "mesh: %s\n", hp_mesh_str(ms, sizeof ms, &p->mesh));
    for (int i = 0; i < p->ninputs; i++)
        hp_text_appendf(buf, n, &used, "input %s: %s\n", p->inputs[i].pattern,
                        hp_layout_str(ls, sizeof ls, &p->inputs[i].layout, &p->mesh));
    for (int i = 0; i < p->nparams; i++)
        hp_text_appendf(buf, n, &used, "param %s: %s\n", p->params[i].pattern,
                        hp_layout_str(ls, sizeof ls, &p->params[i].layout, &p->mesh));
    hp_fsdp_spec_print(buf, n, &used, &p->fsdp, &p->mesh);
    if (p->remat[0]) hp_text_appendf(buf, n, &used, "remat: %s\n", p->remat);
    if (p->pipeline[0]) hp_text_appendf(buf, n, &used, "pipeline: %s\n", p->pipeline);
    return used + 1;
}

char *hp_plan_str(char *buf, size_t n, const hp_plan *p) {
    plan_print(buf, n, p);
    return buf;
}

size_t hp_plan_str_size(const hp_plan *p) { return plan_print(NULL, 0, p); }
