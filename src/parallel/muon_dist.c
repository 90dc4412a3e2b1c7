/* parallel/muon_dist: distributed Muon's nodes (see the header). */
#include "parallel/muon_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/muon.h"
#include "optim/muon_dist.h"
#include "parallel/muon_group.h"
#include "parallel/rank.h"

/* The key's cutting axis (F, or a tensor-parallel Sr / Sc: *cut says which; -1: none) and up to two R axes
 * (*ra, then *rb; -1: none), B axes aside; 0 when it has anything else (two cuts, three R). */
static int key_axes_cut(int *fa, int *ra, int *rb, int *cut, const hp_muon_group *gr, const hp_mesh *m) {
    *fa = *ra = *rb = -1;
    *cut = HP_MUON_AX_NONE;
    for (int a = 0; a < m->ndim; a++) {
        switch (gr->ax[a]) {
        case HP_MUON_AX_NONE: break;
        case HP_MUON_AX_F:
        case HP_MUON_AX_SR:
        case HP_MUON_AX_SC:
            if (*fa >= 0) return 0;
            *fa = a;
            *cut = gr->ax[a];
            break;
        case HP_MUON_AX_R:
            if (*rb >= 0) return 0;
            if (*ra >= 0) *rb = *ra;
            *ra = a;
            break;
        case HP_MUON_AX_B: break; /* separates groups: each coordinate's ranks hold their own matrices */
        default: return 0;
        }
    }
    return 1;
}

/* FSDP x TP: the key has an F axis (*fa), one tensor-parallel cut (*sa, *cut), at most one R axis (*ra: HSDP's
 * replicas, -1: none), B axes aside, and nothing else. */
static int key_ft(int *fa, int *sa, int *ra, int *cut, const hp_muon_group *gr, const hp_mesh *m) {
    *fa = *sa = *ra = -1;
    *cut = HP_MUON_AX_NONE;
    for (int a = 0; a < m->ndim; a++) {
        hp_muon_axis x = gr->ax[a];
        if (x == HP_MUON_AX_NONE) continue;
        if (x == HP_MUON_AX_F && *fa < 0) *fa = a;
        else if ((x == HP_MUON_AX_SR || x == HP_MUON_AX_SC) && *sa < 0) *sa = a, *cut = x;
        else if (x == HP_MUON_AX_R && *ra < 0) *ra = a;
        else if (x != HP_MUON_AX_B) return 0;
    }
    return *fa >= 0 && *sa >= 0;
}

int hp_muon_dist_handles(const hp_muon_plan *plan, int i, const hp_mesh *m) {
    int fa, ra, rb, cut;
    const hp_muon_group *gr = &plan->grp[plan->mat[i].group];
    if (plan->mat[i].owner == -1 || key_axes_cut(&fa, &ra, &rb, &cut, gr, m)) return 1;
    /* FSDP x TP, with HSDP's replicas or not */
    return key_ft(&fa, &ra, &rb, &cut, gr, m);
}

/* x's Newton–Schulz work (the plan's cost without the step count) */
static double wave_cost(const hp_muon_mat *x) {
    double m = (double)(x->rows < x->cols ? x->rows : x->cols), n = (double)(x->rows < x->cols ? x->cols : x->rows);
    return (4.0 * m * m * n + 2.0 * m * m * m) * (double)x->nmats;
}

static int by_order(const void *x, const void *y) {
    const hp_muon_mat *a = x, *b = y;
    int64_t sa = a->rows * a->cols, sb = b->rows * b->cols;
    if (sa != sb) return sa > sb ? -1 : 1;
    if (a->rows != b->rows) return a->rows > b->rows ? -1 : 1;
    return a->k - b->k;
}

/* Member i's piece of parameter k (numel elements) along the FSDP shard axis. */
static void member_piece(int64_t *a, int64_t *len, const hp_fsdp_plan *f, int k, int64_t numel, int i) {
    const hp_fsdp_unit *un = &f->units[f->unit_of[k]];
    int64_t o = (int64_t)(f->offset[k] - un->offset), lo = (int64_t)un->shard * i, hi = lo + (int64_t)un->shard;
    int64_t s = o > lo ? o : lo, e = o + numel < hi ? o + numel : hi;
    *a = s < e ? s - o : 0, *len = s < e ? e - s : 0;
}

static hp_status emit_group(hp_muon_grp *s, int slot) {
    hp_graph *g = s->rg->g;
    int nm = s->nm, K = s->K, W = s->W > 0 ? s->W : 1;
    int *send = malloc(sizeof(int) * (size_t)(nm + 1)), *rest = malloc(sizeof(int) * (size_t)(nm + 1));
    int *xin = malloc(sizeof(int) * 2 * (size_t)(nm + 1)), *owned = malloc(sizeof(int) * (size_t)(nm + 1));
    int64_t *sc = calloc((size_t)K * (size_t)W, sizeof *sc), *rc = calloc((size_t)K, sizeof *rc);
    int64_t *agc = calloc((size_t)s->Rn * (size_t)W, sizeof *agc);
    int64_t *items = malloc(sizeof(int64_t) * HP_MUON_ITEM * (size_t)(nm + 1)), *trs = calloc(3 * (size_t)(nm + 1), sizeof *trs);
    int64_t *len = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    int64_t *start = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    int64_t *wv = calloc(3 * (size_t)W, sizeof *wv); /* per wave: its sent elements, their offset, all its elements */
    int *wn = malloc(sizeof(int) * 5 * (size_t)W);   /* per wave: S2, slot, to-owner start, return wait, stage 2 */
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    hp_status st = HP_OK;
    if (!send || !rest || !xin || !owned || !sc || !rc || !agc || !items || !trs || !len || !start || !wv || !wn || !pos) {
        st = hp_errorf("distributed Muon: out of memory");
        goto done;
    }
    /* pack: the pieces sent to owners of this replica slice (wave by wave), then the others (momentum only) */
    int nsend = 0, nrest = 0, nx = 0;
    for (int w = 0; w < W; w++) nsend += hp_mg_pieces_in_w(s, send + nsend, s->cr, w);
    int64_t ssum = 0;
    char nmb[HP_NAME_LEN];
    char key[32];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    for (int q = 0; q < nsend; q++) { /* per wave and member: the elements sent */
        const hp_muon_mat *x = &s->ms[send[q]];
        int64_t e = s->ft ? hp_mg_blk_of(s, x) : hp_mg_my_len(s, x);
        sc[(size_t)x->wave * (size_t)K + (size_t)x->of] += e, wv[3 * x->wave] += e, ssum += e;
    }
    for (int w = 1; w < W; w++) wv[3 * w + 1] = wv[3 * (w - 1) + 1] + wv[3 * (w - 1)];
    for (int j = 0; j < nm; j++) {
        const hp_muon_mat *x = &s->ms[j];
        int64_t e = s->ft ? hp_mg_blk_of(s, x) : hp_mg_my_len(s, x);
        wv[3 * x->wave + 2] += e, agc[(size_t)x->wave * (size_t)s->Rn + (size_t)x->orr] += e;
    }
    int S = -1;
    if (s->ft) {
        S = hp_mg_ft_front(s, send, nsend, key, slot);
    } else {
        for (int j = 0; j < nm; j++)
            if (hp_mg_my_len(s, &s->ms[j]) > 0 && s->ms[j].orr != s->cr) rest[nrest++] = j;
        /* the states in matrix order, the same on every rank whatever it owns (checkpoints find a replicated
         * state by its value id on every rank) */
        int *state = malloc(sizeof(int) * (size_t)(nm + 1));
        if (!state) {
            st = hp_errorf("distributed Muon: out of memory");
            goto done;
        }
        for (int j = 0; j < nm; j++) {
            state[j] = hp_mg_my_len(s, &s->ms[j]) > 0 ? hp_optim_state_value(g, &s->pp[s->ms[j].piece], "muon.m.") : -1;
            s->io->nstates += state[j] >= 0;
        }
        for (int q = 0; q < nsend + nrest; q++) {
            int j = q < nsend ? send[q] : rest[q - nsend];
            xin[nx++] = s->pp[s->ms[j].piece].grad;
            xin[nx++] = state[j];
        }
        for (int q = 0; q < nsend; q++) hp_mg_tr_of(&trs[3 * q], s, &s->ms[send[q]]);
        S = hp_mg_pack_node(s, xin, nsend + nrest, nsend, trs, ssum, key);
        free(state);
    }
    /* per wave: to the owners, Newton–Schulz (whole, or step by step in teams), back */
    for (int w = 0; w < W; w++) {
        char kw[48];
        if (W > 1) snprintf(kw, sizeof kw, "%s.w%d", key, w);
        else snprintf(kw, sizeof kw, "%s", key);
        int sl = w ? s->rg->ctx.nslots++ : slot, ni = 0;
        wn[5 * w + 1] = sl, wn[5 * w + 2] = wn[5 * w + 3] = -1;
        for (int j = 0; j < nm; j++)
            if (s->ms[j].of == s->cf && s->ms[j].orr == s->cr && s->ms[j].wave == w) owned[ni++] = j;
        memset(rc, 0, sizeof *rc * (size_t)K);
        int64_t rsum = hp_mg_orth_tables(s, owned, ni, items, len, start, rc);
        const int64_t *scw = sc + (size_t)w * (size_t)K;
        snprintf(nmb, sizeof nmb, "muon.sent.%s", kw);
        int Sw = W > 1 && S >= 0 && wv[3 * w] > 0 ? hp_graph_view(g, S, wv[3 * w + 1], hp_shape1(wv[3 * w]), nmb) : S;
        int R = Sw;
        if (K > 1) {
            snprintf(nmb, sizeof nmb, "muon.owned.%s", kw);
            R = hp_mg_act(g, rsum, nmb);
            int wt = R >= 0 && Sw >= 0 ? hp_comm_op_all_to_all_v(g, R, Sw, s->fa, scw, rc, K, sl, HP_PHASE_OPT) : -1;
            wn[5 * w + 2] = wt >= 0 ? wt - 1 : -1;
        }
        int R2 = s->teams ? hp_mg_team_orth(s, R, rsum, owned, ni, items, len, start, kw, sl)
                          : hp_mg_orth_node(s, R, rsum, ni, items, len, start, kw, "owned");
        int S2 = R2;
        if (K > 1) {
            snprintf(nmb, sizeof nmb, "muon.upd.%s", kw);
            S2 = hp_mg_act(g, wv[3 * w], nmb);
            wn[5 * w + 3] = S2 >= 0 && R2 >= 0 ? hp_comm_op_all_to_all_v(g, S2, R2, s->fa, rc, scw, K, sl, HP_PHASE_OPT) : -1;
        }
        wn[5 * w] = S2;
    }
    /* per wave: to every replica, then the update (in U's order: slice by slice, each in send order) */
    for (int w = 0; w < W; w++) {
        char kw[48];
        if (W > 1) snprintf(kw, sizeof kw, "%s.w%d", key, w);
        else snprintf(kw, sizeof kw, "%s", key);
        wn[5 * w + 4] = g->nnodes;
        int U = hp_mg_replicas_gather(s, wn[5 * w], agc + (size_t)w * (size_t)s->Rn, wv[3 * w + 2], wn[5 * w + 1], kw);
        if (s->ft) { /* wave w's blocks in U: slice by slice, each in send order */
            int64_t o = 0;
            int *ord = rest;
            for (int j = 0; j < nm; j++) pos[j] = -1;
            for (int sl = 0; sl < s->Rn; sl++) {
                int n = hp_mg_pieces_in_w(s, ord, sl, w);
                for (int q = 0; q < n; q++) pos[ord[q]] = o, o += hp_mg_blk_of(s, &s->ms[ord[q]]);
            }
            hp_mg_ft_back(s, U, pos, kw);
            continue;
        }
        int na = 0, *ord = rest; /* rest no longer needed */
        for (int sl = 0; sl < s->Rn; sl++) na += hp_mg_pieces_in_w(s, ord + na, sl, w);
        hp_mg_apply_node(s, U, ord, na, 1);
    }
    s->io->nmuon_groups++;
    st = hp_graph_error(g);
    /* the overlap: every wave's exchange to the owners starts right after wave 0's, its wait stays before its
     * Newton–Schulz; a wave's return is waited for only before its replicas' gather or its update, after the
     * later waves' Newton–Schulz */
    if (!st && W > 1) st = hp_rank_graph_sync_nodes(s->rg);
    for (int w = 0; !st && W > 1 && w < W; w++) {
        if (w > 0 && wn[2] >= 0 && wn[5 * w + 2] >= 0) s->rg->hint[wn[5 * w + 2]] = HP_HINT_AFTER(wn[2]);
        if (wn[5 * w + 3] >= 0 && wn[5 * w + 4] < g->nnodes) s->rg->hint[wn[5 * w + 3]] = HP_HINT_BEFORE(wn[5 * w + 4]);
    }
done:
    free(send), free(rest), free(xin), free(owned), free(sc), free(rc), free(agc), free(items), free(trs), free(len),
        free(start), free(wv), free(wn), free(pos);
    return st;
}

/* Several ranks orthogonalise each matrix (the plan's ZERO1_GATHER: every member whose piece touches it;
 * all: GATHER_ALL, every member), each of them from every member's piece, and each holder takes its own
 * piece of the update from its own result: no return, no replicas' gather (every replica slice does the
 * same). */
static hp_status emit_group_multi(hp_muon_grp *s, int slot, int all) {
    hp_graph *g = s->rg->g;
    int nm = s->nm, K = s->K;
    int *mine = malloc(sizeof(int) * (size_t)(nm + 1)), *every = malloc(sizeof(int) * (size_t)(nm + 1));
    int *xin = malloc(sizeof(int) * 2 * (size_t)(nm + 1));
    int64_t *sc = calloc((size_t)K, sizeof *sc), *rc = calloc((size_t)K, sizeof *rc);
    int64_t *items = malloc(sizeof(int64_t) * HP_MUON_ITEM * (size_t)(nm + 1)), *trs = calloc(3 * (size_t)(nm + 1), sizeof *trs);
    int64_t *len = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    int64_t *start = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    int64_t *copies = malloc(sizeof(int64_t) * (1 + 5 * (size_t)K * (size_t)(nm + 1)));
    hp_status st = HP_OK;
    if (!mine || !every || !xin || !sc || !rc || !items || !trs || !len || !start || !copies) {
        st = hp_errorf("distributed Muon: out of memory");
        goto done;
    }
    int nmine = 0, nx = 0;
    int64_t total = 0;
    for (int j = 0; j < nm; j++) {
        every[j] = j;
        if (hp_mg_my_len(s, &s->ms[j]) > 0) mine[nmine++] = j;
    }
    for (int q = 0; q < nmine; q++) { /* states first, in matrix order (as emit_group) */
        const hp_muon_mat *x = &s->ms[mine[q]];
        xin[nx++] = s->pp[x->piece].grad;
        xin[nx++] = hp_optim_state_value(g, &s->pp[x->piece], "muon.m.");
        s->io->nstates++;
        total += hp_mg_my_len(s, x);
        hp_mg_tr_of(&trs[3 * q], s, x);
    }
    char nmb[HP_NAME_LEN], key[32];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    int S = hp_mg_pack_node(s, xin, nmine, nmine, trs, total, key);
    /* the matrices this rank orthogonalises (every one, or those it touches), each from every member's piece */
    const int *sel = all ? every : mine;
    int ni = all ? nm : nmine;
    int64_t rsum = hp_mg_orth_tables(s, sel, ni, items, len, start, rc), off = 0;
    for (int i = 0; i < s->cf; i++) off += rc[i];
    int R = S;
    if (K > 1 && all) {
        snprintf(nmb, sizeof nmb, "muon.all.%s", key);
        R = hp_mg_act(g, rsum, nmb);
        if (R >= 0) hp_comm_op_all_gather_v(g, R, S, s->fa, rc, K, s->cf, slot, HP_PHASE_OPT);
    } else if (K > 1) {
        /* to each member its pieces of the matrices it touches, matrix order (a piece once per toucher) */
        int64_t ncp = 0, dsum = 0;
        for (int i = 0; i < K; i++) {
            int64_t so = 0;
            for (int q = 0; q < nmine; q++) {
                const hp_muon_mat *x = &s->ms[mine[q]];
                if (x->len[i] > 0) {
                    int64_t *e = &copies[1 + 5 * ncp];
                    e[0] = so, e[1] = hp_mg_my_len(s, x), e[2] = e[3] = e[4] = 0;
                    sc[i] += hp_mg_my_len(s, x), ncp++;
                }
                so += hp_mg_my_len(s, x);
            }
            dsum += sc[i];
        }
        copies[0] = ncp;
        snprintf(nmb, sizeof nmb, "muon.spread.%s", key);
        int D = hp_mg_spread_node(g, S, copies, dsum, nmb);
        snprintf(nmb, sizeof nmb, "muon.touched.%s", key);
        R = hp_mg_act(g, rsum, nmb);
        if (R >= 0 && D >= 0) hp_comm_op_all_to_all_v(g, R, D, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    }
    int R2 = hp_mg_orth_node(s, R, rsum, ni, items, len, start, key, "matrices");
    if (nmine > 0 && R2 >= 0) { /* this rank's pieces: its own segment of the result, matrix order */
        snprintf(nmb, sizeof nmb, "muon.mine.%s", key);
        hp_mg_apply_node(s, hp_graph_view(g, R2, off, hp_shape1(total), nmb), mine, nmine, 1);
    }
    s->io->nmuon_groups++;
    st = hp_graph_error(g);
done:
    free(mine), free(every), free(xin), free(sc), free(rc), free(items), free(trs), free(len), free(start), free(copies);
    return st;
}

hp_status hp_pass_muon_dist(hp_optim_phase_io *io, hp_rank_graph *rg, const hp_mesh *m, const hp_optim_config *cfg,
                            float max_norm, const hp_fsdp_plan *fsdp, const hp_muon_plan *plan,
                            const hp_optim_phase_param *pp, int n, unsigned char *taken) {
    hp_graph *g = rg->g;
    int np = hp_graph_params(g, NULL, 0), plan_all = plan->dist == HP_MUON_DIST_GATHER_ALL;
    /* several ranks orthogonalise each matrix (the plan's strategy), else one owner each */
    int multi = plan_all || plan->dist == HP_MUON_DIST_ZERO1_GATHER;
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    hp_muon_mat *ms = calloc((size_t)(np ? np : 1), sizeof *ms);
    int64_t *tab = NULL;
    hp_status st = ids && ms ? HP_OK : hp_errorf("distributed Muon: out of memory");
    int nm = 0, coord[HP_MESH_MAX_DIMS], oc[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rg->ctx.rank);
    if (!st) hp_graph_params(g, ids, np);
    int maxk = 1;
    for (int a = 0; a < m->ndim; a++) maxk = m->size[a] > maxk ? m->size[a] : maxk;
    tab = st ? NULL : calloc(4 * (size_t)maxk * (size_t)(np ? np : 1), sizeof *tab);
    int *bo = st ? NULL : calloc((size_t)plan->nblk + 1, sizeof *bo);
    if (!st && (!tab || !bo)) st = hp_errorf("distributed Muon: out of memory");
    for (int k = 0; k < np && !st; k++) {
        int p = ids[k], gp = rg->global_of[p], i = -1;
        if (gp < 0 || g->vals[p].grad < 0) continue;
        for (int q = 0; q < plan->nmat && i < 0; q++) { /* its entry for this rank's coordinates on B axes */
            const hp_muon_group *gq = &plan->grp[plan->mat[q].group];
            int here = plan->mat[q].v == gp;
            for (int a = 0; a < m->ndim && here; a++) here = gq->ax[a] != HP_MUON_AX_B || gq->bcoord[a] == coord[a];
            if (here) i = q;
        }
        if (i < 0 || plan->mat[i].owner == -1) continue; /* not Muon's, or local: muon_update */
        hp_muon_mat *x = &ms[nm];
        x->ft = 0;
        if (!key_axes_cut(&x->fa, &x->ra, &x->rb, &x->cut, &plan->grp[plan->mat[i].group], m)) {
            int f2, s2, r2, c2;
            if (!key_ft(&f2, &s2, &r2, &c2, &plan->grp[plan->mat[i].group], m)) continue; /* refused by the check */
            x->ft = 1, x->fa = s2, x->ra = f2, x->rb = r2, x->cut = c2; /* the TP axis cuts, the FSDP axis gathers first */
        }
        x->p = p, x->k = k, x->piece = -1;
        /* the global matrix (a tensor-parallel rank holds a block of it) */
        x->rows = plan->mat[i].rows, x->cols = plan->mat[i].cols, x->nmats = plan->mat[i].count;
        x->numel = x->nmats * x->rows * x->cols;
        if (!multi) {
            hp_mesh_coords(oc, m, plan->mat[i].owner);
            x->of = x->fa >= 0 ? oc[x->fa] : 0, x->orr = x->ra >= 0 ? oc[x->ra] : 0;
            if (x->rb >= 0) x->orr += oc[x->rb] * m->size[x->ra];
        }
        x->nblk = 0, x->bo = NULL;
        if (!multi && !x->ft && plan->mat[i].nblk > 0 && x->fa >= 0 && x->ra < 0) { /* a team: its blocks' members */
            x->nblk = plan->mat[i].nblk, x->bo = bo + plan->mat[i].blk_at;
            for (int b = 0; b < x->nblk; b++) {
                hp_mesh_coords(oc, m, plan->blk[plan->mat[i].blk_at + b]);
                x->bo[b] = oc[x->fa];
            }
        } else if (plan->mat[i].nblk > 0) {
            st = hp_errorf("distributed Muon: '%s' is planned for a team its layout cannot have", g->vals[p].name);
            break;
        }
        x->a = tab + 4 * (size_t)maxk * (size_t)nm, x->len = x->a + maxk, x->fa_a = x->len + maxk, x->fa_len = x->fa_a + maxk;
        int K = x->fa >= 0 ? m->size[x->fa] : 1;
        if (x->fa < 0) x->cut = HP_MUON_AX_F; /* replicas only: one whole piece */
        if ((x->cut == HP_MUON_AX_SR && x->rows % K) || (x->cut == HP_MUON_AX_SC && x->cols % K)) {
            st = hp_errorf("distributed Muon: '%s' [%lld, %lld] is cut %d ways along its %s unevenly",
                           g->vals[p].name, (long long)x->rows, (long long)x->cols, K,
                           x->cut == HP_MUON_AX_SR ? "rows" : "columns");
            break;
        }
        for (int q = 0; q < K; q++) {
            if (x->cut == HP_MUON_AX_SR) /* a block of rows of every matrix */
                x->a[q] = (int64_t)q * (x->rows / K) * x->cols, x->len[q] = x->numel / K;
            else if (x->cut == HP_MUON_AX_SC) /* a block of columns: rows of the transposed matrices */
                x->a[q] = (int64_t)q * (x->cols / K) * x->rows, x->len[q] = x->numel / K;
            else if (x->fa >= 0) member_piece(&x->a[q], &x->len[q], fsdp, k, x->numel, q);
            else x->a[q] = 0, x->len[q] = x->numel;
        }
        if (x->ft) /* each FSDP member's flat range of this rank's TP block */
            for (int q = 0; q < m->size[x->ra]; q++) member_piece(&x->fa_a[q], &x->fa_len[q], fsdp, k, x->numel / K, q);
        for (int q = 0; q < n; q++)
            if ((pp[q].owner >= 0 ? pp[q].owner : pp[q].param) == p) x->piece = q, taken[q] = 1;
        int cf = x->fa >= 0 ? coord[x->fa] : 0;
        int64_t mine = x->ft ? x->fa_len[coord[x->ra]] : x->len[cf];
        if ((x->piece >= 0) != (mine > 0) || (x->piece >= 0 && hp_val_numel(g, pp[x->piece].param) != mine))
            st = hp_errorf("distributed Muon: '%s': this rank's piece does not match its %s", g->vals[p].name,
                           x->cut == HP_MUON_AX_F ? "FSDP shard" : "tensor-parallel block");
        nm++;
    }
    if (!st) qsort(ms, (size_t)nm, sizeof *ms, by_order);
    /* one group per (F axis, R axis), in the order of their first matrix */
    for (int j = 0; j < nm && !st; j++) {
        int seen = 0;
        for (int q = 0; q < j && !seen; q++)
            seen = ms[q].fa == ms[j].fa && ms[q].ra == ms[j].ra && ms[q].ft == ms[j].ft && ms[q].rb == ms[j].rb;
        if (seen) continue;
        hp_muon_grp s = {io, rg, cfg, max_norm, pp, NULL, 0, ms[j].fa, ms[j].ra, 1, 1, 0, 0, ms[j].ft, 0, ms[j].rb, 1, 0, 1};
        s.ms = malloc(sizeof *s.ms * (size_t)nm);
        if (!s.ms) {
            st = hp_errorf("distributed Muon: out of memory");
            break;
        }
        for (int q = j; q < nm; q++)
            if (ms[q].fa == s.fa && ms[q].ra == s.ra && ms[q].ft == s.ft && ms[q].rb == s.rb) s.ms[s.nm++] = ms[q];
        if (s.fa >= 0) s.K = m->size[s.fa], s.cf = coord[s.fa];
        if (s.ra >= 0) s.Rn = s.Rd = m->size[s.ra], s.cr = s.cd = coord[s.ra];
        if (s.rb >= 0) s.Rn *= m->size[s.rb], s.cr += coord[s.rb] * s.Rd;
        for (int q = 0; q < s.nm; q++) s.teams += s.ms[q].nblk > 0;
        if (s.teams && s.teams != s.nm) {
            free(s.ms);
            st = hp_errorf("distributed Muon: a group with and without teams (%d of %d matrices)", s.teams, s.nm);
            break;
        }
        /* exchange waves (not in teams): runs of the matrix order of about equal Newton–Schulz work */
        s.W = s.teams || s.K < 2 ? 1 : cfg->muon_waves > 0 ? cfg->muon_waves : 2;
        if (s.W > s.nm) s.W = s.nm > 0 ? s.nm : 1;
        double all = 0, before = 0;
        for (int q = 0; q < s.nm; q++) all += wave_cost(&s.ms[q]);
        for (int q = 0; q < s.nm; q++) {
            int w = all > 0 ? (int)(before * s.W / all) : 0;
            s.ms[q].wave = w < s.W ? w : s.W - 1;
            before += wave_cost(&s.ms[q]);
        }
        int slot = rg->ctx.nslots++;
        st = multi ? (s.ft ? hp_mg_emit_multi_ft(&s, slot, plan_all) : emit_group_multi(&s, slot, plan_all))
                   : emit_group(&s, slot);
        free(s.ms);
    }
    free(ids), free(ms), free(tab), free(bo);
    return st;
}
