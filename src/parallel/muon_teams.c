/* parallel/muon_teams: distributed Muon's teams (parallel/muon_plan.h's Teams): every matrix of a group iterated
 * step by step, each rank its row blocks (muon_team nodes), the rows traded every step (see
 * parallel/muon_group.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/muon_dist.h"
#include "optim/newton_schulz.h"
#include "parallel/muon_group.h"
#include "parallel/rank.h"

static int64_t it_r(const hp_muon_mat *x) { return x->rows < x->cols ? x->rows : x->cols; }

static int64_t it_c(const hp_muon_mat *x) { return x->rows < x->cols ? x->cols : x->rows; }

static int64_t nb_of(const hp_muon_mat *x) { return hp_ns_blocks((long)x->rows, (long)x->cols); }

/* rows of block j (a stack's blocks: matrix after matrix) */
static int64_t brows(const hp_muon_mat *x, int j) {
    int64_t r = it_r(x), b = j % nb_of(x);
    return (b + 1) * HP_NS_ROW_BLOCK < r ? HP_NS_ROW_BLOCK : r - b * HP_NS_ROW_BLOCK;
}

/* member p's rows of x: all, or those of its blocks before block `before` */
static int64_t rows_of(const hp_muon_mat *x, int p, int before) {
    int64_t n = 0;
    for (int j = 0; j < before; j++) n += x->bo[j] == p ? brows(x, j) : 0;
    return n;
}

/* p's rows of matrix k of x (a stack's k-th; 0 for a plain matrix) */
static int64_t rows_k(const hp_muon_mat *x, int p, int k) {
    int nb = (int)nb_of(x);
    return rows_of(x, p, (k + 1) * nb) - rows_of(x, p, k * nb);
}

/* 1 if p iterates matrix k of x: holds a block of it, or leads x (the lead gathers every last iterate) */
static int member_k(const hp_muon_mat *x, int p, int k) { return x->bo[0] == p || rows_k(x, p, k) > 0; }

static int is_member(const hp_muon_mat *x, int p) { return x->nblk > 0 && (x->bo[0] == p || rows_of(x, p, x->nblk) > 0); }

static int64_t wid(const hp_muon_mat *x, int w) { return w ? it_c(x) : it_r(x); }

/* Elements of matrix k of tl's matrices that p sends me (rows_k of p, width w) in a trade: the matrices both
 * iterate, in order; *at: where matrix (q, k)'s rows start among them (q, k excluded). */
static int64_t shared_rows(int64_t *at, const hp_muon_grp *s, const int *tl, int ntl, int p, int me, int q0, int k0, int w) {
    int64_t n = 0;
    *at = -1;
    for (int q = 0; q < ntl; q++) {
        const hp_muon_mat *x = &s->ms[tl[q]];
        for (int k = 0; k < x->nmats; k++) {
            if (q == q0 && k == k0) *at = n;
            if (member_k(x, p, k) && member_k(x, me, k)) n += rows_k(x, p, k) * wid(x, w);
        }
    }
    return n;
}

/* One trade of rows along fa: this rank's rows (Mine: its tasks' rows of the team matrices tl[0..ntl), width w:
 * 0 r, 1 c) to every other iterator of each matrix, then every matrix it iterates put together ([count, r, w]
 * each, tl's order; a stack's matrices it does not iterate left out as holes). Returns the whole value. */
static int trade(hp_muon_grp *s, int Mine, const int *tl, int ntl, int w, int slot, const char *name) {
    hp_graph *g = s->rg->g;
    int K = s->K, me = s->cf, out = -1;
    int64_t nk = 0, nb_all = 0;
    for (int q = 0; q < ntl; q++) nk += s->ms[tl[q]].nmats, nb_all += s->ms[tl[q]].nblk + s->ms[tl[q]].nmats;
    int64_t *sc = calloc((size_t)K, sizeof *sc), *rc = calloc((size_t)K, sizeof *rc), *seg = calloc((size_t)K + 1, sizeof *seg);
    int64_t *cp = malloc(sizeof(int64_t) * (1 + 5 * ((size_t)K * (size_t)nk + 1)));
    int64_t *cp2 = malloc(sizeof(int64_t) * (1 + 5 * ((size_t)nb_all + 1)));
    if (!sc || !rc || !seg || !cp || !cp2) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    int64_t ncopy = 0, ssum = 0, rsum = 0, full = 0, at;
    for (int p = 0; p < K; p++) {
        int64_t mo = 0; /* my rows of (q, k) start at mo in Mine */
        for (int q = 0; q < ntl; q++) {
            const hp_muon_mat *x = &s->ms[tl[q]];
            for (int k = 0; k < x->nmats; k++) {
                int64_t mine = rows_k(x, me, k) * wid(x, w);
                if (mine > 0 && member_k(x, p, k) && member_k(x, me, k)) {
                    int64_t *e = &cp[1 + 5 * ncopy++];
                    e[0] = mo, e[1] = mine, e[2] = e[3] = e[4] = 0;
                    sc[p] += mine;
                }
                mo += mine;
            }
        }
        rc[p] = shared_rows(&at, s, tl, ntl, p, me, -1, -1, w);
        ssum += sc[p], rsum += rc[p];
        seg[p + 1] = seg[p] + rc[p];
    }
    cp[0] = ncopy;
    char nmb[HP_NAME_LEN + 8];
    snprintf(nmb, sizeof nmb, "%.*s.send", HP_NAME_LEN - 8, name);
    int Send = hp_mg_spread_node(g, Mine, cp, ssum, nmb);
    snprintf(nmb, sizeof nmb, "%.*s.recv", HP_NAME_LEN - 8, name);
    int Recv = hp_mg_act(g, rsum, nmb);
    if (Send >= 0 && Recv >= 0) hp_comm_op_all_to_all_v(g, Recv, Send, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    /* each matrix's blocks in order, from their iterators' segments */
    ncopy = 0;
    for (int q = 0; q < ntl; q++) {
        const hp_muon_mat *x = &s->ms[tl[q]];
        int nb = (int)nb_of(x);
        for (int k = 0; k < x->nmats; k++) {
            int64_t whole = it_r(x) * wid(x, w);
            if (!member_k(x, me, k)) { /* a hole */
                int64_t *e = &cp2[1 + 5 * ncopy++];
                e[0] = 0, e[1] = whole, e[2] = -1, e[3] = e[4] = 0;
                full += whole;
                continue;
            }
            for (int j = k * nb; j < (k + 1) * nb; j++) {
                int p = x->bo[j];
                shared_rows(&at, s, tl, ntl, p, me, q, k, w);
                int64_t *e = &cp2[1 + 5 * ncopy++];
                e[0] = seg[p] + at + (rows_of(x, p, j) - rows_of(x, p, k * nb)) * wid(x, w);
                e[1] = brows(x, j) * wid(x, w), e[2] = e[3] = e[4] = 0;
                full += e[1];
            }
        }
    }
    cp2[0] = ncopy;
    out = hp_mg_spread_node(g, Recv, cp2, full, name);
done:
    free(sc), free(rc), free(seg), free(cp), free(cp2);
    return out;
}

/* The lead's first iterates X0 (its led matrices of tl, in order, x0 elements) to every iterator of each,
 * put together in tl's order (holes where this rank iterates no matrix of a stack). */
static int deal_x0(hp_muon_grp *s, int X0, const int *tl, int ntl, int slot, const char *key) {
    hp_graph *g = s->rg->g;
    int K = s->K, me = s->cf, out = -1;
    int64_t nk = 0;
    for (int q = 0; q < ntl; q++) nk += s->ms[tl[q]].nmats;
    int64_t *sc = calloc((size_t)K, sizeof *sc), *rc = calloc((size_t)K, sizeof *rc), *seg = calloc((size_t)K + 1, sizeof *seg);
    int64_t *cp = malloc(sizeof(int64_t) * (1 + 5 * ((size_t)K * (size_t)nk + 1)));
    if (!sc || !rc || !seg || !cp) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    int64_t ncopy = 0, ssum = 0, rsum = 0, full = 0;
    for (int p = 0; p < K; p++) {
        int64_t xo = 0;
        for (int q = 0; q < ntl; q++) {
            const hp_muon_mat *x = &s->ms[tl[q]];
            int64_t one = it_r(x) * it_c(x);
            if (x->bo[0] != me) continue;
            for (int k = 0; k < x->nmats; k++, xo += one)
                if (member_k(x, p, k)) {
                    int64_t *e = &cp[1 + 5 * ncopy++];
                    e[0] = xo, e[1] = one, e[2] = e[3] = e[4] = 0;
                    sc[p] += one;
                }
        }
        for (int q = 0; q < ntl; q++) {
            const hp_muon_mat *x = &s->ms[tl[q]];
            for (int k = 0; x->bo[0] == p && k < x->nmats; k++) rc[p] += member_k(x, me, k) ? it_r(x) * it_c(x) : 0;
        }
        ssum += sc[p], rsum += rc[p];
        seg[p + 1] = seg[p] + rc[p];
    }
    cp[0] = ncopy;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.x0.%s.send", key);
    int Send = hp_mg_spread_node(g, X0, cp, ssum, nmb);
    snprintf(nmb, sizeof nmb, "muon.x0.%s.recv", key);
    int Recv = hp_mg_act(g, rsum, nmb);
    if (Send >= 0 && Recv >= 0) hp_comm_op_all_to_all_v(g, Recv, Send, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    int64_t *at = seg; /* from here: the next matrix's place in each lead's segment */
    ncopy = 0;
    for (int q = 0; q < ntl; q++) {
        const hp_muon_mat *x = &s->ms[tl[q]];
        int64_t one = it_r(x) * it_c(x);
        for (int k = 0; k < x->nmats; k++) {
            int64_t *e = &cp[1 + 5 * ncopy++];
            int in = member_k(x, me, k);
            e[0] = in ? at[x->bo[0]] : 0, e[1] = one, e[2] = in ? 0 : -1, e[3] = e[4] = 0;
            if (in) at[x->bo[0]] += one;
            full += one;
        }
    }
    cp[0] = ncopy;
    snprintf(nmb, sizeof nmb, "muon.x.%s.0", key);
    out = hp_mg_spread_node(g, Recv, cp, full, nmb);
done:
    free(sc), free(rc), free(seg), free(cp);
    return out;
}

/* muon_team of one step's half over the iterates X (and the Gram matrices A) into a new value of n elements. */
static int team_node(hp_muon_grp *s, int mode, int step, int X, int A, const int64_t *tasks, int ntask, int64_t n,
                     const char *name) {
    hp_graph *g = s->rg->g;
    hp_muon_team_cfg c = {mode, ntask, {0, 0, 0}};
    if (mode == HP_MUON_TEAM_STEP) memcpy(c.coef, s->cfg->ns.coeffs[step], sizeof c.coef);
    int y = hp_mg_act(g, n, name);
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_team_blob(g, &c, tasks);
    int in3[3] = {s->io->sumsq, X, A};
    int node = y >= 0 && X >= 0 ? hp_graph_node_into(g, &hp_op_muon_team, in3, mode == HP_MUON_TEAM_STEP ? 3 : 2, &y, 1, &at,
                                                     HP_PHASE_OPT, -1)
                                : -1;
    if (node >= 0)
        snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_team[%s %d, %d runs]", mode == HP_MUON_TEAM_GRAM ? "gram" : "step",
                 step, ntask);
    return y;
}

int hp_mg_team_orth(hp_muon_grp *s, int R, int64_t rsum, const int *owned, int ni, int64_t *items, const int64_t *len,
                     const int64_t *start, const char *key, int slot) {
    hp_graph *g = s->rg->g;
    int nm = s->nm, me = s->cf, out = -1;
    int *tl = malloc(sizeof(int) * (size_t)(nm + 1));
    int64_t *xoff = malloc(sizeof(int64_t) * (size_t)(nm + 1)), *aoff = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    int64_t nb_all = 0;
    for (int j = 0; j < nm; j++) nb_all += s->ms[j].nblk;
    int64_t *tg = malloc(sizeof(int64_t) * HP_MUON_TASK * (size_t)(nb_all + 1));
    int64_t *ts = malloc(sizeof(int64_t) * HP_MUON_TASK * (size_t)(nb_all + 1));
    if (!tl || !xoff || !aoff || !tg || !ts) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    /* the matrices this rank iterates blocks of, in matrix order; their iterates and Gram matrices in a row */
    int ntl = 0;
    int64_t xs = 0, as = 0, x0 = 0;
    for (int j = 0; j < nm; j++) {
        const hp_muon_mat *x = &s->ms[j];
        if (!is_member(x, me)) continue;
        xoff[ntl] = xs, aoff[ntl] = as, tl[ntl++] = j;
        xs += x->nmats * it_r(x) * it_c(x), as += x->nmats * it_r(x) * it_r(x);
    }
    /* the owned (led) matrices' first iterates at their place in the front's output */
    for (int c = 0; c < ni; c++) {
        items[HP_MUON_ITEM * c + 4] = x0;
        x0 += s->ms[owned[c]].nmats * it_r(&s->ms[owned[c]]) * it_c(&s->ms[owned[c]]);
    }
    int X0 = hp_mg_orth_node_team(s, R, -1, 1, x0, ni, items, len, start, key, "front");
    int X = deal_x0(s, X0, tl, ntl, slot, key);
    /* this rank's runs of blocks: GRAM's rows [rows, r], STEP's [rows, c] */
    int nt = 0;
    int64_t og = 0, os = 0, scr = 0;
    for (int q = 0; q < ntl; q++) {
        const hp_muon_mat *x = &s->ms[tl[q]];
        int64_t r = it_r(x), c = it_c(x), nb = nb_of(x);
        for (int j = 0; j < x->nblk;) {
            if (x->bo[j] != me) {
                j++;
                continue;
            }
            int j1 = j + 1, k = (int)(j / nb);
            while (j1 < x->nblk && x->bo[j1] == me && j1 / nb == k) j1++;
            int64_t rows = rows_of(x, me, j1) - rows_of(x, me, j);
            int64_t *t = &tg[HP_MUON_TASK * nt];
            t[0] = xoff[q] + k * r * c, t[1] = aoff[q] + k * r * r, t[2] = r, t[3] = c, t[4] = j % nb, t[5] = j % nb + (j1 - j);
            t[6] = og, t[7] = scr;
            memcpy(&ts[HP_MUON_TASK * nt], t, sizeof(int64_t) * HP_MUON_TASK);
            ts[HP_MUON_TASK * nt + 6] = os;
            og += rows * r, os += rows * c, scr += rows * r, nt++;
            j = j1;
        }
    }
    char nmb[HP_NAME_LEN];
    for (int st = 0; st < s->cfg->ns.steps && X >= 0; st++) {
        snprintf(nmb, sizeof nmb, "muon.gram.%s.%d", key, st);
        int Am = team_node(s, HP_MUON_TEAM_GRAM, st, X, -1, tg, nt, og, nmb);
        snprintf(nmb, sizeof nmb, "muon.a.%s.%d", key, st);
        int A = trade(s, Am, tl, ntl, 0, slot, nmb);
        snprintf(nmb, sizeof nmb, "muon.step.%s.%d", key, st);
        int Ym = team_node(s, HP_MUON_TEAM_STEP, st, X, A, ts, nt, os, nmb);
        snprintf(nmb, sizeof nmb, "muon.x.%s.%d", key, st + 1);
        X = trade(s, Ym, tl, ntl, 1, slot, nmb);
    }
    /* the led matrices' last iterates, at their place among this rank's */
    for (int c = 0; c < ni; c++)
        for (int q = 0; q < ntl; q++)
            if (tl[q] == owned[c]) items[HP_MUON_ITEM * c + 4] = xoff[q];
    out = hp_mg_orth_node_team(s, R, X, 0, rsum, ni, items, len, start, key, "teams");
done:
    free(tl), free(xoff), free(aoff), free(tg), free(ts);
    return out;
}
