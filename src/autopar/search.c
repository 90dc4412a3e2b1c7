/* autopar/search: the strategy search's enumeration and ranking (see the
 * header for the space and the method). */
#include "autopar/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/pp_sched.h"

const char *hp_dp_form_name(hp_dp_form f) {
    static const char *n[] = {"replicated", "zero-1", "zero-2", "fsdp", "hsdp"};
    return f < HP_DPF_N ? n[f] : "?";
}

int hp_search_cand_flags(char *buf, size_t n, const hp_search_cand *c, int with_plan) {
    size_t u = 0;
#define ADD(...)                                                                                                   \
    do {                                                                                                           \
        int w_ = snprintf(buf ? buf + (u < n ? u : n) : NULL, u < n ? n - u : 0, __VA_ARGS__);                   \
        if (w_ > 0) u += (size_t)w_;                                                                               \
    } while (0)
    ADD("--batch %d", c->batch);
    if (with_plan) { /* what a plan file says */
        if (c->pp > 1) ADD(" --pp %d", c->pp);
        if (c->form == HP_DPF_FSDP) ADD(" --fsdp %d", c->dp);
        else if (c->form == HP_DPF_HSDP) ADD(" --hsdp %d,%d", c->dp / c->shard, c->shard);
        else if (c->dp > 1) ADD(" --dp %d", c->dp);
        if (c->form == HP_DPF_ZERO1 || c->form == HP_DPF_ZERO2) ADD(" --zero %d", c->form == HP_DPF_ZERO1 ? 1 : 2);
        if (c->ep > 1) ADD(" --ep %d", c->ep);
        if (c->tp > 1) ADD(" --tp %d", c->tp);
    }
    if (c->micro > 1) ADD(" --grad-accum %d", c->micro);
    if (c->comm_last) ADD(" --grad-accum-comm last");
    if (c->pp > 1) ADD(" --pp-schedule %s", hp_pp_kind_name((hp_pp_kind)c->sched));
    if (c->remat) ADD(" --remat %s", c->remat == 1 ? "selective" : "full");
    if (c->bf16) ADD(" --dtype bf16");
#undef ADD
    return (int)u;
}

typedef struct {
    const hp_search_space *s;
    hp_search_eval_fn fn;
    void *ctx;
    hp_search_result *r;
    int cap;
} run;

static hp_status keep(run *x, const hp_search_cand *c, const hp_search_eval *e) {
    hp_search_result *r = x->r;
    if (r->nrows == x->cap) {
        int cap = x->cap ? 2 * x->cap : 64;
        hp_search_row *n = realloc(r->rows, sizeof *n * (size_t)cap);
        if (!n) return hp_errorf("hp_search_run: out of memory");
        r->rows = n, x->cap = cap;
    }
    r->rows[r->nrows++] = (hp_search_row){*c, *e};
    r->nok += e->ok;
    return HP_OK;
}

/* Evaluates c and keeps it; *fits: it compiled and fits (a compile error or a refusal counts as not). */
static hp_status eval(run *x, const hp_search_cand *c, int *fits) {
    hp_search_eval e;
    memset(&e, 0, sizeof e);
    HP_TRY(x->fn(&e, c, x->ctx));
    *fits = e.ok;
    return keep(x, c, &e);
}

/* The remat policies from none on, stopping at the first that fits (and the policies after it counted as skipped);
 * *fits: one did. */
static hp_status remats(run *x, hp_search_cand c, int *fits) {
    int last = x->s->skip & HP_SEARCH_NO_REMAT ? 0 : 2;
    *fits = 0;
    for (c.remat = 0; c.remat <= last; c.remat++) {
        HP_TRY(eval(x, &c, fits));
        if (*fits) {
            x->r->nskipped += last - c.remat;
            return HP_OK;
        }
    }
    return HP_OK;
}

/* remats() of c, and with micro-batches under a form that can reduce once at the last, that too. */
static hp_status reductions(run *x, hp_search_cand c, int *fits) {
    c.comm_last = 0;
    HP_TRY(remats(x, c, fits));
    if (c.micro <= 1 || (c.form != HP_DPF_ZERO2 && c.form != HP_DPF_FSDP && c.form != HP_DPF_HSDP)) return HP_OK;
    int f2;
    c.comm_last = 1;
    HP_TRY(remats(x, c, &f2));
    *fits = *fits || f2;
    return HP_OK;
}

/* The micro-batch counts of a candidate and its forms' schedules. */
static hp_status micros(run *x, hp_search_cand c) {
    const hp_search_space *s = x->s;
    int maxm = s->max_micro > 0 ? s->max_micro : 16, per = c.dp * c.ep;
    if (c.pp == 1) { /* the fewest that fit: more only add per-micro-batch work */
        for (int m = 1; m <= maxm; m *= 2) {
            if (s->batch % m || (s->batch / m) % per) continue;
            c.micro = m, c.batch = s->batch / m;
            int fits;
            HP_TRY(reductions(x, c, &fits));
            if (fits) {
                for (int k = 2 * m; k <= maxm; k *= 2) x->r->nskipped += !(s->batch % k) && !((s->batch / k) % per);
                return HP_OK;
            }
        }
        return HP_OK;
    }
    static const int scheds[] = {HP_PP_1F1B, HP_PP_ZBH1, HP_PP_GPIPE};
    for (size_t k = 0; k < sizeof scheds / sizeof scheds[0]; k++) {
        c.sched = scheds[k];
        for (int m = c.pp; m <= maxm; m *= 2) {
            if (s->batch % m || (s->batch / m) % per) continue;
            c.micro = m, c.batch = s->batch / m;
            int fits;
            HP_TRY(reductions(x, c, &fits));
        }
    }
    return HP_OK;
}

static hp_status forms(run *x, hp_search_cand c) {
    const hp_search_space *s = x->s;
    c.form = HP_DPF_REPLICATE, c.shard = 0;
    HP_TRY(micros(x, c));
    if (c.dp == 1 || (s->skip & HP_SEARCH_NO_SHARD)) return HP_OK;
    c.form = HP_DPF_ZERO1;
    HP_TRY(micros(x, c));
    c.form = HP_DPF_ZERO2;
    HP_TRY(micros(x, c));
    c.form = HP_DPF_FSDP, c.shard = c.dp;
    HP_TRY(micros(x, c));
    if (c.ep > 1 || (s->skip & HP_SEARCH_NO_HSDP)) return HP_OK; /* HSDP with EP is not built */
    c.form = HP_DPF_HSDP;
    for (int sh = 2; sh < c.dp; sh++) {
        if (c.dp % sh) continue;
        c.shard = sh;
        HP_TRY(micros(x, c));
    }
    return HP_OK;
}

hp_status hp_search_run(hp_search_result *out, const hp_search_space *s, hp_search_eval_fn fn, void *ctx) {
    memset(out, 0, sizeof *out);
    if (!s || !fn) return hp_errorf("hp_search_run: needs a space and an evaluation");
    if (s->world < 1) return hp_errorf("hp_search_run: world must be >= 1, got %d", s->world);
    if (s->layers < 1 || s->heads < 1 || s->batch < 1)
        return hp_errorf("hp_search_run: layers, heads and batch must be >= 1, got %d, %d, %d", s->layers, s->heads,
                         s->batch);
    int kv = s->kv_heads > 0 ? s->kv_heads : s->heads;
    run x = {.s = s, .fn = fn, .ctx = ctx, .r = out};
    hp_status st = HP_OK;
    for (int pp = 1; !st && pp <= s->world; pp++) {
        if (s->world % pp || pp > s->layers || (pp > 1 && (s->skip & HP_SEARCH_NO_PP))) continue;
        for (int tp = 1; !st && tp <= s->world / pp; tp++) {
            if ((s->world / pp) % tp || s->heads % tp || kv % tp || (tp > 1 && (s->skip & HP_SEARCH_NO_TP))) continue;
            for (int ep = 1; !st && ep <= s->world / (pp * tp); ep++) {
                if ((s->world / (pp * tp)) % ep) continue;
                if (ep > 1 && (!s->experts || s->experts % ep || (s->skip & HP_SEARCH_NO_EP))) continue;
                int dp = s->world / (pp * tp * ep);
                if (s->batch % (dp * ep)) continue; /* every data-parallel rank needs whole sequences */
                out->nmeshes++;
                for (int b = 0; !st && b < 2; b++) {
                    if ((s->skip & HP_SEARCH_DTYPE) ? 0 : b != (s->bf16 != 0)) continue;
                    hp_search_cand c = {.pp = pp, .dp = dp, .ep = ep, .tp = tp, .bf16 = b};
                    st = forms(&x, c);
                }
            }
        }
    }
    if (!st) { /* rank: the priced ones by step time (stable: ties keep the search order), then the rest */
        for (int i = 1; i < out->nrows; i++) {
            hp_search_row r = out->rows[i];
            int j = i;
            while (j > 0 && r.e.ok &&
                   (!out->rows[j - 1].e.ok || out->rows[j - 1].e.step_s > r.e.step_s))
                out->rows[j] = out->rows[j - 1], j--;
            out->rows[j] = r;
        }
    }
    if (st) hp_search_free(out);
    return st;
}

void hp_search_free(hp_search_result *r) {
    free(r->rows);
    memset(r, 0, sizeof *r);
}
