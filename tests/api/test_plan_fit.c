/* tests/api/test_plan_fit: hp_plan_fit_check and the memory check of
 * hp_train_create through <hyperpar/hyperpar.h> alone — the per-process
 * total is the sum of the reported programs of the process's ranks (all
 * rank-threads, or ranks / processes under mpirun); a limit above it fits, one
 * below does not by exactly the difference, and every hint, applied to the
 * config, fits with the bytes it names; the FSDP report's shards tile every
 * unit; hp_train_create refuses a run over its limit before allocating, with
 * the hint, and runs with the check off; hp_memory_available finds the
 * machine's. */
#include <hyperpar/hyperpar.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"

static void config(hp_plan_report_config *c, const hp_shard_plan *p) {
    hp_plan_report_config_default(c);
    c->model = (hp_model_config){.layers = 2, .heads = 4, .channels = 128, .vocab = 256, .max_seq = 128};
    c->batch = 16, c->seq = 128;
    c->threads = 2;
    c->plan = p;
}

/* The programs of ranks [first, first + n) as hp_plan_report_create reports them. */
static double report_sum(const hp_plan_report_config *c0, int first, int n) {
    hp_plan_report_config c = *c0;
    c.all_ranks = 1;
    hp_plan_report *r = NULL;
    double sum = 0;
    if (!OK(hp_plan_report_create(&r, &c))) return -1;
    for (int i = first; i < first + n && i < r->nreported; i++) sum += r->ranks[i].memory.total;
    /* the FSDP shards tile each unit: members' [begin, end) one after the other */
    for (int u = 0; u < r->ranks[0].fsdp.nunits; u++) {
        int64_t at = 0;
        for (int i = 0; i < r->nreported; i++) {
            const hp_plan_fsdp_unit *x = &r->ranks[i].fsdp.units[u];
            CHECK(x->begin == at && x->end == at + x->shard && x->size == x->shard * r->ranks[i].fsdp.members);
            at = x->end;
        }
        CHECK(at == r->ranks[0].fsdp.units[u].size);
    }
    hp_plan_report_free(r);
    return sum;
}

/* c with hint h applied (the flags hp_plan_fit_hint names); 0 when a flag is not understood. */
static int apply(hp_plan_report_config *c, hp_shard_plan **zero3, const hp_plan_fit_hint *h) {
    if (h->processes) c->processes = h->processes;
    const char *s = h->flags;
    while (*s) {
        int a, b, used = 0;
        if (sscanf(s, "--batch %d --grad-accum %d%n", &a, &b, &used) == 2) {
            c->batch = a, c->grad_accum = b;
        } else if (sscanf(s, "--seq %d%n", &a, &used) == 1) {
            c->seq = a;
        } else if (!strncmp(s, "--zero 3", 8)) {
            used = 8;
            if (!OK(hp_shard_plan_gpt2(zero3, 4, 1)) || !OK(hp_shard_plan_set_fsdp(*zero3, "shard=dp level=3"))) return 0;
            c->plan = *zero3;
        } else {
            fprintf(stderr, "unknown hint flags '%s'\n", s);
            return 0;
        }
        s += used;
        while (*s == ' ') s++;
    }
    return 1;
}

static void check_hints(const hp_plan_report_config *c0, double limit) {
    hp_plan_fit f;
    if (!OK(hp_plan_fit_check(&f, c0, limit))) return;
    CHECK(!f.fits && f.available == limit && !strcmp(f.source, "given"));
    CHECK(fabs(f.short_by - (f.needed - limit)) < 1);
    CHECK(f.nhints > 0 && !f.closest && !strncmp(f.hint, "to fit: ", 8) && !strchr(f.hint, '\n'));
    for (int i = 0; i < f.nhints; i++) {
        const hp_plan_fit_hint *h = &f.hints[i];
        hp_plan_report_config c = *c0;
        hp_shard_plan *z = NULL;
        hp_plan_fit g;
        CHECK(h->needed <= limit);
        if (apply(&c, &z, h) && OK(hp_plan_fit_check(&g, &c, limit))) {
            if (!g.fits || fabs(g.needed - h->needed) > 1)
                fprintf(stderr, "hint %d '%s' (processes %d): %g bytes, planned %g\n", i, h->flags, h->processes,
                        h->needed, g.needed);
            CHECK(g.fits && fabs(g.needed - h->needed) < 1);
        }
        hp_shard_plan_free(z);
    }
}

static void test_fit(void) {
    hp_shard_plan *p = NULL, *dp = NULL;
    if (!OK(hp_shard_plan_gpt2(&p, 4, 1)) || !OK(hp_shard_plan_set_fsdp(p, "shard=dp level=3"))) goto out;
    hp_plan_report_config c;
    config(&c, p);
    /* one process: the four rank-threads' programs */
    hp_plan_fit f;
    double all = report_sum(&c, 0, 4);
    if (OK(hp_plan_fit_check(&f, &c, 1e12))) {
        CHECK(f.fits && f.ranks_here == 4 && f.first_rank == 0 && f.nhints == 0 && f.hint[0] == 0);
        CHECK(fabs(f.needed - all) < 1 && f.needed > 0);
    }
    /* two processes: rank 3's hosts ranks 2 and 3 */
    c.processes = 2, c.rank = 3;
    double two = report_sum(&c, 2, 2);
    if (OK(hp_plan_fit_check(&f, &c, 1e12))) CHECK(f.ranks_here == 2 && f.first_rank == 2 && fabs(f.needed - two) < 1);
    c.processes = 0, c.rank = 0;
    /* below: by exactly the difference, and every hint fits when applied */
    check_hints(&c, 0.6 * all);
    /* data parallelism: ZeRO-3 among the hints */
    if (OK(hp_shard_plan_gpt2(&dp, 4, 1))) {
        config(&c, dp);
        double need = report_sum(&c, 0, 4);
        hp_shard_plan *z = NULL;
        hp_plan_report_config cz = c;
        hp_plan_fit fz;
        if (OK(hp_shard_plan_gpt2(&z, 4, 1)) && OK(hp_shard_plan_set_fsdp(z, "shard=dp level=3"))) {
            cz.plan = z;
            if (OK(hp_plan_fit_check(&fz, &cz, 0))) {
                double limit = (need + fz.needed) / 2; /* ZeRO-3 fits, plain DP does not */
                if (OK(hp_plan_fit_check(&f, &c, limit))) {
                    int zero = 0;
                    for (int i = 0; i < f.nhints; i++) zero |= !strcmp(f.hints[i].flags, "--zero 3");
                    CHECK(zero);
                }
                check_hints(&c, limit);
            }
        }
        hp_shard_plan_free(z);
    }
    /* nothing fits: the closest, said as such */
    config(&c, p);
    if (OK(hp_plan_fit_check(&f, &c, 1000))) CHECK(!f.fits && f.closest && f.nhints == 1 && strstr(f.hint, "nothing tried fits"));
    ERR(hp_plan_fit_check(&f, &c, -1), "limit_bytes");
out:
    hp_shard_plan_free(p);
    hp_shard_plan_free(dp);
}

static int started;
static char fsdp_line[256];
static void on_event(void *ctx, const hp_event *e) {
    (void)ctx;
    if (e->kind != HP_EVENT_START) return;
    started++;
    snprintf(fsdp_line, sizeof fsdp_line, "%s", e->fsdp_summary ? e->fsdp_summary : "(none)");
}

static void test_train(void) {
    hp_model *m = NULL;
    hp_shard_plan *p = NULL;
    hp_model_config mc = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};
    if (!OK(hp_model_gpt2(&m, &mc, 4, 16)) || !OK(hp_shard_plan_gpt2(&p, 2, 1)) ||
        !OK(hp_shard_plan_set_fsdp(p, "shard=dp level=3 prefetch=0")))
        goto out;
    hp_train_config c;
    hp_train_config_default(&c, m);
    c.threads = 2, c.data = TEXT, c.steps = 1, c.val_steps = 0, c.plan = p;
    c.on_event = on_event;
    c.memory_limit_bytes = 1000;
    hp_train *t = NULL;
    ERR(hp_train_create(&t, &c), "does not fit in memory: this process's 2 ranks need ");
    CHECK(t == NULL && started == 0);
    c.memory_limit_bytes = 1000;
    c.plan = NULL;
    ERR(hp_train_create(&t, &c), "1.0 KB available (the limit given): ");
    c.plan = p;
    c.memory_limit_bytes = -1; /* off */
    if (OK(hp_train_create(&t, &c))) {
        OK(hp_train_run(t));
        CHECK(started == 1);
        CHECK(!strcmp(fsdp_line, "level 3 (ZeRO-3), 2 units, shard group dp=2, prefetch 0, reshard on, style hyperpar"));
        if (strcmp(fsdp_line, "level 3 (ZeRO-3), 2 units, shard group dp=2, prefetch 0, reshard on, style hyperpar"))
            fprintf(stderr, "fsdp summary: %s\n", fsdp_line);
    }
    hp_train_free(t);
out:
    hp_shard_plan_free(p);
    hp_model_free(m);
}

int main(void) {
    double avail;
    char src[32];
    hp_memory_available(&avail, src, sizeof src);
    CHECK(avail > 0 && (!strcmp(src, "MemAvailable") || !strcmp(src, "cgroup memory.max")));
    test_fit();
    test_train();
    if (failures) {
        fprintf(stderr, "test_plan_fit: %d checks failed\n", failures);
        return 1;
    }
    printf("test_plan_fit: all checks passed\n");
    return 0;
}
