/* report/trace: trace files read back and split (see the header). */
#include "report/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "report/jsonfile.h"

static int by_start(const void *a, const void *b) {
    const hp_rep_event *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0 ? 1 : 0;
}

static hp_status read_events(hp_rep_trace *t, const hp_json *evs, const char *path) {
    t->ev = malloc(sizeof *t->ev * (size_t)(evs->n > 0 ? evs->n : 1));
    if (!t->ev) return hp_errorf("%s: out of memory for the trace", path);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < evs->n; i++) {
            const hp_json *e = &evs->items[i];
            const hp_json *ph = hp_json_get(e, "ph");
            if (!ph || ph->type != HP_JSON_STRING || strcmp(ph->str, "X")) continue;
            const hp_json *tid = hp_json_get(e, "tid"), *ts = hp_json_get(e, "ts"), *dur = hp_json_get(e, "dur");
            if (!tid || tid->type != HP_JSON_NUMBER || !ts || ts->type != HP_JSON_NUMBER || !dur ||
                dur->type != HP_JSON_NUMBER)
                return hp_errorf("%s: traceEvents[%d]: an \"X\" event needs numbers tid, ts and dur", path, i);
            if (!(fabs(ts->number) <= HP_REP_MAX_US))
                return hp_errorf("%s: traceEvents[%d]: field 'ts': expected microseconds in -1e15..1e15, got %.15g", path,
                                 i, ts->number);
            if (!(dur->number >= 0 && dur->number <= HP_REP_MAX_US))
                return hp_errorf("%s: traceEvents[%d]: field 'dur': expected microseconds in 0..1e15, got %.15g", path, i,
                                 dur->number);
            int compute = tid->number == 0;
            if (compute != (pass == 0)) continue;
            const hp_json *cat = hp_json_get(e, "cat");
            const char *c = cat && cat->type == HP_JSON_STRING ? cat->str : "";
            int kind = !compute ? HP_REP_COMM : !strcmp(c, "bwd") ? HP_REP_BWD : !strcmp(c, "opt") ? HP_REP_OPT
                                                                                                  : HP_REP_FWD;
            t->ev[t->n++] = (hp_rep_event){ts->number, ts->number + dur->number, kind, 0};
            if (compute) t->ncompute++;
        }
    qsort(t->ev, (size_t)t->ncompute, sizeof *t->ev, by_start);
    qsort(t->ev + t->ncompute, (size_t)(t->n - t->ncompute), sizeof *t->ev, by_start);
    return HP_OK;
}

/* Steps: a forward kernel after an optimizer kernel starts one; a collective
 * belongs to the step whose first kernel starts at or before it. */
static void cut_steps(hp_rep_trace *t) {
    int step = 0, seen_opt = 0;
    double *starts = malloc(sizeof(double) * (size_t)(t->ncompute + 1));
    int ns = 0;
    for (int i = 0; i < t->ncompute; i++) {
        hp_rep_event *e = &t->ev[i];
        if (e->kind == HP_REP_OPT) seen_opt = 1;
        else if (seen_opt && e->kind == HP_REP_FWD) step++, seen_opt = 0;
        if (starts && ns == step) starts[ns++] = e->t0;
        e->step = step;
    }
    t->nsteps = t->ncompute ? step + 1 : 0;
    for (int i = t->ncompute, s = 0; i < t->n; i++) {
        while (starts && s + 1 < ns && starts[s + 1] <= t->ev[i].t0) s++;
        t->ev[i].step = s;
    }
    free(starts);
}

hp_status hp_rep_trace_load(hp_rep_trace *out, const char *path) {
    memset(out, 0, sizeof *out);
    hp_json *root = NULL;
    HP_TRY(hp_rep_json_load(&root, path));
    hp_status st = HP_OK;
    const hp_json *evs = hp_json_get(root, "traceEvents");
    if (!evs || evs->type != HP_JSON_ARRAY) st = hp_errorf("%s: no array 'traceEvents' (not a Chrome trace)", path);
    const hp_json *od = hp_json_get(root, "otherData");
    if (!st && od) {
        long rank = 0, dropped = 0;
        st = hp_rep_json_int(&rank, od, "rank", 0, HP_REP_MAX_RANKS - 1, 0, path, "otherData");
        if (!st) st = hp_rep_json_int(&dropped, od, "dropped_events", 0, (long)HP_REP_MAX_INT, 0, path, "otherData");
        out->rank = (int)rank, out->dropped = dropped;
    }
    if (!st) st = read_events(out, evs, path);
    hp_json_free(root);
    if (st) {
        hp_rep_trace_free(out);
        return st;
    }
    cut_steps(out);
    return HP_OK;
}

void hp_rep_trace_free(hp_rep_trace *t) {
    free(t->ev);
    memset(t, 0, sizeof *t);
}

/* ---- interval arithmetic over the events of a step range ---- */

typedef struct {
    double a, b;
} span;

static int by_a(const void *x, const void *y) {
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : 0;
}

/* The union of s[n] (sorted here), merged in place; returns the count. */
static int merge(span *s, int n) {
    qsort(s, (size_t)n, sizeof *s, by_a);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && s[i].a <= s[m - 1].b) {
            if (s[i].b > s[m - 1].b) s[m - 1].b = s[i].b;
        } else {
            s[m++] = s[i];
        }
    }
    return m;
}

static double total(const span *s, int n) {
    double t = 0;
    for (int i = 0; i < n; i++) t += s[i].b - s[i].a;
    return t;
}

/* The measure of the intersection of two unions. */
static double overlap(const span *x, int nx, const span *y, int ny) {
    double t = 0;
    for (int i = 0, j = 0; i < nx && j < ny;) {
        double a = x[i].a > y[j].a ? x[i].a : y[j].a, b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (b > a) t += b - a;
        if (x[i].b < y[j].b) i++;
        else j++;
    }
    return t;
}

static int collect(span *out, const hp_rep_trace *t, int step, int kmask) {
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].step == step && (kmask >> t->ev[i].kind & 1)) out[n++] = (span){t->ev[i].t0, t->ev[i].t1};
    return n;
}

hp_status hp_rep_trace_split(hp_rep_split *out, const hp_rep_trace *t, int from, int to) {
    memset(out, 0, sizeof *out);
    if (from < 0) from = 0;
    if (to >= t->nsteps) to = t->nsteps - 1;
    if (t->n == 0 || from > to) return HP_OK;
    span *k = malloc(sizeof *k * (size_t)t->n), *c = malloc(sizeof *c * (size_t)t->n), *all = malloc(sizeof *all * (size_t)t->n);
    span *o = malloc(sizeof *o * (size_t)t->n);
    hp_status st = k && c && all && o ? HP_OK : hp_errorf("report: out of memory splitting a trace");
    for (int s = from; !st && s <= to; s++) {
        int nk = merge(k, collect(k, t, s, 1 << HP_REP_FWD | 1 << HP_REP_BWD | 1 << HP_REP_OPT));
        int nfb = merge(o, collect(o, t, s, 1 << HP_REP_FWD | 1 << HP_REP_BWD));
        out->compute += total(o, nfb);
        int nopt = merge(o, collect(o, t, s, 1 << HP_REP_OPT));
        out->optimizer += total(o, nopt);
        int nc = merge(c, collect(c, t, s, 1 << HP_REP_COMM));
        out->comm += total(c, nc);
        out->hidden += overlap(c, nc, k, nk);
        int na = merge(all, collect(all, t, s, 0xf));
        if (na) {
            double sp = all[na - 1].b - all[0].a;
            out->span += sp;
            out->other += sp - total(all, na);
        }
    }
    free(k), free(c), free(all), free(o);
    return st;
}

int hp_rep_trace_range(double *t0, double *t1, const hp_rep_trace *t, int from, int to) {
    int any = 0;
    for (int i = 0; i < t->n; i++) {
        const hp_rep_event *e = &t->ev[i];
        if (e->step < from || e->step > to) continue;
        if (!any || e->t0 < *t0) *t0 = e->t0;
        if (!any || e->t1 > *t1) *t1 = e->t1;
        any = 1;
    }
    return any;
}
