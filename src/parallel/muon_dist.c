/* parallel/muon_dist: distributed Muon's nodes (see the header). */
#include "parallel/muon_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/muon.h"
#include "optim/muon_dist.h"
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

/* One distributed matrix (a parameter: one matrix or a 3-D stack of one shape) on this rank. */
typedef struct {
    int p, k;              /* local parameter, its index in graph order */
    int64_t rows, cols, nmats, numel;
    int fa, ra;            /* its key's axes (fa: FSDP's, or a tensor-parallel cut's) */
    int cut;               /* HP_MUON_AX_F, _SR (rows cut) or _SC (columns cut: the owner's matrix is transposed) */
    int of, orr;           /* the owner's coordinates on fa and ra (0 when absent) */
    int piece;             /* pp index of this rank's piece, -1: none */
    int64_t *a;            /* [members]: each member's piece, elements [a[i], a[i] + len[i]) */
    int64_t *len;
    int ft;                /* 1: FSDP x TP: fa is the TP axis, ra the FSDP axis, and each rank holds the flat
                            * range [fa_a[i], fa_a[i] + fa_len[i]) of its TP block (i: its FSDP coordinate);
                            * rb: HSDP's replica axis (-1: none), orr then the owner's (rb, ra) coordinates as
                            * one slice index, rb's major */
    int rb;
    int64_t *fa_a, *fa_len;
    int wave;              /* its exchange wave (grp.W) */
    int nblk;              /* a team's matrix (parallel/muon_plan.h's Teams): its blocks, block j iterated by */
    int *bo;               /* the member bo[j] on fa; 0: no team */
} mat;

/* x's Newton–Schulz work (the plan's cost without the step count) */
static double wave_cost(const mat *x) {
    double m = (double)(x->rows < x->cols ? x->rows : x->cols), n = (double)(x->rows < x->cols ? x->cols : x->rows);
    return (4.0 * m * m * n + 2.0 * m * m * m) * (double)x->nmats;
}

static int by_order(const void *x, const void *y) {
    const mat *a = x, *b = y;
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

typedef struct {
    hp_optim_phase_io *io;
    hp_rank_graph *rg;
    const hp_optim_config *cfg;
    float max_norm;
    const hp_optim_phase_param *pp;
    mat *ms; /* this group's matrices in matrix order */
    int nm;
    int fa, ra, K, Rn, cf, cr;
    int ft; /* FSDP x TP (see mat) */
    int teams; /* the group iterates its matrices in teams */
    int rb, Rd, cd; /* FSDP x TP: HSDP's replica axis (-1: none); the FSDP axis's size and this rank's coordinate on
                     * it (ra's: Rn and cr are then the slices over both, as mat's orr) */
    int W;          /* exchange waves: wave w + 1's gather and wave w - 1's return overlap wave w's Newton–Schulz */
} grp;

static int64_t my_len(const grp *s, const mat *x) { return x->len[s->cf]; }

/* The owner's item of x: (rows, cols, matrices, blocks) — transposed for a column cut, one block per
 * matrix of a tensor-parallel cut (a row block of each), one for FSDP's flat ranges. */
static void item_of(int64_t *it, const mat *x) {
    int tc = x->cut == HP_MUON_AX_SC;
    it[0] = tc ? x->cols : x->rows, it[1] = tc ? x->rows : x->cols, it[2] = x->nmats;
    it[3] = x->cut == HP_MUON_AX_F ? 1 : x->nmats;
    it[4] = -1;
}

/* A piece's transposition (muon_pack's and muon_apply's tr): a column cut's local matrices. */
static void tr_of(int64_t *tr, const grp *s, const mat *x) {
    tr[0] = tr[1] = tr[2] = 0;
    if (x->cut != HP_MUON_AX_SC) return;
    tr[0] = x->nmats, tr[1] = x->rows, tr[2] = x->cols / s->K;
}

/* order of the pieces: by (owner's replica slice, owner's member, matrix order) */
static int64_t piece_key(const grp *s, const mat *x) { return (int64_t)x->orr * s->K + x->of; }

/* Lists the matrices with a piece here by piece_key (stable: matrix order inside), the slice filter
 * slice (-1: all) and the wave filter wave (-1: all); returns how many. */
static int pieces_in_w(const grp *s, int *out, int slice, int wave) {
    int n = 0;
    for (int64_t key = 0; key < (int64_t)s->Rn * s->K; key++)
        for (int j = 0; j < s->nm; j++) {
            const mat *x = &s->ms[j];
            if (my_len(s, x) > 0 && piece_key(s, x) == key && (slice < 0 || x->orr == slice) &&
                (wave < 0 || x->wave == wave))
                out[n++] = j;
        }
    return n;
}
static int pieces_in(const grp *s, int *out, int slice) { return pieces_in_w(s, out, slice, -1); }

static int act(hp_graph *g, int64_t n, const char *name) {
    int v = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(n > 0 ? n : 1), name);
    return v;
}

/* A spread node: copies[1 + 5 n] (see optim/muon_dist.h) from x into a new value of `total` elements. */
static int spread_node(hp_graph *g, int x, const int64_t *copies, int64_t total, const char *name) {
    int y = act(g, total, name);
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_graph_blob(g, copies, sizeof(int64_t) * (size_t)(1 + 5 * copies[0]));
    if (y >= 0 && x >= 0) hp_graph_node_into(g, &hp_op_muon_spread, &x, 1, &y, 1, &at, HP_PHASE_OPT, -1);
    return y;
}

static int64_t blk_of(const grp *s, const mat *x) { return x->numel / s->K; }

/* muon_pack over the (grad, state) pairs xin[2 npieces], the first nsend of them packed (tr: their
 * transposition, NULL: none) into a new value of `size` elements, returned. */
static int pack_node(grp *s, const int *xin, int npieces, int nsend, const int64_t *tr, int64_t size, const char *key) {
    hp_graph *g = s->rg->g;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.u.%s", key);
    int P = act(g, size, nmb);
    hp_muon_pack_cfg pc = {s->max_norm, s->cfg->muon_beta, s->cfg->muon_momentum, s->cfg->muon_nesterov, nsend};
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_pack_blob(g, &pc, tr);
    int in3[3] = {s->io->sumsq, s->io->lr, s->io->step};
    int node = P >= 0 ? hp_graph_node_list(g, &hp_op_muon_pack, in3, 3, xin, 2 * npieces, &P, 1, &at, HP_PHASE_OPT) : -1;
    if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_pack[%d pieces]", npieces);
    return P;
}

/* muon_orth's tables for the matrices sel[0..ni): their items and each member's piece of them; rc[i] +=
 * member i's elements. Returns the elements of all members. */
static int64_t orth_tables(const grp *s, const int *sel, int ni, int64_t *items, int64_t *len, int64_t *start,
                           int64_t *rc) {
    int64_t rsum = 0;
    for (int c = 0; c < ni; c++) item_of(&items[HP_MUON_ITEM * c], &s->ms[sel[c]]);
    for (int i = 0; i < s->K; i++) {
        for (int c = 0; c < ni; c++) {
            const mat *x = &s->ms[sel[c]];
            len[(size_t)i * (size_t)ni + (size_t)c] = x->len[i];
            start[(size_t)i * (size_t)ni + (size_t)c] = x->a[i];
            rc[i] += x->len[i];
        }
        rsum += rc[i];
    }
    return rsum;
}

/* muon_orth of R (rsum elements, in the tables' layout) into a new value of `out` elements, returned; `what`
 * names the node ("owned", "matrices", "front", "teams"). With team items (items[.][4] >= 0): front 1: out is
 * their first iterates; else Z holds their last iterates. */
static int orth_node_team(grp *s, int R, int Z, int front, int64_t out, int ni, const int64_t *items,
                          const int64_t *len, const int64_t *start, const char *key, const char *what) {
    hp_graph *g = s->rg->g;
    hp_muon_orth_cfg oc = {s->K, ni, s->cfg->muon_batch_floats, s->cfg->ns, front};
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.%s.%s", front ? "x0" : "orth", key);
    int R2 = act(g, out, nmb);
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_orth_blob(g, &oc, items, len, start);
    int in3[3] = {s->io->sumsq, R, Z};
    int node = R2 >= 0 && R >= 0 ? hp_graph_node_into(g, &hp_op_muon_orth, in3, Z >= 0 ? 3 : 2, &R2, 1, &at, HP_PHASE_OPT, -1)
                                 : -1;
    if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_orth[%d %s]", ni, what);
    return R2;
}

static int orth_node(grp *s, int R, int64_t rsum, int ni, const int64_t *items, const int64_t *len,
                     const int64_t *start, const char *key, const char *what) {
    return orth_node_team(s, R, -1, 0, rsum, ni, items, len, start, key, what);
}

/* muon_apply of the packed updates U to the pieces of the matrices sel[0..n), in U's order; tr 1: a column
 * cut's piece came transposed (muon_pack's tr), 0: every piece as it lies. */
static void apply_node(grp *s, int U, const int *sel, int n, int tr) {
    hp_graph *g = s->rg->g;
    int *xin = malloc(sizeof(int) * (size_t)(n + 1));
    float *scale = malloc(sizeof(float) * (size_t)(n + 1));
    int64_t *trs = calloc(3 * (size_t)(n + 1), sizeof *trs);
    if (!xin || !scale || !trs) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
    } else {
        for (int q = 0; q < n; q++) {
            const mat *x = &s->ms[sel[q]];
            xin[q] = s->pp[x->piece].param;
            scale[q] = hp_muon_scale(s->cfg->muon_scale, (long)x->rows, (long)x->cols);
            if (tr) tr_of(&trs[3 * q], s, x);
        }
        hp_attrs at;
        memset(&at, 0, sizeof at);
        at.i[0] = hp_muon_apply_blob(g, s->cfg->muon_weight_decay, scale, trs, n);
        int in4[4] = {s->io->sumsq, s->io->lr, s->io->step, U};
        int node = U >= 0 ? hp_graph_node_list(g, &hp_op_muon_apply, in4, 4, xin, n, NULL, 0, &at, HP_PHASE_OPT) : -1;
        if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_apply[%d pieces]", n);
    }
    free(xin), free(scale), free(trs);
}

/* FSDP x TP, before the exchange along the TP axis (fa): the momentum where the flat pieces live, the pieces
 * gathered along the FSDP axis (ra) into whole TP blocks (matrix order), and the blocks of this FSDP slice's
 * owners in send order, a column cut's transposed. Returns the send buffer (-1: the graph's error). */
static int ft_front(grp *s, const int *send, int nsend, const char *key, int slot) {
    hp_graph *g = s->rg->g;
    int nm = s->nm, Rn = s->Rd; /* the FSDP axis */
    int *xin = malloc(sizeof(int) * 2 * (size_t)(nm + 1));
    int64_t *cnt = calloc((size_t)Rn + 1, sizeof *cnt), *seg = calloc((size_t)Rn + 1, sizeof *seg);
    int64_t *cp = malloc(sizeof(int64_t) * (1 + 5 * (size_t)(nm + 1) * (size_t)(Rn + 1)));
    int64_t *boff = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    int out = -1;
    if (!xin || !cnt || !seg || !cp || !boff) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    int nmine = 0;
    int64_t mine = 0, gsum = 0, bsum = 0;
    for (int j = 0; j < nm; j++) { /* the states in matrix order */
        const mat *x = &s->ms[j];
        for (int i = 0; i < Rn; i++) cnt[i] += x->fa_len[i];
        if (x->fa_len[s->cd] <= 0) continue;
        xin[2 * nmine] = s->pp[x->piece].grad;
        xin[2 * nmine + 1] = hp_optim_state_value(g, &s->pp[x->piece], "muon.m.");
        s->io->nstates++, nmine++;
        mine += x->fa_len[s->cd];
    }
    int P = pack_node(s, xin, nmine, nmine, NULL, mine, key);
    char nmb[HP_NAME_LEN];
    for (int i = 0; i < Rn; i++) seg[i + 1] = seg[i] + cnt[i];
    gsum = seg[Rn];
    snprintf(nmb, sizeof nmb, "muon.ftg.%s", key);
    int G = act(g, gsum, nmb);
    if (G >= 0 && P >= 0) hp_comm_op_all_gather_v(g, G, P, s->ra, cnt, Rn, s->cd, slot, HP_PHASE_OPT);
    /* whole blocks in matrix order: each FSDP member's piece in member order */
    int64_t ncp = 0, *at_i = seg; /* from here: the next piece's offset in each member's segment */
    for (int j = 0; j < nm; j++) {
        const mat *x = &s->ms[j];
        boff[j] = bsum;
        for (int i = 0; i < Rn; i++) {
            if (x->fa_len[i] > 0) {
                int64_t *e = &cp[1 + 5 * ncp++];
                e[0] = at_i[i], e[1] = x->fa_len[i], e[2] = e[3] = e[4] = 0;
            }
            at_i[i] += x->fa_len[i];
        }
        bsum += blk_of(s, x);
    }
    cp[0] = ncp;
    snprintf(nmb, sizeof nmb, "muon.ftb.%s", key);
    int Bk = spread_node(g, G, cp, bsum, nmb);
    /* the blocks this slice sends, in send order */
    int64_t ssum = 0;
    for (int q = 0; q < nsend; q++) {
        const mat *x = &s->ms[send[q]];
        int64_t *e = &cp[1 + 5 * q];
        e[0] = boff[send[q]], e[1] = blk_of(s, x);
        int64_t tr[3];
        tr_of(tr, s, x);
        e[2] = tr[0], e[3] = tr[1], e[4] = tr[2];
        ssum += e[1];
    }
    cp[0] = nsend;
    snprintf(nmb, sizeof nmb, "muon.fts.%s", key);
    out = spread_node(g, Bk, cp, ssum, nmb);
done:
    free(xin), free(cnt), free(seg), free(cp), free(boff);
    return out;
}

/* FSDP x TP, after the updates came back and were gathered along the FSDP axis (U: slice by slice, each in
 * send order; or at[j]: where matrix j's block is in U, -1: absent): the blocks in matrix order (a column
 * cut's turned back), this rank's flat pieces of them, and the update. */
static void ft_back(grp *s, int U, const int64_t *at, const char *key) {
    hp_graph *g = s->rg->g;
    int nm = s->nm;
    int *ord = malloc(sizeof(int) * (size_t)(nm + 1)), *mine = malloc(sizeof(int) * (size_t)(nm + 1));
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(nm + 1)), *boff = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    int64_t *cp = malloc(sizeof(int64_t) * (1 + 5 * (size_t)(nm + 1)));
    if (!ord || !mine || !pos || !boff || !cp) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    int64_t o = 0;
    if (at) memcpy(pos, at, sizeof *pos * (size_t)nm);
    for (int sl = 0; !at && sl < s->Rn; sl++) { /* where each matrix's block sits in U */
        int n = pieces_in(s, ord, sl);
        for (int q = 0; q < n; q++) pos[ord[q]] = o, o += blk_of(s, &s->ms[ord[q]]);
    }
    int64_t bsum = 0, nb = 0;
    for (int j = 0; j < nm; j++) {
        const mat *x = &s->ms[j];
        boff[j] = -1;
        if (pos[j] < 0) continue;
        int64_t *e = &cp[1 + 5 * nb++];
        e[0] = pos[j], e[1] = blk_of(s, x), e[2] = e[3] = e[4] = 0;
        if (x->cut == HP_MUON_AX_SC) e[2] = x->nmats, e[3] = x->cols / s->K, e[4] = x->rows; /* [c/K, r] -> [r, c/K] */
        boff[j] = bsum;
        bsum += e[1];
    }
    cp[0] = nb;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.ftu.%s", key);
    int Bk = spread_node(g, U, cp, bsum, nmb);
    int na = 0;
    int64_t asum = 0;
    for (int j = 0; j < nm; j++) {
        const mat *x = &s->ms[j];
        if (x->fa_len[s->cd] <= 0) continue;
        if (boff[j] < 0) {
            hp_graph_fail(g, hp_errorf("distributed Muon: '%s': no update for this rank's piece", g->vals[x->p].name));
            goto done;
        }
        int64_t *e = &cp[1 + 5 * na];
        e[0] = boff[j] + x->fa_a[s->cd], e[1] = x->fa_len[s->cd], e[2] = e[3] = e[4] = 0;
        mine[na++] = j;
        asum += e[1];
    }
    cp[0] = na;
    snprintf(nmb, sizeof nmb, "muon.fta.%s", key);
    int A = spread_node(g, Bk, cp, asum, nmb);
    apply_node(s, A, mine, na, 0);
done:
    free(ord), free(mine), free(pos), free(boff), free(cp);
}

/* ---- teams (parallel/muon_plan.h's Teams): every matrix of the group iterated step by step, each rank its
 * row blocks, the rows traded every step ---- */

static int64_t it_r(const mat *x) { return x->rows < x->cols ? x->rows : x->cols; }
static int64_t it_c(const mat *x) { return x->rows < x->cols ? x->cols : x->rows; }
static int64_t nb_of(const mat *x) { return hp_ns_blocks((long)x->rows, (long)x->cols); }
/* rows of block j (a stack's blocks: matrix after matrix) */
static int64_t brows(const mat *x, int j) {
    int64_t r = it_r(x), b = j % nb_of(x);
    return (b + 1) * HP_NS_ROW_BLOCK < r ? HP_NS_ROW_BLOCK : r - b * HP_NS_ROW_BLOCK;
}
/* member p's rows of x: all, or those of its blocks before block `before` */
static int64_t rows_of(const mat *x, int p, int before) {
    int64_t n = 0;
    for (int j = 0; j < before; j++) n += x->bo[j] == p ? brows(x, j) : 0;
    return n;
}
/* p's rows of matrix k of x (a stack's k-th; 0 for a plain matrix) */
static int64_t rows_k(const mat *x, int p, int k) {
    int nb = (int)nb_of(x);
    return rows_of(x, p, (k + 1) * nb) - rows_of(x, p, k * nb);
}
/* 1 if p iterates matrix k of x: holds a block of it, or leads x (the lead gathers every last iterate) */
static int member_k(const mat *x, int p, int k) { return x->bo[0] == p || rows_k(x, p, k) > 0; }
static int is_member(const mat *x, int p) { return x->nblk > 0 && (x->bo[0] == p || rows_of(x, p, x->nblk) > 0); }
static int64_t wid(const mat *x, int w) { return w ? it_c(x) : it_r(x); }

/* Elements of matrix k of tl's matrices that p sends me (rows_k of p, width w) in a trade: the matrices both
 * iterate, in order; *at: where matrix (q, k)'s rows start among them (q, k excluded). */
static int64_t shared_rows(int64_t *at, const grp *s, const int *tl, int ntl, int p, int me, int q0, int k0, int w) {
    int64_t n = 0;
    *at = -1;
    for (int q = 0; q < ntl; q++) {
        const mat *x = &s->ms[tl[q]];
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
static int trade(grp *s, int Mine, const int *tl, int ntl, int w, int slot, const char *name) {
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
            const mat *x = &s->ms[tl[q]];
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
    int Send = spread_node(g, Mine, cp, ssum, nmb);
    snprintf(nmb, sizeof nmb, "%.*s.recv", HP_NAME_LEN - 8, name);
    int Recv = act(g, rsum, nmb);
    if (Send >= 0 && Recv >= 0) hp_comm_op_all_to_all_v(g, Recv, Send, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    /* each matrix's blocks in order, from their iterators' segments */
    ncopy = 0;
    for (int q = 0; q < ntl; q++) {
        const mat *x = &s->ms[tl[q]];
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
    out = spread_node(g, Recv, cp2, full, name);
done:
    free(sc), free(rc), free(seg), free(cp), free(cp2);
    return out;
}

/* The lead's first iterates X0 (its led matrices of tl, in order, x0 elements) to every iterator of each,
 * put together in tl's order (holes where this rank iterates no matrix of a stack). */
static int deal_x0(grp *s, int X0, const int *tl, int ntl, int slot, const char *key) {
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
            const mat *x = &s->ms[tl[q]];
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
            const mat *x = &s->ms[tl[q]];
            for (int k = 0; x->bo[0] == p && k < x->nmats; k++) rc[p] += member_k(x, me, k) ? it_r(x) * it_c(x) : 0;
        }
        ssum += sc[p], rsum += rc[p];
        seg[p + 1] = seg[p] + rc[p];
    }
    cp[0] = ncopy;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.x0.%s.send", key);
    int Send = spread_node(g, X0, cp, ssum, nmb);
    snprintf(nmb, sizeof nmb, "muon.x0.%s.recv", key);
    int Recv = act(g, rsum, nmb);
    if (Send >= 0 && Recv >= 0) hp_comm_op_all_to_all_v(g, Recv, Send, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    int64_t *at = seg; /* from here: the next matrix's place in each lead's segment */
    ncopy = 0;
    for (int q = 0; q < ntl; q++) {
        const mat *x = &s->ms[tl[q]];
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
    out = spread_node(g, Recv, cp, full, nmb);
done:
    free(sc), free(rc), free(seg), free(cp);
    return out;
}

/* muon_team of one step's half over the iterates X (and the Gram matrices A) into a new value of n elements. */
static int team_node(grp *s, int mode, int step, int X, int A, const int64_t *tasks, int ntask, int64_t n,
                     const char *name) {
    hp_graph *g = s->rg->g;
    hp_muon_team_cfg c = {mode, ntask, {0, 0, 0}};
    if (mode == HP_MUON_TEAM_STEP) memcpy(c.coef, s->cfg->ns.coeffs[step], sizeof c.coef);
    int y = act(g, n, name);
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

/* The team regime's Newton–Schulz of this rank's owned matrices (owned[0..ni), the items and tables of
 * orth_tables, rsum elements received in R): their first iterates, the steps in teams, the updates packed as
 * muon_orth packs them. Returns that value. */
static int team_orth(grp *s, int R, int64_t rsum, const int *owned, int ni, int64_t *items, const int64_t *len,
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
        const mat *x = &s->ms[j];
        if (!is_member(x, me)) continue;
        xoff[ntl] = xs, aoff[ntl] = as, tl[ntl++] = j;
        xs += x->nmats * it_r(x) * it_c(x), as += x->nmats * it_r(x) * it_r(x);
    }
    /* the owned (led) matrices' first iterates at their place in the front's output */
    for (int c = 0; c < ni; c++) {
        items[HP_MUON_ITEM * c + 4] = x0;
        x0 += s->ms[owned[c]].nmats * it_r(&s->ms[owned[c]]) * it_c(&s->ms[owned[c]]);
    }
    int X0 = orth_node_team(s, R, -1, 1, x0, ni, items, len, start, key, "front");
    int X = deal_x0(s, X0, tl, ntl, slot, key);
    /* this rank's runs of blocks: GRAM's rows [rows, r], STEP's [rows, c] */
    int nt = 0;
    int64_t og = 0, os = 0, scr = 0;
    for (int q = 0; q < ntl; q++) {
        const mat *x = &s->ms[tl[q]];
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
    out = orth_node_team(s, R, X, 0, rsum, ni, items, len, start, key, "teams");
done:
    free(tl), free(xoff), free(aoff), free(tg), free(ts);
    return out;
}

/* The updates S2 (this slice's pieces of a wave's matrices, in send order) to every replica: U in slice order
 * (total elements; agc: per slice). */
static int replicas_gather(grp *s, int S2, const int64_t *agc, int64_t total, int slot, const char *key) {
    hp_graph *g = s->rg->g;
    char nmb[HP_NAME_LEN];
    int U = S2;
    if (s->Rn > 1 && s->rb < 0) {
        snprintf(nmb, sizeof nmb, "muon.upd_all.%s", key);
        U = act(g, total, nmb);
        if (U >= 0 && S2 >= 0) hp_comm_op_all_gather_v(g, U, S2, s->ra, agc, s->Rn, s->cr, slot, HP_PHASE_OPT);
    } else if (s->Rn > 1) { /* two replica axes: over ra (this outer coordinate's slices), then over rb */
        int Re = s->Rn / s->Rd, ce = s->cr / s->Rd;
        int64_t *rep = calloc((size_t)Re, sizeof *rep);
        if (!rep) {
            hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
            return -1;
        }
        for (int e = 0; e < Re; e++)
            for (int d = 0; d < s->Rd; d++) rep[e] += agc[e * s->Rd + d];
        snprintf(nmb, sizeof nmb, "muon.upd_rep.%s", key);
        int Ud = act(g, rep[ce], nmb);
        if (Ud >= 0 && S2 >= 0)
            hp_comm_op_all_gather_v(g, Ud, S2, s->ra, agc + (size_t)ce * (size_t)s->Rd, s->Rd, s->cd, slot, HP_PHASE_OPT);
        snprintf(nmb, sizeof nmb, "muon.upd_all.%s", key);
        U = act(g, total, nmb);
        if (U >= 0 && Ud >= 0) hp_comm_op_all_gather_v(g, U, Ud, s->rb, rep, Re, ce, slot, HP_PHASE_OPT);
        free(rep);
    }
    return U;
}

static hp_status emit_group(grp *s, int slot) {
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
    hp_status st = HP_OK;
    if (!send || !rest || !xin || !owned || !sc || !rc || !agc || !items || !trs || !len || !start || !wv || !wn) {
        st = hp_errorf("distributed Muon: out of memory");
        goto done;
    }
    /* pack: the pieces sent to owners of this replica slice (wave by wave), then the others (momentum only) */
    int nsend = 0, nrest = 0, nx = 0;
    for (int w = 0; w < W; w++) nsend += pieces_in_w(s, send + nsend, s->cr, w);
    int64_t ssum = 0;
    char nmb[HP_NAME_LEN];
    char key[32];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    for (int q = 0; q < nsend; q++) { /* per wave and member: the elements sent */
        const mat *x = &s->ms[send[q]];
        int64_t e = s->ft ? blk_of(s, x) : my_len(s, x);
        sc[(size_t)x->wave * (size_t)K + (size_t)x->of] += e, wv[3 * x->wave] += e, ssum += e;
    }
    for (int w = 1; w < W; w++) wv[3 * w + 1] = wv[3 * (w - 1) + 1] + wv[3 * (w - 1)];
    for (int j = 0; j < nm; j++) {
        const mat *x = &s->ms[j];
        int64_t e = s->ft ? blk_of(s, x) : my_len(s, x);
        wv[3 * x->wave + 2] += e, agc[(size_t)x->wave * (size_t)s->Rn + (size_t)x->orr] += e;
    }
    int S = -1;
    if (s->ft) {
        S = ft_front(s, send, nsend, key, slot);
    } else {
        for (int j = 0; j < nm; j++)
            if (my_len(s, &s->ms[j]) > 0 && s->ms[j].orr != s->cr) rest[nrest++] = j;
        /* the states in matrix order, the same on every rank whatever it owns (checkpoints find a replicated
         * state by its value id on every rank) */
        int *state = malloc(sizeof(int) * (size_t)(nm + 1));
        if (!state) {
            st = hp_errorf("distributed Muon: out of memory");
            goto done;
        }
        for (int j = 0; j < nm; j++) {
            state[j] = my_len(s, &s->ms[j]) > 0 ? hp_optim_state_value(g, &s->pp[s->ms[j].piece], "muon.m.") : -1;
            s->io->nstates += state[j] >= 0;
        }
        for (int q = 0; q < nsend + nrest; q++) {
            int j = q < nsend ? send[q] : rest[q - nsend];
            xin[nx++] = s->pp[s->ms[j].piece].grad;
            xin[nx++] = state[j];
        }
        for (int q = 0; q < nsend; q++) tr_of(&trs[3 * q], s, &s->ms[send[q]]);
        S = pack_node(s, xin, nsend + nrest, nsend, trs, ssum, key);
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
        int64_t rsum = orth_tables(s, owned, ni, items, len, start, rc);
        const int64_t *scw = sc + (size_t)w * (size_t)K;
        snprintf(nmb, sizeof nmb, "muon.sent.%s", kw);
        int Sw = W > 1 && S >= 0 && wv[3 * w] > 0 ? hp_graph_view(g, S, wv[3 * w + 1], hp_shape1(wv[3 * w]), nmb) : S;
        int R = Sw;
        if (K > 1) {
            snprintf(nmb, sizeof nmb, "muon.owned.%s", kw);
            R = act(g, rsum, nmb);
            int wt = R >= 0 && Sw >= 0 ? hp_comm_op_all_to_all_v(g, R, Sw, s->fa, scw, rc, K, sl, HP_PHASE_OPT) : -1;
            wn[5 * w + 2] = wt >= 0 ? wt - 1 : -1;
        }
        int R2 = s->teams ? team_orth(s, R, rsum, owned, ni, items, len, start, kw, sl)
                          : orth_node(s, R, rsum, ni, items, len, start, kw, "owned");
        int S2 = R2;
        if (K > 1) {
            snprintf(nmb, sizeof nmb, "muon.upd.%s", kw);
            S2 = act(g, wv[3 * w], nmb);
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
        int U = replicas_gather(s, wn[5 * w], agc + (size_t)w * (size_t)s->Rn, wv[3 * w + 2], wn[5 * w + 1], kw);
        if (s->ft) {
            ft_back(s, U, NULL, key);
            continue;
        }
        int na = 0, *ord = rest; /* rest no longer needed */
        for (int sl = 0; sl < s->Rn; sl++) na += pieces_in_w(s, ord + na, sl, w);
        apply_node(s, U, ord, na, 1);
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
        free(start), free(wv), free(wn);
    return st;
}

/* Several ranks orthogonalise each matrix (the plan's ZERO1_GATHER: every member whose piece touches it;
 * all: GATHER_ALL, every member), each of them from every member's piece, and each holder takes its own
 * piece of the update from its own result: no return, no replicas' gather (every replica slice does the
 * same). */
static hp_status emit_group_multi(grp *s, int slot, int all) {
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
        if (my_len(s, &s->ms[j]) > 0) mine[nmine++] = j;
    }
    for (int q = 0; q < nmine; q++) { /* states first, in matrix order (as emit_group) */
        const mat *x = &s->ms[mine[q]];
        xin[nx++] = s->pp[x->piece].grad;
        xin[nx++] = hp_optim_state_value(g, &s->pp[x->piece], "muon.m.");
        s->io->nstates++;
        total += my_len(s, x);
        tr_of(&trs[3 * q], s, x);
    }
    char nmb[HP_NAME_LEN], key[32];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    int S = pack_node(s, xin, nmine, nmine, trs, total, key);
    /* the matrices this rank orthogonalises (every one, or those it touches), each from every member's piece */
    const int *sel = all ? every : mine;
    int ni = all ? nm : nmine;
    int64_t rsum = orth_tables(s, sel, ni, items, len, start, rc), off = 0;
    for (int i = 0; i < s->cf; i++) off += rc[i];
    int R = S;
    if (K > 1 && all) {
        snprintf(nmb, sizeof nmb, "muon.all.%s", key);
        R = act(g, rsum, nmb);
        if (R >= 0) hp_comm_op_all_gather_v(g, R, S, s->fa, rc, K, s->cf, slot, HP_PHASE_OPT);
    } else if (K > 1) {
        /* to each member its pieces of the matrices it touches, matrix order (a piece once per toucher) */
        int64_t ncp = 0, dsum = 0;
        for (int i = 0; i < K; i++) {
            int64_t so = 0;
            for (int q = 0; q < nmine; q++) {
                const mat *x = &s->ms[mine[q]];
                if (x->len[i] > 0) {
                    int64_t *e = &copies[1 + 5 * ncp];
                    e[0] = so, e[1] = my_len(s, x), e[2] = e[3] = e[4] = 0;
                    sc[i] += my_len(s, x), ncp++;
                }
                so += my_len(s, x);
            }
            dsum += sc[i];
        }
        copies[0] = ncp;
        snprintf(nmb, sizeof nmb, "muon.spread.%s", key);
        int D = spread_node(g, S, copies, dsum, nmb);
        snprintf(nmb, sizeof nmb, "muon.touched.%s", key);
        R = act(g, rsum, nmb);
        if (R >= 0 && D >= 0) hp_comm_op_all_to_all_v(g, R, D, s->fa, sc, rc, K, slot, HP_PHASE_OPT);
    }
    int R2 = orth_node(s, R, rsum, ni, items, len, start, key, "matrices");
    if (nmine > 0 && R2 >= 0) { /* this rank's pieces: its own segment of the result, matrix order */
        snprintf(nmb, sizeof nmb, "muon.mine.%s", key);
        apply_node(s, hp_graph_view(g, R2, off, hp_shape1(total), nmb), mine, nmine, 1);
    }
    s->io->nmuon_groups++;
    st = hp_graph_error(g);
done:
    free(mine), free(every), free(xin), free(sc), free(rc), free(items), free(trs), free(len), free(start), free(copies);
    return st;
}

/* FSDP x TP under the strategies that orthogonalise on several ranks: the TP blocks rebuilt from the FSDP pieces
 * (ft_front) of every matrix (all) or of those this rank's piece touches (the same along the TP axis: FSDP cuts
 * every TP block alike), gathered whole along the TP axis, orthogonalised here, and this rank's block of each
 * cut back into its flat pieces (ft_back). */
static hp_status emit_group_multi_ft(grp *s, int slot, int all) {
    hp_graph *g = s->rg->g;
    int nm = s->nm, K = s->K;
    int *sel = malloc(sizeof(int) * (size_t)(nm + 1));
    int64_t *rc = calloc((size_t)K, sizeof *rc), *pos = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    int64_t *items = malloc(sizeof(int64_t) * HP_MUON_ITEM * (size_t)(nm + 1));
    int64_t *len = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    int64_t *start = malloc(sizeof(int64_t) * (size_t)K * (size_t)(nm + 1));
    hp_status st = HP_OK;
    if (!sel || !rc || !pos || !items || !len || !start) {
        st = hp_errorf("distributed Muon: out of memory");
        goto done;
    }
    int n = 0;
    int64_t mine = 0;
    for (int j = 0; j < nm; j++) {
        pos[j] = -1;
        if (all || s->ms[j].fa_len[s->cd] > 0) pos[j] = mine, mine += blk_of(s, &s->ms[j]), sel[n++] = j;
    }
    char key[32], nmb[HP_NAME_LEN];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    int S = ft_front(s, sel, n, key, slot);
    int64_t rsum = orth_tables(s, sel, n, items, len, start, rc), off = 0;
    for (int i = 0; i < s->cf; i++) off += rc[i];
    snprintf(nmb, sizeof nmb, "muon.all.%s", key);
    int R = act(g, rsum, nmb);
    if (R >= 0 && S >= 0) hp_comm_op_all_gather_v(g, R, S, s->fa, rc, K, s->cf, slot, HP_PHASE_OPT);
    int R2 = orth_node(s, R, rsum, n, items, len, start, key, "matrices");
    snprintf(nmb, sizeof nmb, "muon.mine.%s", key);
    if (R2 >= 0) ft_back(s, hp_graph_view(g, R2, off, hp_shape1(mine > 0 ? mine : 1), nmb), pos, key);
    s->io->nmuon_groups++;
    st = hp_graph_error(g);
done:
    free(sel), free(rc), free(pos), free(items), free(len), free(start);
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
    mat *ms = calloc((size_t)(np ? np : 1), sizeof *ms);
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
        mat *x = &ms[nm];
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
        grp s = {io, rg, cfg, max_norm, pp, NULL, 0, ms[j].fa, ms[j].ra, 1, 1, 0, 0, ms[j].ft, 0, ms[j].rb, 1, 0, 1};
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
        /* exchange waves (not in teams nor FSDP x TP): runs of the matrix order of about equal Newton–Schulz work */
        s.W = s.teams || s.ft || s.K < 2 ? 1 : cfg->muon_waves > 0 ? cfg->muon_waves : 2;
        if (s.W > s.nm) s.W = s.nm > 0 ? s.nm : 1;
        double all = 0, before = 0;
        for (int q = 0; q < s.nm; q++) all += wave_cost(&s.ms[q]);
        for (int q = 0; q < s.nm; q++) {
            int w = all > 0 ? (int)(before * s.W / all) : 0;
            s.ms[q].wave = w < s.W ? w : s.W - 1;
            before += wave_cost(&s.ms[q]);
        }
        int slot = rg->ctx.nslots++;
        st = multi ? (s.ft ? emit_group_multi_ft(&s, slot, plan_all) : emit_group_multi(&s, slot, plan_all))
                   : emit_group(&s, slot);
        free(s.ms);
    }
    free(ids), free(ms), free(tab), free(bo);
    return st;
}
