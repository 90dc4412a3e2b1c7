/* parallel/muon_ft: distributed Muon under FSDP x TP (and HSDP x TP): the flat FSDP pieces gathered into
 * tensor-parallel blocks before the exchange along the TP axis, and cut back out of them after (see
 * parallel/muon_group.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/muon_dist.h"
#include "parallel/muon_group.h"
#include "parallel/rank.h"

int hp_mg_ft_front(hp_muon_grp *s, const int *send, int nsend, const char *key, int slot) {
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
        const hp_muon_mat *x = &s->ms[j];
        for (int i = 0; i < Rn; i++) cnt[i] += x->fa_len[i];
        if (x->fa_len[s->cd] <= 0) continue;
        xin[2 * nmine] = s->pp[x->piece].grad;
        xin[2 * nmine + 1] = hp_optim_state_value(g, &s->pp[x->piece], "muon.m.");
        s->io->nstates++, nmine++;
        mine += x->fa_len[s->cd];
    }
    int P = hp_mg_pack_node(s, xin, nmine, nmine, NULL, mine, key);
    char nmb[HP_NAME_LEN];
    for (int i = 0; i < Rn; i++) seg[i + 1] = seg[i] + cnt[i];
    gsum = seg[Rn];
    snprintf(nmb, sizeof nmb, "muon.ftg.%s", key);
    int G = hp_mg_act(g, gsum, nmb);
    if (G >= 0 && P >= 0) hp_comm_op_all_gather_v(g, G, P, s->ra, cnt, Rn, s->cd, slot, HP_PHASE_OPT);
    /* whole blocks in matrix order: each FSDP member's piece in member order */
    int64_t ncp = 0, *at_i = seg; /* from here: the next piece's offset in each member's segment */
    for (int j = 0; j < nm; j++) {
        const hp_muon_mat *x = &s->ms[j];
        boff[j] = bsum;
        for (int i = 0; i < Rn; i++) {
            if (x->fa_len[i] > 0) {
                int64_t *e = &cp[1 + 5 * ncp++];
                e[0] = at_i[i], e[1] = x->fa_len[i], e[2] = e[3] = e[4] = 0;
            }
            at_i[i] += x->fa_len[i];
        }
        bsum += hp_mg_blk_of(s, x);
    }
    cp[0] = ncp;
    snprintf(nmb, sizeof nmb, "muon.ftb.%s", key);
    int Bk = hp_mg_spread_node(g, G, cp, bsum, nmb);
    /* the blocks this slice sends, in send order */
    int64_t ssum = 0;
    for (int q = 0; q < nsend; q++) {
        const hp_muon_mat *x = &s->ms[send[q]];
        int64_t *e = &cp[1 + 5 * q];
        e[0] = boff[send[q]], e[1] = hp_mg_blk_of(s, x);
        int64_t tr[3];
        hp_mg_tr_of(tr, s, x);
        e[2] = tr[0], e[3] = tr[1], e[4] = tr[2];
        ssum += e[1];
    }
    cp[0] = nsend;
    snprintf(nmb, sizeof nmb, "muon.fts.%s", key);
    out = hp_mg_spread_node(g, Bk, cp, ssum, nmb);
done:
    free(xin), free(cnt), free(seg), free(cp), free(boff);
    return out;
}

void hp_mg_ft_back(hp_muon_grp *s, int U, const int64_t *at, const char *key) {
    hp_graph *g = s->rg->g;
    int nm = s->nm;
    int *mine = malloc(sizeof(int) * (size_t)(nm + 1));
    int64_t *boff = malloc(sizeof(int64_t) * (size_t)(nm + 1));
    int64_t *cp = malloc(sizeof(int64_t) * (1 + 5 * (size_t)(nm + 1)));
    if (!mine || !boff || !cp) {
        hp_graph_fail(g, hp_errorf("distributed Muon: out of memory"));
        goto done;
    }
    int64_t bsum = 0, nb = 0;
    for (int j = 0; j < nm; j++) {
        const hp_muon_mat *x = &s->ms[j];
        boff[j] = -1;
        if (at[j] < 0) continue;
        int64_t *e = &cp[1 + 5 * nb++];
        e[0] = at[j], e[1] = hp_mg_blk_of(s, x), e[2] = e[3] = e[4] = 0;
        if (x->cut == HP_MUON_AX_SC) e[2] = x->nmats, e[3] = x->cols / s->K, e[4] = x->rows; /* [c/K, r] -> [r, c/K] */
        boff[j] = bsum;
        bsum += e[1];
    }
    cp[0] = nb;
    char nmb[HP_NAME_LEN];
    snprintf(nmb, sizeof nmb, "muon.ftu.%s", key);
    int Bk = hp_mg_spread_node(g, U, cp, bsum, nmb);
    int na = 0;
    int64_t asum = 0;
    for (int j = 0; j < nm; j++) {
        const hp_muon_mat *x = &s->ms[j];
        if (x->fa_len[s->cd] <= 0 || boff[j] < 0) continue; /* only the matrices at places */
        int64_t *e = &cp[1 + 5 * na];
        e[0] = boff[j] + x->fa_a[s->cd], e[1] = x->fa_len[s->cd], e[2] = e[3] = e[4] = 0;
        mine[na++] = j;
        asum += e[1];
    }
    cp[0] = na;
    snprintf(nmb, sizeof nmb, "muon.fta.%s", key);
    int A = hp_mg_spread_node(g, Bk, cp, asum, nmb);
    hp_mg_apply_node(s, A, mine, na, 0);
done:
    free(mine), free(boff), free(cp);
}


hp_status hp_mg_emit_multi_ft(hp_muon_grp *s, int slot, int all) {
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
        if (all || s->ms[j].fa_len[s->cd] > 0) pos[j] = mine, mine += hp_mg_blk_of(s, &s->ms[j]), sel[n++] = j;
    }
    char key[32], nmb[HP_NAME_LEN];
    snprintf(key, sizeof key, "%d.%d", s->fa, s->ra);
    int S = hp_mg_ft_front(s, sel, n, key, slot);
    int64_t rsum = hp_mg_orth_tables(s, sel, n, items, len, start, rc), off = 0;
    for (int i = 0; i < s->cf; i++) off += rc[i];
    snprintf(nmb, sizeof nmb, "muon.all.%s", key);
    int R = hp_mg_act(g, rsum, nmb);
    if (R >= 0 && S >= 0) hp_comm_op_all_gather_v(g, R, S, s->fa, rc, K, s->cf, slot, HP_PHASE_OPT);
    int R2 = hp_mg_orth_node(s, R, rsum, n, items, len, start, key, "matrices");
    snprintf(nmb, sizeof nmb, "muon.mine.%s", key);
    if (R2 >= 0) hp_mg_ft_back(s, hp_graph_view(g, R2, off, hp_shape1(mine > 0 ? mine : 1), nmb), pos, key);
    s->io->nmuon_groups++;
    st = hp_graph_error(g);
done:
    free(sel), free(rc), free(pos), free(items), free(len), free(start);
    return st;
}
