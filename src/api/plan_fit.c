/* api/plan_fit: whether a run fits in memory — the programs of the ranks
 * one process hosts, compiled (no tensors allocated) and counted as the plan
 * report counts them (hp_plan_gather_memory), against the memory available
 * (a limit given, or MemAvailable and the cgroup's limit); when they do not
 * fit, the changes that would, each measured with the same prediction: more
 * processes (a 1-rank run: FSDP over more ranks, a process each), ZeRO-3, a
 * smaller batch with more micro-batches, a shorter sequence, or a
 * combination of them. Used by `hyperpar plan`
 * (hp_plan_fit_check) and by hp_train_create before anything is allocated
 * (hp_api_train_fit, the trainer's before_alloc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "models/zoo.h"
#include "api/plan_report.h"
#include "api/train.h"
#include "models/gpt2_plan.h"
#include "runtime/dist.h"

void hp_memory_available(double *bytes, char *source, size_t n) {
    double avail = 0;
    const char *src = "unknown";
    char line[256];
    FILE *f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            avail = (double)kb * 1024.0, src = "MemAvailable";
            break;
        }
    }
    if (f) fclose(f);
    f = fopen("/sys/fs/cgroup/memory.max", "r"); /* "max": no limit */
    if (f && fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long v = strtoull(line, &end, 10);
        if (end != line && v > 0 && (avail <= 0 || (double)v < avail)) avail = (double)v, src = "cgroup memory.max";
    }
    if (f) fclose(f);
    *bytes = avail;
    if (source && n) snprintf(source, n, "%s", src);
}

/* ---- one configuration's programs ---- */

typedef struct {
    hp_gpt2_config mc;
    int B, T;
    const hp_plan *plan;  /* NULL: one rank */
    hp_compile_opts co;   /* supernode_ranks: set from processes */
    int processes;        /* the processes the mesh's ranks are spread over (>= 1) */
    int rank;             /* a rank of the process whose programs are summed */
    int threads;          /* the process's compute threads */
} fit_case;

/* The programs of k's process: *bytes. g: k's model graph, or NULL (built here). */
static hp_status case_total(double *bytes, const fit_case *k, const hp_graph *g) {
    *bytes = 0;
    int n = k->plan ? hp_mesh_size(&k->plan->mesh) : 1;
    if (k->processes < 1 || n % k->processes)
        return hp_errorf("fit: %d ranks cannot be spread over %d processes", n, k->processes);
    int per = n / k->processes, first = k->rank / per * per;
    hp_compile_opts co = k->co;
    co.supernode_ranks = k->processes > 1 ? per : 0;
    int threads = k->threads / per > 0 ? k->threads / per : 1; /* as runtime/dist shares them out */
    hp_graph *own = NULL;
    hp_gpt2_io io;
    hp_status st = HP_OK;
    if (!g) {
        st = hp_graph_create(&own);
        if (!st) st = hp_gpt2_build(own, &io, &k->mc, k->B, k->T);
        g = own;
    }
    for (int r = first; !st && r < first + per; r++) {
        hp_compiled cc;
        st = hp_compile(&cc, g, k->plan, r, &co);
        if (st) break;
        hp_plan_memory m;
        hp_plan_gather_memory(&m, &cc, threads);
        *bytes += m.total;
        hp_compiled_free(&cc);
    }
    hp_graph_destroy(own);
    return st;
}

/* ---- the changes that would fit ---- */

typedef struct {
    int zero3, processes, kb, kt; /* ZeRO-3; processes; batch / kb with kb x the micro-batches; seq / kt */
    int fsdp;                     /* a 1-rank run: GPT-2 FSDP over this many ranks, one process each (0: no) */
} change;

typedef struct {
    const fit_case *base;
    hp_plan zero3;       /* the plan at level 3 (when have_zero3) */
    int have_zero3;
    double avail;
    struct {
        change c;
        double bytes; /* < 0: the change does not compile (a batch that does not split) */
    } memo[64];
    int nmemo;
} search;

/* The bytes per process with change c (< 0: not a valid configuration). */
static double measure(search *s, change c) {
    for (int i = 0; i < s->nmemo; i++)
        if (!memcmp(&s->memo[i].c, &c, sizeof c)) return s->memo[i].bytes;
    fit_case k = *s->base;
    if (c.zero3) k.plan = &s->zero3;
    if (c.processes) k.processes = c.processes;
    k.B /= c.kb, k.T /= c.kt;
    k.co.grad_accum = (k.co.grad_accum > 1 ? k.co.grad_accum : 1) * c.kb;
    k.co.accum_comm_last = k.co.accum_comm_last && k.co.grad_accum > 1;
    double b = -1;
    hp_plan fsdp;
    int have_fsdp = 0;
    hp_status st = k.B >= 1 && k.T >= 1 ? HP_OK : hp_errorf("fit: empty batch");
    if (!st && c.fsdp) { /* as `hyperpar train --fsdp N` makes it */
        st = hp_plan_gpt2_dp_tp(&fsdp, c.fsdp, 1);
        have_fsdp = !st;
        if (!st) st = hp_plan_set_fsdp(&fsdp, "shard=dp level=3", "fit");
        k.plan = &fsdp, k.processes = c.fsdp;
    }
    if (!st) st = case_total(&b, &k, NULL);
    if (st) b = -1;
    hp_status_free(st);
    if (have_fsdp) hp_plan_free(&fsdp);
    if (s->nmemo < (int)(sizeof s->memo / sizeof s->memo[0])) s->memo[s->nmemo].c = c, s->memo[s->nmemo++].bytes = b;
    return b;
}

static int fits(const search *s, double b) { return b >= 0 && b <= s->avail; }

/* Along one dimension (*dim in values[0..n)), from c: the first value that
 * fits, else the one needing least; *dim set to it and its bytes returned
 * (< 0 when none is valid; *dim then unchanged). */
static double best_along(search *s, change *c, int *dim, const int *values, int n) {
    double best = -1;
    int keep = *dim, pick = keep;
    for (int i = 0; i < n; i++) {
        *dim = values[i];
        double b = measure(s, *c);
        if (b >= 0 && (best < 0 || b < best)) best = b, pick = values[i];
        if (fits(s, b)) break;
    }
    *dim = best >= 0 ? pick : keep;
    return best;
}

static void add_hint(hp_plan_fit *f, const search *s, change c, double bytes) {
    if (f->nhints == HP_PLAN_FIT_HINTS) return;
    hp_plan_fit_hint *h = &f->hints[f->nhints++];
    const fit_case *b = s->base;
    size_t u = 0;
    h->processes = c.fsdp ? c.fsdp : c.processes;
    h->needed = bytes;
    h->flags[0] = 0;
    if (c.zero3) u += (size_t)snprintf(h->flags + u, sizeof h->flags - u, "--zero 3");
    if (c.fsdp) u += (size_t)snprintf(h->flags + u, sizeof h->flags - u, "--fsdp %d", c.fsdp);
    if (c.kb > 1 && u < sizeof h->flags)
        u += (size_t)snprintf(h->flags + u, sizeof h->flags - u, "%s--batch %d --grad-accum %d", u ? " " : "",
                              b->B / c.kb, (b->co.grad_accum > 1 ? b->co.grad_accum : 1) * c.kb);
    if (c.kt > 1 && u < sizeof h->flags)
        snprintf(h->flags + u, sizeof h->flags - u, "%s--seq %d", u ? " " : "", b->T / c.kt);
}

/* The hints as one line into f->hint. */
static void hint_line(hp_plan_fit *f) {
    size_t u = (size_t)snprintf(f->hint, sizeof f->hint, "%s", f->closest ? "nothing tried fits; the closest: " : "to fit: ");
    for (int i = 0; i < f->nhints && u < sizeof f->hint; i++) {
        const hp_plan_fit_hint *h = &f->hints[i];
        char bb[32];
        hp_api_bytes_str(bb, sizeof bb, h->needed);
        const char *sep = i ? "; " : "";
        if (h->processes)
            u += (size_t)snprintf(f->hint + u, sizeof f->hint - u,
                                  "%smpirun -np %d, one process a machine%s%s (%s a process; plan: --processes %d%s%s)",
                                  sep, h->processes, h->flags[0] ? ", with " : "", h->flags, bb, h->processes,
                                  h->flags[0] ? " " : "", h->flags);
        else
            u += (size_t)snprintf(f->hint + u, sizeof f->hint - u, "%s%s (%s)", sep, h->flags, bb);
    }
}

/* Fills f's hints for base (which does not fit in avail bytes). */
static void find_hints(hp_plan_fit *f, const fit_case *base, double avail) {
    search *s = calloc(1, sizeof *s);
    if (!s) return;
    s->base = base, s->avail = avail;
    const hp_plan *p = base->plan;
    int dp = p ? hp_mesh_axis(&p->mesh, "dp") : -1;
    if (p && (p->fsdp.level == 1 || p->fsdp.level == 2 || (!p->fsdp.level && dp >= 0 && p->mesh.size[dp] > 1))) {
        size_t n = hp_plan_str_size(p);
        char *text = malloc(n);
        if (text && !hp_plan_parse(&s->zero3, hp_plan_str(text, n, p), "fit")) {
            s->have_zero3 = 1;
            if (s->zero3.fsdp.level) {
                s->zero3.fsdp.level = 3;
            } else {
                hp_status st = hp_plan_set_fsdp(&s->zero3, "shard=dp level=3", "fit");
                if (st) hp_plan_free(&s->zero3), s->have_zero3 = 0;
                hp_status_free(st);
            }
        }
        free(text);
    }
    int n = p ? hp_mesh_size(&p->mesh) : 1, procs[64], np = 0, bs[32], nb = 0, ts[32], nt = 0, fs[32], nf = 0;
    for (int q = base->processes + 1; q <= n && np < 64; q++)
        if (n % q == 0) procs[np++] = q;
    /* one rank: more ranks, FSDP over processes of one rank each */
    for (int k = 2; n == 1 && k <= base->B && nf < 32; k *= 2) fs[nf++] = k;
    for (int k = 2; !base->co.deterministic && k <= base->B && base->B % k == 0 && nb < 32; k *= 2) bs[nb++] = k;
    for (int k = 2; k <= base->T && nt < 32; k *= 2) ts[nt++] = k;
    /* each change alone: the least of it that fits */
    const change none = {0, 0, 1, 1, 0};
    change c = none;
    if (s->have_zero3) {
        c.zero3 = 1;
        double b = measure(s, c);
        if (fits(s, b)) add_hint(f, s, c, b);
        c = none;
    }
    double b;
    if (fits(s, b = best_along(s, &c, &c.processes, procs, np))) add_hint(f, s, c, b);
    c = none;
    if (fits(s, b = best_along(s, &c, &c.fsdp, fs, nf))) add_hint(f, s, c, b);
    c = none;
    if (fits(s, b = best_along(s, &c, &c.kb, bs, nb))) add_hint(f, s, c, b);
    c = none;
    if (fits(s, b = best_along(s, &c, &c.kt, ts, nt))) add_hint(f, s, c, b);
    if (!f->nhints) {
        /* none alone: ZeRO-3 where it helps, then processes, batch and seq, each the least that fits */
        c = none;
        double at = measure(s, c);
        if (s->have_zero3) {
            change z = c;
            z.zero3 = 1;
            double bz = measure(s, z);
            if (bz >= 0 && (at < 0 || bz < at)) c = z, at = bz;
        }
        int *dims[3] = {nf ? &c.fsdp : &c.processes, &c.kb, &c.kt}, *vals[3] = {nf ? fs : procs, bs, ts};
        int nv[3] = {nf ? nf : np, nb, nt};
        for (int d = 0; d < 3 && !fits(s, at); d++) {
            int was = *dims[d];
            double bd = best_along(s, &c, dims[d], vals[d], nv[d]);
            if (bd >= 0 && (at < 0 || bd <= at)) at = bd;
            else *dims[d] = was; /* no better along it */
        }
        if (at >= 0 && memcmp(&c, &none, sizeof c)) {
            f->closest = !fits(s, at);
            add_hint(f, s, c, at);
        }
    }
    hint_line(f);
    if (s->have_zero3) hp_plan_free(&s->zero3);
    free(s);
}

/* ---- the verdict ---- */

static void verdict(hp_plan_fit *f, double limit) {
    if (limit > 0) {
        f->available = limit;
        snprintf(f->source, sizeof f->source, "given");
    } else {
        hp_memory_available(&f->available, f->source, sizeof f->source);
    }
    f->fits = f->available <= 0 || f->needed <= f->available;
    f->short_by = f->fits ? 0 : f->needed - f->available;
}

hp_status hp_plan_fit_check(hp_plan_fit *out, const hp_plan_report_config *c, double limit_bytes) {
    memset(out, 0, sizeof *out);
    if (!c) return hp_errorf("hp_plan_fit_check: config is NULL");
    if (!(limit_bytes >= 0)) return hp_errorf("hp_plan_fit_check: limit_bytes must be >= 0, got %g", limit_bytes);
    hp_api_plan_setup *s = malloc(sizeof *s);
    if (!s) return hp_errorf("hp_plan_fit_check: out of memory");
    hp_status st = hp_api_plan_setup_init(s, c);
    if (st) {
        free(s);
        return st;
    }
    const hp_plan *plan = &c->plan->plan;
    int n = hp_mesh_size(&plan->mesh), procs = c->processes > 1 ? c->processes : 1;
    fit_case k = {.mc = s->mc, .B = c->batch, .T = c->seq, .plan = plan, .co = s->co, .processes = procs,
                  .rank = c->rank, .threads = c->threads};
    out->ranks_here = n / procs, out->first_rank = c->rank / out->ranks_here * out->ranks_here;
    const hp_model_family *fam = hp_model_family_named(c->model_kind); /* NULL: GPT-2 */
    int named = fam != NULL;
    hp_graph *g = NULL;
    if (fam) { /* a named family's graph (the hints below rebuild GPT-2: none for it) */
        st = hp_graph_create(&g);
        if (!st) st = fam->build(g, &c->model, c->batch, c->seq);
    }
    if (!st) st = case_total(&out->needed, &k, g);
    if (!st) verdict(out, limit_bytes);
    if (!st && !out->fits && !named) find_hints(out, &k, out->available);
    hp_graph_destroy(g);
    free(s);
    return st;
}

hp_status hp_api_hosted_need(double *need, int *transient, const hp_graph *g, const hp_plan *plan,
                             const hp_compile_opts *c, int first, int count, int threads_per_rank) {
    *need = 0, *transient = 0;
    for (int r = first; r < first + count; r++) {
        hp_compiled cc;
        HP_TRY(hp_compile(&cc, g, plan, r, c));
        hp_plan_memory m;
        hp_plan_gather_memory(&m, &cc, threads_per_rank);
        *need += m.total;
        *transient |= cc.fsdp.transient;
        hp_compiled_free(&cc);
    }
    return HP_OK;
}

hp_status hp_api_fsdp_keep_auto(int64_t *out, const hp_graph *g, const hp_plan *plan, const hp_compile_opts *co,
                                int first, int count, int threads_per_rank, double budget) {
    hp_compile_opts c = *co;
    *out = 0;
    double need;
    int transient;
    c.fsdp_keep_auto = 0;
    HP_TRY(hp_api_hosted_need(&need, &transient, g, plan, &c, first, count, threads_per_rank));
    if (!transient || budget <= 0 || need >= budget) return HP_OK;
    int64_t lo = 0, hi = 0; /* fits at lo; hi: every parameter's bytes (all units kept) */
    for (int k = 0; k < g->nvals; k++)
        if (g->vals[k].kind == HP_V_PARAM) hi += hp_shape_numel(&g->vals[k].shape) * (int64_t)sizeof(float);
    c.fsdp_keep_auto = hi;
    HP_TRY(hp_api_hosted_need(&need, &transient, g, plan, &c, first, count, threads_per_rank));
    if (need <= budget) {
        *out = hi;
        return HP_OK;
    }
    int64_t step = hi / 256 > 65536 ? hi / 256 : 65536; /* the resolution: 1/256 of the model or 64 KiB */
    for (int it = 0; it < 12 && hi - lo > step; it++) {
        int64_t mid = lo + (hi - lo) / 2;
        c.fsdp_keep_auto = mid;
        HP_TRY(hp_api_hosted_need(&need, &transient, g, plan, &c, first, count, threads_per_rank));
        if (need <= budget) lo = mid;
        else hi = mid;
    }
    *out = lo;
    return HP_OK;
}

hp_status hp_api_train_fit(void *ctx, hp_comm_world *world, hp_compile_opts *co, int threads_per_rank) {
    hp_train *t = ctx;
    double limit = t->cfg.memory_limit_bytes;
    const hp_plan *plan = t->cfg.plan ? &t->cfg.plan->plan : NULL;
    /* a world that does not fit the mesh: runtime/dist's error says so */
    if (hp_comm_world_size(world) != (plan ? hp_mesh_size(&plan->mesh) : 1)) return HP_OK;
    int first, count;
    hp_comm_hosted_ranks(world, &first, &count);
    hp_compile_opts c = *co;
    c.supernode_ranks = hp_comm_supernodes(world) > 1 ? hp_comm_ranks_per_supernode(world) : 0; /* as dist sets it */
    if (plan && plan->fsdp.level > 0 && plan->fsdp.keep_bytes == HP_FSDP_KEEP_AUTO) {
        double budget = limit > 0 ? limit : 0;
        char src[64];
        if (!(budget > 0)) hp_memory_available(&budget, src, sizeof src), budget *= 0.9;
        HP_TRY(hp_api_fsdp_keep_auto(&co->fsdp_keep_auto, t->m->g, plan, &c, first, count, threads_per_rank, budget));
        c.fsdp_keep_auto = co->fsdp_keep_auto;
    }
    if (limit < 0) return HP_OK;
    hp_plan_fit *f = calloc(1, sizeof *f);
    if (!f) return hp_errorf("hp_train_create: out of memory");
    f->first_rank = first, f->ranks_here = count;
    int transient;
    hp_status st = hp_api_hosted_need(&f->needed, &transient, t->m->g, plan, &c, first, count, threads_per_rank);
    if (!st) verdict(f, limit);
    if (!st && !f->fits) {
        int n = plan ? hp_mesh_size(&plan->mesh) : 1;
        fit_case k = {.mc = t->m->cfg, .B = t->m->B, .T = t->m->T, .plan = plan, .co = *co,
                      .processes = count > 0 && n % count == 0 ? n / count : 1, .rank = first,
                      .threads = t->cfg.threads};
        if (!t->m->custom) find_hints(f, &k, f->available); /* the hints rebuild GPT-2 */
        char need[32], avail[32], short_by[32];
        st = hp_errorf("does not fit in memory: this process's %d %s %s, %s available (%s): %s short, nothing "
                       "allocated; %s",
                       count, count == 1 ? "rank needs" : "ranks need", hp_api_bytes_str(need, sizeof need, f->needed),
                       hp_api_bytes_str(avail, sizeof avail, f->available),
                       !strcmp(f->source, "given") ? "the limit given" : f->source,
                       hp_api_bytes_str(short_by, sizeof short_by, f->short_by),
                       f->hint[0] ? f->hint : "no change tried makes it fit");
    }
    free(f);
    return st;
}
