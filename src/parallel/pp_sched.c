/* parallel/pp_sched: pipeline schedules as data (see the header). */
#include "parallel/pp_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hp_pp_kind_name(hp_pp_kind k) {
    static const char *const names[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    return k >= 0 && k < HP_PP_NKINDS ? names[k] : "?";
}

hp_status hp_pp_kind_parse(hp_pp_kind *out, const char *name) {
    for (int k = 0; k < HP_PP_NKINDS; k++)
        if (name && !strcmp(name, hp_pp_kind_name((hp_pp_kind)k))) {
            *out = (hp_pp_kind)k;
            return HP_OK;
        }
    return hp_errorf("schedule: unknown pipeline schedule '%s' (gpipe, 1f1b, interleaved, zb-h1)", name ? name : "");
}

void hp_pp_sched_free(hp_pp_sched *s) {
    free(s->act), free(s->at), free(s->warmup);
    memset(s, 0, sizeof *s);
}

static void put(hp_pp_sched *s, int *n, hp_action_kind k, int micro, int chunk) {
    s->act[(*n)++] = (hp_action){k, micro, chunk};
}

/* Interleaved 1F1B's k-th forward (back 0) or backward (back 1) of a stage: its chunk and micro-batch. */
static void interleaved_at(int *chunk, int *micro, const hp_pp_sched *s, int k, int back) {
    int p = s->stages, v = s->chunks, in = k % (p * v);
    *chunk = back ? v - 1 - in / p : in / p;
    *micro = k / (p * v) * p + k % p;
}

/* Stage r's 1F1B-shaped list: w warm-up forwards, the forward/backward pairs, the cool-down backwards
 * (zb: input-gradient parts). */
static void one_f_one_b(hp_pp_sched *s, int *n, int w, int zb) {
    int total = s->micro * s->chunks, nf = 0, nb = 0;
    int inter = s->kind == HP_PP_INTERLEAVED;
    for (; nf < w; nf++) {
        int c = 0, b = nf;
        if (inter) interleaved_at(&c, &b, s, nf, 0);
        put(s, n, HP_ACT_FWD, b, c);
    }
    while (nb < total) {
        if (nf < total) {
            int c = 0, b = nf;
            if (inter) interleaved_at(&c, &b, s, nf, 0);
            put(s, n, HP_ACT_FWD, b, c), nf++;
        }
        int c = 0, b = nb;
        if (inter) interleaved_at(&c, &b, s, nb, 1);
        put(s, n, zb ? HP_ACT_BWD_INPUT : HP_ACT_BWD, b, c), nb++;
    }
}

/* ZB-H1: every stage's 1F1B order of forwards and input-gradient parts (B), run as soon as it can in a
 * simulation with unit costs, the weight-gradient parts (W, owed in micro-batch order) put where the stage would
 * otherwise wait, and before a forward that would hold more than 1F1B's p - r micro-batches (a micro-batch's
 * activations are held to its W); the Ws still owed at the end. out->act holds the 1F1B orders, 3 m slots per
 * stage (the first 2 m used); they become the lists. */
static hp_status zb_h1(hp_pp_sched *s) {
    int p = s->stages, m = s->micro, per = 3 * m;
    hp_action *seq = malloc(sizeof *seq * (size_t)p * (size_t)per);
    double *endf = malloc(sizeof(double) * (size_t)p * (size_t)m), *endb = malloc(sizeof(double) * (size_t)p * (size_t)m);
    double *free_at = calloc((size_t)p, sizeof(double));
    int *ptr = calloc((size_t)p, sizeof(int)), *held = calloc((size_t)p, sizeof(int)), *wlo = calloc((size_t)p, sizeof(int));
    int *whi = calloc((size_t)p, sizeof(int)), *cnt = calloc((size_t)p, sizeof(int));
    if (!seq || !endf || !endb || !free_at || !ptr || !held || !wlo || !whi || !cnt) {
        free(seq), free(endf), free(endb), free(free_at), free(ptr), free(held), free(wlo), free(whi), free(cnt);
        return hp_errorf("pipeline schedule: out of memory");
    }
    memcpy(seq, s->act, sizeof *seq * (size_t)p * (size_t)per);
    for (int i = 0; i < p * m; i++) endf[i] = endb[i] = -1;
    for (int left = 3 * m * p; left > 0; left--) {
        int best = -1, bk = 0;
        double bt = 0;
        for (int r = 0; r < p; r++) { /* each stage's next action and when it could start; the earliest wins */
            int k = -1;
            double t = 0;
            if (ptr[r] < 2 * m) {
                const hp_action *a = &seq[(size_t)r * (size_t)per + (size_t)ptr[r]];
                double in = a->kind == HP_ACT_FWD ? (r > 0 ? endf[(r - 1) * m + a->micro] : 0)
                                                  : (r < p - 1 ? endb[(r + 1) * m + a->micro] : endf[r * m + a->micro]);
                if (a->kind != HP_ACT_FWD && endf[r * m + a->micro] < 0) in = -1;
                int full = a->kind == HP_ACT_FWD && held[r] >= p - r;
                if (in >= 0 && !full) k = 0, t = in > free_at[r] ? in : free_at[r];
            }
            if (wlo[r] < whi[r] && (k < 0 || t > free_at[r])) k = 1, t = free_at[r]; /* a W instead of waiting */
            if (k >= 0 && (best < 0 || t < bt)) best = r, bk = k, bt = t;
        }
        if (best < 0) break; /* cannot happen for these orders; the check would say */
        hp_action *a = &s->act[(size_t)best * (size_t)per + (size_t)cnt[best]++];
        if (bk) {
            *a = (hp_action){HP_ACT_BWD_WEIGHT, wlo[best]++, 0};
            held[best]--;
        } else {
            *a = seq[(size_t)best * (size_t)per + (size_t)ptr[best]++];
            if (a->kind == HP_ACT_FWD) endf[best * m + a->micro] = bt + 1, held[best]++;
            else endb[best * m + a->micro] = bt + 1, whi[best]++;
        }
        free_at[best] = bt + 1;
    }
    free(seq), free(endf), free(endb), free(free_at), free(ptr), free(held), free(wlo), free(whi), free(cnt);
    return HP_OK;
}

hp_status hp_pp_sched_build(hp_pp_sched *out, hp_pp_kind kind, int p, int v, int m) {
    memset(out, 0, sizeof *out);
    if (kind < 0 || kind >= HP_PP_NKINDS) return hp_errorf("schedule: unknown pipeline schedule %d", (int)kind);
    if (p < 1 || p > 4096) return hp_errorf("pp: the stages must be in 1..4096, got %d", p);
    if (m < 1 || m > 65536) return hp_errorf("micro_batches: must be in 1..65536, got %d", m);
    if (kind == HP_PP_INTERLEAVED) {
        if (v < 2 || v > 64) return hp_errorf("pp_chunks: the interleaved schedule needs 2..64 chunks per stage, got %d", v);
        if (m % p) return hp_errorf("micro_batches: the interleaved schedule needs a multiple of the %d stages, got %d", p, m);
    } else if (v != 1) {
        return hp_errorf("pp_chunks: the %s schedule runs one chunk per stage, got %d", hp_pp_kind_name(kind), v);
    }
    int zb = kind == HP_PP_ZBH1, per = m * v * (zb ? 3 : 2);
    out->kind = kind, out->stages = p, out->chunks = v, out->micro = m;
    out->act = malloc(sizeof *out->act * (size_t)p * (size_t)per);
    out->at = malloc(sizeof *out->at * (size_t)(p + 1));
    out->warmup = malloc(sizeof *out->warmup * (size_t)p);
    if (!out->act || !out->at || !out->warmup) {
        hp_pp_sched_free(out);
        return hp_errorf("pipeline schedule: out of memory");
    }
    int n = 0;
    for (int r = 0; r < p; r++) {
        if (zb) n = r * per; /* zb_h1 fills each stage's 3 m slots */
        out->at[r] = n;
        if (kind == HP_PP_GPIPE) {
            out->warmup[r] = m;
            for (int b = 0; b < m; b++) put(out, &n, HP_ACT_FWD, b, 0);
            for (int b = 0; b < m; b++) put(out, &n, HP_ACT_BWD, b, 0);
            continue;
        }
        int w = kind == HP_PP_INTERLEAVED ? (p - r - 1) * 2 + (v - 1) * p : p - r - 1;
        if (w > m * v) w = m * v;
        out->warmup[r] = w;
        one_f_one_b(out, &n, w, zb);
    }
    out->at[p] = zb ? p * per : n;
    hp_status st = zb ? zb_h1(out) : HP_OK;
    if (st) hp_pp_sched_free(out);
    return st;
}

/* ---- simulation ---- */

typedef struct {
    double *fwd, *bwd, *wgt; /* [vstages x micro]: end times, < 0: not yet */
} ends;

static double *end_of(const ends *e, const hp_pp_sched *s, hp_action_kind k, int j, int b) {
    size_t i = (size_t)j * (size_t)s->micro + (size_t)b;
    return k == HP_ACT_FWD ? &e->fwd[i] : k == HP_ACT_BWD_WEIGHT ? &e->wgt[i] : &e->bwd[i];
}

/* When the inputs of action a (stage r) are there; < 0: not yet. */
static double ready(const ends *e, const hp_pp_sched *s, int r, const hp_action *a) {
    int j = hp_pp_vstage(s, r, a->chunk), V = s->stages * s->chunks;
    double t = 0;
    if (a->kind == HP_ACT_FWD) {
        if (j > 0) t = *end_of(e, s, HP_ACT_FWD, j - 1, a->micro);
        return t;
    }
    if (a->kind == HP_ACT_BWD_WEIGHT) return *end_of(e, s, HP_ACT_BWD_INPUT, j, a->micro);
    t = *end_of(e, s, HP_ACT_FWD, j, a->micro);
    if (t >= 0 && j < V - 1) {
        double g = *end_of(e, s, HP_ACT_BWD, j + 1, a->micro);
        t = g < 0 ? -1 : (g > t ? g : t);
    }
    return t;
}

static const char *kind_word(hp_action_kind k) {
    return k == HP_ACT_FWD ? "forward" : k == HP_ACT_BWD ? "backward" : k == HP_ACT_BWD_INPUT ? "input gradient"
                                                                                               : "weight gradient";
}

void hp_pp_sim_free(hp_pp_sim *sim) {
    free(sim->idle), free(sim->start), free(sim->peak);
    memset(sim, 0, sizeof *sim);
}

hp_status hp_pp_sched_simulate(hp_pp_sim *out, const hp_pp_sched *s, double tf, double tb, double tbi, double tbw) {
    memset(out, 0, sizeof *out);
    int p = s->stages, V = p * s->chunks, total = s->at[p];
    size_t cells = (size_t)V * (size_t)s->micro;
    ends e = {malloc(sizeof(double) * cells), malloc(sizeof(double) * cells), malloc(sizeof(double) * cells)};
    double *free_at = calloc((size_t)p, sizeof(double)), *busy = calloc((size_t)p, sizeof(double));
    int *next = calloc((size_t)p, sizeof(int));
    out->idle = calloc((size_t)p, sizeof(double));
    out->start = malloc(sizeof(double) * (size_t)(total ? total : 1));
    out->peak = calloc((size_t)p, sizeof(int));
    hp_status st = HP_OK;
    if (!e.fwd || !e.bwd || !e.wgt || !free_at || !busy || !next || !out->idle || !out->start || !out->peak) {
        st = hp_errorf("pipeline schedule: out of memory");
        goto done;
    }
    for (size_t i = 0; i < cells; i++) e.fwd[i] = e.bwd[i] = e.wgt[i] = -1;
    int left = total;
    while (left > 0) {
        int moved = 0;
        for (int r = 0; r < p; r++) {
            while (s->at[r] + next[r] < s->at[r + 1]) {
                int i = s->at[r] + next[r];
                const hp_action *a = &s->act[i];
                double t = ready(&e, s, r, a);
                if (t < 0) break;
                double d = a->kind == HP_ACT_FWD ? tf : a->kind == HP_ACT_BWD ? tb : a->kind == HP_ACT_BWD_INPUT ? tbi : tbw;
                double t0 = t > free_at[r] ? t : free_at[r];
                out->start[i] = t0, free_at[r] = t0 + d, busy[r] += d;
                *end_of(&e, s, a->kind, hp_pp_vstage(s, r, a->chunk), a->micro) = t0 + d;
                next[r]++, left--, moved = 1;
            }
        }
        if (!moved) {
            for (int r = 0; r < p && !st; r++)
                if (s->at[r] + next[r] < s->at[r + 1]) {
                    const hp_action *a = &s->act[s->at[r] + next[r]];
                    st = hp_errorf("pipeline schedule %s: stage %d's %s of micro-batch %d (chunk %d) waits for an "
                                   "input that never comes",
                                   hp_pp_kind_name(s->kind), r, kind_word(a->kind), a->micro, a->chunk);
                }
            goto done;
        }
    }
    double len = 0;
    for (int r = 0; r < p; r++) len = free_at[r] > len ? free_at[r] : len;
    out->length = len;
    double idle = 0;
    for (int r = 0; r < p; r++) out->idle[r] = len > 0 ? (len - busy[r]) / len : 0, idle += len - busy[r];
    out->bubble = len > 0 ? idle / (len * p) : 0;
    /* activations held: from a forward's start to its backward's end (a split backward: its W's end) */
    for (int r = 0; r < p; r++) {
        int held = 0;
        for (int i = s->at[r]; i < s->at[r + 1]; i++) { /* events in time order: the table's order on one stage */
            const hp_action *a = &s->act[i];
            if (a->kind == HP_ACT_FWD) held++;
            if (held > out->peak[r]) out->peak[r] = held;
            if (a->kind == HP_ACT_BWD || a->kind == HP_ACT_BWD_WEIGHT) held--;
        }
    }
done:
    free(e.fwd), free(e.bwd), free(e.wgt), free(free_at), free(busy), free(next);
    if (st) hp_pp_sim_free(out);
    return st;
}

/* ---- the rules ---- */

hp_status hp_pp_sched_check(const hp_pp_sched *s) {
    int p = s->stages, v = s->chunks, m = s->micro, zb = s->kind == HP_PP_ZBH1;
    int *pos = malloc(sizeof(int) * 3 * (size_t)v * (size_t)m);
    if (!pos) return hp_errorf("pipeline schedule: out of memory");
    const char *kn = hp_pp_kind_name(s->kind);
    hp_status st = HP_OK;
    for (int r = 0; r < p && !st; r++) {
        for (int i = 0; i < 3 * v * m; i++) pos[i] = -1;
        int first_back = -1, fwd_before = 0;
        for (int i = s->at[r]; i < s->at[r + 1] && !st; i++) {
            const hp_action *a = &s->act[i];
            if (a->chunk < 0 || a->chunk >= v || a->micro < 0 || a->micro >= m) {
                st = hp_errorf("pipeline schedule %s: stage %d: action %d names chunk %d, micro-batch %d", kn, r,
                               i - s->at[r], a->chunk, a->micro);
                break;
            }
            int slot = a->kind == HP_ACT_FWD ? 0 : a->kind == HP_ACT_BWD_WEIGHT ? 2 : 1;
            if ((zb && a->kind == HP_ACT_BWD) || (!zb && (a->kind == HP_ACT_BWD_INPUT || a->kind == HP_ACT_BWD_WEIGHT)) ||
                a->kind == HP_ACT_OPT) {
                st = hp_errorf("pipeline schedule %s: stage %d runs a %s", kn, r, kind_word(a->kind));
                break;
            }
            int *at = &pos[(slot * v + a->chunk) * m + a->micro];
            if (*at >= 0) {
                st = hp_errorf("pipeline schedule %s: stage %d runs the %s of micro-batch %d (chunk %d) twice", kn, r,
                               kind_word(a->kind), a->micro, a->chunk);
                break;
            }
            *at = i;
            if (slot == 0 && first_back < 0) fwd_before++;
            if (slot == 1 && first_back < 0) first_back = i;
        }
        for (int c = 0; c < v && !st; c++)
            for (int b = 0; b < m && !st; b++) {
                int f = pos[c * m + b], g = pos[(v + c) * m + b], w = pos[(2 * v + c) * m + b];
                if (f < 0 || g < 0 || (zb && w < 0))
                    st = hp_errorf("pipeline schedule %s: stage %d never runs the %s of micro-batch %d (chunk %d)", kn, r,
                                   f < 0 ? "forward" : g < 0 ? "backward" : "weight gradient", b, c);
                else if (g < f || (zb && w < g))
                    st = hp_errorf("pipeline schedule %s: stage %d runs the %s of micro-batch %d (chunk %d) before its %s",
                                   kn, r, g < f ? "backward" : "weight gradient", b, c, g < f ? "forward" : "backward");
            }
        int want = s->kind == HP_PP_GPIPE ? m * v : s->warmup[r] + 1 < m * v ? s->warmup[r] + 1 : m * v;
        if (!st && fwd_before != want)
            st = hp_errorf("pipeline schedule %s: stage %d runs %d forwards before its first backward, not %d", kn, r,
                           fwd_before, want);
    }
    free(pos);
    if (!st) {
        hp_pp_sim sim;
        st = hp_pp_sched_simulate(&sim, s, 1, 2, 1, 1);
        if (!st) hp_pp_sim_free(&sim);
    }
    return st;
}

hp_status hp_pp_sched_p2p(hp_pp_p2p **out, int *n, const hp_pp_sched *s) {
    int p = s->stages, V = p * s->chunks;
    *out = malloc(sizeof **out * (size_t)(s->at[p] ? s->at[p] : 1));
    *n = 0;
    if (!*out) return hp_errorf("pipeline schedule: out of memory");
    for (int r = 0; r < p; r++)
        for (int i = s->at[r]; i < s->at[r + 1]; i++) {
            const hp_action *a = &s->act[i];
            int j = hp_pp_vstage(s, r, a->chunk);
            if (a->kind == HP_ACT_FWD && j < V - 1 && hp_pp_stage_of(s, j + 1) != r)
                (*out)[(*n)++] = (hp_pp_p2p){a->micro, j, 0, r, hp_pp_stage_of(s, j + 1)};
            if ((a->kind == HP_ACT_BWD || a->kind == HP_ACT_BWD_INPUT) && j > 0 && hp_pp_stage_of(s, j - 1) != r)
                (*out)[(*n)++] = (hp_pp_p2p){a->micro, j - 1, 1, r, hp_pp_stage_of(s, j - 1)};
        }
    return HP_OK;
}

hp_status hp_pp_sched_timeline(char **text, const hp_pp_sched *s) {
    *text = NULL;
    hp_pp_sim sim;
    HP_TRY(hp_pp_sched_simulate(&sim, s, 1, 2, 1, 1));
    int p = s->stages, cols = (int)(sim.length + 0.5);
    size_t row = 12 + 3 * (size_t)cols + 1, size = row * (size_t)p + 1;
    char *t = malloc(size);
    if (!t) {
        hp_pp_sim_free(&sim);
        return hp_errorf("pipeline schedule: out of memory");
    }
    for (int r = 0; r < p; r++) {
        char *line = t + row * (size_t)r;
        memset(line, ' ', row - 1);
        line[row - 1] = '\n';
        char head[32];
        snprintf(head, sizeof head, "stage %-4d|", r % 10000);
        memcpy(line, head, 11);
        for (int c = 0; c < cols; c++) memcpy(line + 11 + 3 * c, ".  ", 3);
        for (int i = s->at[r]; i < s->at[r + 1]; i++) {
            const hp_action *a = &s->act[i];
            int c0 = (int)(sim.start[i] + 0.5), d = a->kind == HP_ACT_BWD ? 2 : 1;
            char cell[8];
            char k = a->kind == HP_ACT_FWD ? 'F' : a->kind == HP_ACT_BWD ? 'B' : a->kind == HP_ACT_BWD_INPUT ? 'b' : 'W';
            snprintf(cell, sizeof cell, "%c%-2d", k, a->micro % 100);
            if (a->chunk > 0 && a->micro < 10) cell[2] = (char)('a' + a->chunk % 26);
            for (int c = c0; c < c0 + d && c < cols; c++) memcpy(line + 11 + 3 * c, cell, 3);
        }
    }
    t[row * (size_t)p] = 0;
    hp_pp_sim_free(&sim);
    *text = t;
    return HP_OK;
}
