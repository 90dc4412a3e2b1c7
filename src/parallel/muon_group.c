/* parallel/muon_group: distributed Muon's shared node builders (see the header). */
#include "parallel/muon_group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/muon.h"
#include "optim/muon_dist.h"
#include "parallel/rank.h"

void hp_mg_item_of(int64_t *it, const hp_muon_mat *x) {
    int tc = x->cut == HP_MUON_AX_SC;
    it[0] = tc ? x->cols : x->rows, it[1] = tc ? x->rows : x->cols, it[2] = x->nmats;
    it[3] = x->cut == HP_MUON_AX_F ? 1 : x->nmats;
    it[4] = -1;
}

void hp_mg_tr_of(int64_t *tr, const hp_muon_grp *s, const hp_muon_mat *x) {
    tr[0] = tr[1] = tr[2] = 0;
    if (x->cut != HP_MUON_AX_SC) return;
    tr[0] = x->nmats, tr[1] = x->rows, tr[2] = x->cols / s->K;
}

int hp_mg_pieces_in_w(const hp_muon_grp *s, int *out, int slice, int wave) {
    int n = 0;
    for (int64_t key = 0; key < (int64_t)s->Rn * s->K; key++)
        for (int j = 0; j < s->nm; j++) {
            const hp_muon_mat *x = &s->ms[j];
            if (hp_mg_my_len(s, x) > 0 && hp_mg_piece_key(s, x) == key && (slice < 0 || x->orr == slice) &&
                (wave < 0 || x->wave == wave))
                out[n++] = j;
        }
    return n;
}


int hp_mg_act(hp_graph *g, int64_t n, const char *name) {
    int v = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(n > 0 ? n : 1), name);
    return v;
}

int hp_mg_spread_node(hp_graph *g, int x, const int64_t *copies, int64_t total, const char *name) {
    int y = hp_mg_act(g, total, name);
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_graph_blob(g, copies, sizeof(int64_t) * (size_t)(1 + 5 * copies[0]));
    if (y >= 0 && x >= 0) hp_graph_node_into(g, &hp_op_muon_spread, &x, 1, &y, 1, &at, HP_PHASE_OPT, -1);
    return y;
}

int hp_mg_pack_node(hp_muon_grp *s, const int *xin, int npieces, int nsend, const int64_t *tr, int64_t size, const char *key) {
    hp_graph *g = s->rg->g;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.u.%s", key);
    int P = hp_mg_act(g, size, nmb);
    hp_muon_pack_cfg pc = {s->max_norm, s->cfg->muon_beta, s->cfg->muon_momentum, s->cfg->muon_nesterov, nsend};
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_pack_blob(g, &pc, tr);
    int in3[3] = {s->io->sumsq, s->io->lr, s->io->step};
    int node = P >= 0 ? hp_graph_node_list(g, &hp_op_muon_pack, in3, 3, xin, 2 * npieces, &P, 1, &at, HP_PHASE_OPT) : -1;
    if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_pack[%d pieces]", npieces);
    return P;
}

int64_t hp_mg_orth_tables(const hp_muon_grp *s, const int *sel, int ni, int64_t *items, int64_t *len, int64_t *start,
                           int64_t *rc) {
    int64_t rsum = 0;
    for (int c = 0; c < ni; c++) hp_mg_item_of(&items[HP_MUON_ITEM * c], &s->ms[sel[c]]);
    for (int i = 0; i < s->K; i++) {
        for (int c = 0; c < ni; c++) {
            const hp_muon_mat *x = &s->ms[sel[c]];
            len[(size_t)i * (size_t)ni + (size_t)c] = x->len[i];
            start[(size_t)i * (size_t)ni + (size_t)c] = x->a[i];
            rc[i] += x->len[i];
        }
        rsum += rc[i];
    }
    return rsum;
}

int hp_mg_orth_node_team(hp_muon_grp *s, int R, int Z, int front, int64_t out, int ni, const int64_t *items,
                          const int64_t *len, const int64_t *start, const char *key, const char *what) {
    hp_graph *g = s->rg->g;
    hp_muon_orth_cfg oc = {s->K, ni, s->cfg->muon_batch_floats, s->cfg->ns, front};
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.%s.%s", front ? "x0" : "orth", key);
    int R2 = hp_mg_act(g, out, nmb);
    hp_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = hp_muon_orth_blob(g, &oc, items, len, start);
    int in3[3] = {s->io->sumsq, R, Z};
    int node = R2 >= 0 && R >= 0 ? hp_graph_node_into(g, &hp_op_muon_orth, in3, Z >= 0 ? 3 : 2, &R2, 1, &at, HP_PHASE_OPT, -1)
                                 : -1;
    if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_orth[%d %s]", ni, what);
    return R2;
}

int hp_mg_orth_node(hp_muon_grp *s, int R, int64_t rsum, int ni, const int64_t *items, const int64_t *len,
                     const int64_t *start, const char *key, const char *what) {
    return hp_mg_orth_node_team(s, R, -1, 0, rsum, ni, items, len, start, key, what);
}

void hp_mg_apply_node(hp_muon_grp *s, int U, const int *sel, int n, int tr) {
    hp_graph *g = s->rg->g;
    int *xin = malloc(sizeof(int) * (size_t)(n + 1));
    float *scale = malloc(sizeof(float) * (size_t)(n + 1));
    int64_t *trs = calloc(3 * (size_t)(n + 1), sizeof *trs);
    if (!xin || !scale || !trs) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
    } else {
        for (int q = 0; q < n; q++) {
            const hp_muon_mat *x = &s->ms[sel[q]];
            xin[q] = s->pp[x->piece].param;
            scale[q] = hp_muon_scale(s->cfg->muon_scale, (long)x->rows, (long)x->cols);
            if (tr) hp_mg_tr_of(&trs[3 * q], s, x);
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

int hp_mg_replicas_gather(hp_muon_grp *s, int S2, const int64_t *agc, int64_t total, int slot, const char *key) {
    hp_graph *g = s->rg->g;
    char nmb[HP_NAME_LEN];
    int U = S2;
    if (s->Rn > 1 && s->rb < 0) {
        snprintf(nmb, sizeof nmb, "muon.upd_all.%s", key);
        U = hp_mg_act(g, total, nmb);
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
        int Ud = hp_mg_act(g, rep[ce], nmb);
        if (Ud >= 0 && S2 >= 0)
            hp_comm_op_all_gather_v(g, Ud, S2, s->ra, agc + (size_t)ce * (size_t)s->Rd, s->Rd, s->cd, slot, HP_PHASE_OPT);
        snprintf(nmb, sizeof nmb, "muon.upd_all.%s", key);
        U = hp_mg_act(g, total, nmb);
        if (U >= 0 && Ud >= 0) hp_comm_op_all_gather_v(g, U, Ud, s->rb, rep, Re, ce, slot, HP_PHASE_OPT);
        free(rep);
    }
    return U;
}
