/* Expert parallelism's exchange (parallel/ep_ops: ep_send, ep_return,
 * ep_resend), run node by node on rank-threads of a 2 x 4 mesh along its
 * second axis (4 members, 8 experts: 2 each). The routing is made so that
 * member 3's experts get no row, expert 2 (member 1's first) none while
 * expert 3 has rows, member 2 sends no row at all, and member 0's last
 * rows belong to no expert. Checks: the received rows grouped by expert,
 * then source, then position, their experts and sources, nothing past them;
 * the rows back in their places (rows of no expert 0); the gradient's way
 * there; the descriptors; a capacity applied by the owners (the slots kept
 * are those one rank's router keeps over the group's tokens, ties at the
 * threshold to the earlier token; the dropped rows last, expert -1); and the
 * global operators' one-member form. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/ep.h"
#include "parallel/rank.h"
#include "testutil.h"

#define G 4 /* members along the axis */
#define E 8
#define AXIS 1
#define R 6 /* rows per member */
#define C 3

/* member m's expert of row r (grouped ascending, -1 last) */
static int32_t eid_of(int m, int r) {
    static const int32_t t[G][R] = {
        {0, 0, 1, 5, -1, -1}, /* rows of no expert last */
        {0, 1, 3, 3, 4, 5},   {-1, -1, -1, -1, -1, -1}, /* member 2 sends nothing */
        {1, 3, 4, 4, 4, 5},
    };
    return t[m][r];
}

static float val(int m, int r, int c) { return (float)(m * 100 + r * 10 + c) + 0.25f; }

typedef struct {
    hp_comm_world *w;
    const hp_mesh *m;
    const hp_mesh_comm *mc;
    int rank;
} job;

static void run_node(const hp_kctx *k, const hp_graph *g, int node, void **buf) {
    const hp_node *n = &g->nodes[node];
    hp_tensor in[HP_MAX_IN], out[HP_MAX_OUT];
    for (int q = 0; q < n->nin; q++) in[q] = (hp_tensor){g->vals[n->in[q]].dtype, g->vals[n->in[q]].shape, buf[n->in[q]]};
    for (int q = 0; q < n->nout; q++)
        out[q] = (hp_tensor){g->vals[n->out[q]].dtype, g->vals[n->out[q]].shape, buf[n->out[q]]};
    n->op->run(k, n, in, out);
}

static void *rank_main(void *arg) {
    job *j = arg;
    int coord[2];
    hp_mesh_coords(coord, j->m, j->rank);
    int me = coord[1];
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    if (!g) return NULL;
    int xp = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(R, C), "xp");
    int eid = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(R), "eid");
    int xr = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(G * R, C), "xr");
    int er = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(G * R), "er");
    int src = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape2(G * R, 2), "src");
    int yp = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(R, C), "yp");
    int dyr = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(G * R, C), "dyr");
    hp_attrs a = {.i = {G, E, AXIS}};
    int sin[2] = {xp, eid}, sout[3] = {xr, er, src}, rin[3] = {xr, src, eid}, qin[3] = {yp, src, eid};
    hp_graph_node_into(g, &hp_op_ep_send, sin, 2, sout, 3, &a, HP_PHASE_FWD, -1);
    hp_graph_node_into(g, &hp_op_ep_return, rin, 3, &yp, 1, &a, HP_PHASE_FWD, -1);
    hp_graph_node_into(g, &hp_op_ep_resend, qin, 3, &dyr, 1, &a, HP_PHASE_BWD, -1);
    CHECK_OK(hp_graph_status(g));
    for (int node = 0; node < 3; node++) {
        hp_coll_desc d;
        CHECK(hp_coll_describe(&d, g, &g->nodes[node]));
        CHECK(d.kind == HP_COLL_ALL_TO_ALL && d.role == HP_COLL_BLOCKING && d.group == HP_COLL_GROUP_AXIS &&
              d.axis == AXIS && d.bytes > 0);
    }
    void *buf[7];
    for (int v = 0; v < 7; v++) {
        size_t n = (size_t)hp_val_numel(g, v) + 1; /* a guard past each */
        buf[v] = malloc(4 * n);
        memset(buf[v], 0xff, 4 * n);
    }
    for (int r = 0; r < R; r++) {
        ((int32_t *)buf[eid])[r] = eid_of(me, r);
        for (int c = 0; c < C; c++) ((float *)buf[xp])[r * C + c] = val(me, r, c);
    }
    hp_rank_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rank = j->rank;
    ctx.comm = hp_comm_world_rank(j->w, j->rank);
    ctx.mesh = j->m;
    ctx.mc = j->mc;
    ctx.world_group = hp_comm_world_group(j->w);
    ctx.world_size = hp_comm_world_size(j->w);
    CHECK_OK(hp_rank_ctx_alloc(&ctx));
    size_t sc = 0;
    for (int node = 0; node < 3; node++) {
        size_t s = g->nodes[node].op->scratch(g, &g->nodes[node], 1);
        sc = s > sc ? s : sc;
    }
    float *scratch = malloc(sizeof(float) * sc);
    hp_status err = HP_OK;
    hp_kctx k = {.graph = g, .rank = &ctx, .err = &err, .scratch = scratch};
    run_node(&k, g, 0, buf);
    CHECK_OK(err);
    /* received: own experts 2 me, 2 me + 1; for each, sources in order, their rows in order */
    int bad = 0, r = 0;
    const float *x = buf[xr];
    const int32_t *e = buf[er], *s = buf[src];
    for (int jx = 0; jx < 2; jx++) {
        int ex = 2 * me + jx;
        for (int m = 0; m < G; m++) {
            int pos = 0; /* position among the rows m sent to me */
            for (int q = 0; q < R; q++) {
                int32_t qe = eid_of(m, q);
                if (qe < 2 * me || qe >= 2 * me + 2) continue;
                if (qe == ex) {
                    for (int c = 0; c < C; c++) bad += x[r * C + c] != val(m, q, c);
                    bad += e[r] != ex || s[2 * r] != m || s[2 * r + 1] != pos;
                    r++;
                }
                pos++;
            }
        }
    }
    int got = r;
    for (; r < G * R; r++) bad += e[r] != -1 || s[2 * r] != -1 || s[2 * r + 1] != -1;
    bad += ((int32_t *)buf[er])[G * R] != -1 || ((int32_t *)buf[src])[2 * G * R] != -1; /* guards: 0xff.. */
    CHECKF(!bad, "member %d: ep_send: %d wrong (%d rows received)", me, bad, got);
    CHECKF(me != 3 || got == 0, "member 3 owns experts no row chose, yet received %d rows", got);
    /* the experts' work: a row times 2; back to their places */
    for (int q = 0; q < G * R * C; q++) ((float *)buf[xr])[q] *= 2.0f;
    run_node(&k, g, 1, buf);
    CHECK_OK(err);
    bad = 0;
    for (int q = 0; q < R; q++)
        for (int c = 0; c < C; c++)
            bad += ((float *)buf[yp])[q * C + c] != (eid_of(me, q) >= 0 ? 2.0f * val(me, q, c) : 0.0f);
    CHECKF(!bad, "member %d: ep_return: %d wrong", me, bad);
    /* the gradient's way: yp's rows sent as xp's were */
    run_node(&k, g, 2, buf);
    CHECK_OK(err);
    bad = 0;
    for (int q = 0; q < G * R; q++)
        for (int c = 0; c < C; c++)
            bad += ((float *)buf[dyr])[q * C + c] != (q < got ? ((float *)buf[xr])[q * C + c] : 0.0f);
    CHECKF(!bad, "member %d: ep_resend: %d wrong", me, bad);
    free(scratch);
    hp_rank_ctx_free(&ctx);
    for (int v = 0; v < 7; v++) free(buf[v]);
    hp_graph_destroy(g);
    return NULL;
}

/* ---- a capacity applied by the experts' owners: the same slots dropped as one rank's router would over the
 * group's tokens (the highest scores kept, ties to the earlier token) ---- */

#define CN 3 /* tokens per member */
#define CK 2 /* slots per token */

static int32_t cap_index(int m, int n, int j) { /* experts 0 and 1 crowded, 3 once */
    static const int32_t t[G][CN][CK] = {{{0, 1}, {0, 2}, {1, 0}},
                                          {{0, 1}, {1, 0}, {0, 3}},
                                          {{1, 0}, {0, 1}, {2, 1}},
                                          {{0, 1}, {1, 2}, {0, 1}}};
    return t[m][n][j];
}

static float cap_score(int m, int n, int j) { /* ties at the threshold: 0.5 recurs */
    static const float t[G][CN][CK] = {{{0.5f, 0.3f}, {0.5f, 0.4f}, {0.7f, 0.2f}},
                                        {{0.9f, 0.1f}, {0.5f, 0.5f}, {0.3f, 0.6f}},
                                        {{0.5f, 0.5f}, {0.6f, 0.5f}, {0.4f, 0.5f}},
                                        {{0.5f, 0.2f}, {0.5f, 0.3f}, {0.8f, 0.5f}}};
    return t[m][n][j];
}

/* Reference: is member m's slot (n, j) kept by its expert over the whole group, with capacity cap? */
static int cap_kept(int m, int n, int j, int cap) {
    int e = cap_index(m, n, j), better = 0;
    float sc = cap_score(m, n, j);
    for (int m2 = 0; m2 < G; m2++)
        for (int n2 = 0; n2 < CN; n2++)
            for (int j2 = 0; j2 < CK; j2++) {
                if (cap_index(m2, n2, j2) != e) continue;
                float s2 = cap_score(m2, n2, j2);
                int earlier = m2 * CN * CK + n2 * CK + j2 < m * CN * CK + n * CK + j;
                better += s2 > sc || (s2 == sc && earlier);
            }
    return better < cap;
}

static void *cap_main(void *arg) {
    job *j = arg;
    int coord[2];
    hp_mesh_coords(coord, j->m, j->rank);
    int me = coord[1], Rm = CN * CK;
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    if (!g) return NULL;
    int xp = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(Rm, C), "xp");
    int eid = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(Rm), "eid");
    int sc = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(CN, CK), "scores");
    int rowof = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape2(CN, CK), "rowof");
    int xr = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(G * Rm, C), "xr");
    int er = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(G * Rm), "er");
    int src = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape2(G * Rm, 2), "src");
    hp_attrs a = {.i = {G, E, AXIS}, .f = {1.0}}; /* capacity ceil(CN G CK / E x 1) = 3 */
    int cap = (CN * G * CK + E - 1) / E;
    int sin[4] = {xp, eid, sc, rowof}, sout[3] = {xr, er, src};
    hp_graph_node_into(g, &hp_op_ep_send, sin, 4, sout, 3, &a, HP_PHASE_FWD, -1);
    CHECK_OK(hp_graph_status(g));
    void *buf[7];
    for (int v = 0; v < 7; v++) buf[v] = calloc((size_t)hp_val_numel(g, v) + 1, 4);
    /* the dispatch's layout: rows grouped by expert, in slot order within one */
    int r = 0;
    for (int e = 0; e < E; e++)
        for (int n = 0; n < CN; n++)
            for (int k2 = 0; k2 < CK; k2++)
                if (cap_index(me, n, k2) == e) {
                    ((int32_t *)buf[eid])[r] = e, ((int32_t *)buf[rowof])[n * CK + k2] = r;
                    for (int c = 0; c < C; c++) ((float *)buf[xp])[r * C + c] = val(me, n * CK + k2, c);
                    r++;
                }
    for (int n = 0; n < CN; n++)
        for (int k2 = 0; k2 < CK; k2++) ((float *)buf[sc])[n * CK + k2] = cap_score(me, n, k2);
    hp_rank_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rank = j->rank, ctx.comm = hp_comm_world_rank(j->w, j->rank), ctx.mesh = j->m, ctx.mc = j->mc;
    ctx.world_group = hp_comm_world_group(j->w), ctx.world_size = hp_comm_world_size(j->w);
    CHECK_OK(hp_rank_ctx_alloc(&ctx));
    float *scratch = malloc(sizeof(float) * g->nodes[0].op->scratch(g, &g->nodes[0], 1));
    hp_status err = HP_OK;
    hp_kctx k = {.graph = g, .rank = &ctx, .err = &err, .scratch = scratch};
    run_node(&k, g, 0, buf);
    CHECK_OK(err);
    /* every slot of the group routed to my experts: kept rows first (expert, then source, position), then the
     * dropped ones (-1); each as the reference says */
    const int32_t *e = buf[er], *s = buf[src];
    int bad = 0, kept = 0, seen_drop = 0, got = 0;
    for (int q = 0; q < G * Rm; q++) {
        if (s[2 * q] < 0) break;
        got++;
        int m = s[2 * q], pos = s[2 * q + 1], found = 0;
        int sent = 0; /* member m's slot at position pos among the rows it sent to me */
        for (int e2 = 0; e2 < E && !found; e2++)
            for (int n = 0; n < CN && !found; n++)
                for (int k2 = 0; k2 < CK && !found; k2++) {
                    if (cap_index(m, n, k2) != e2 || e2 / (E / G) != me) continue;
                    if (sent++ != pos) continue;
                    found = 1;
                    int want = cap_kept(m, n, k2, cap);
                    if (e[q] >= 0) bad += !want || seen_drop || e[q] != e2, kept++;
                    else bad += want, seen_drop = 1;
                }
        bad += !found;
    }
    int expect = 0;
    for (int m = 0; m < G; m++)
        for (int n = 0; n < CN; n++)
            for (int k2 = 0; k2 < CK; k2++) expect += cap_index(m, n, k2) / (E / G) == me;
    CHECKF(!bad && got == expect, "member %d: capacity: %d wrong, %d of %d rows (%d kept)", me, bad, got, expect,
           kept);
    free(scratch);
    hp_rank_ctx_free(&ctx);
    for (int v = 0; v < 7; v++) free(buf[v]);
    hp_graph_destroy(g);
    return NULL;
}

/* The global operators (one process holds every member's rows: validation mode's reference): the rows stay, the
 * sources are the positions, the room for the other members' rows empty; with a capacity the best rows of each
 * expert first, the dropped ones after with no expert and no source, returned as zeros. */
static void global_form(void) {
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    int xp = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(3, 2), "xp");
    int eid = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(3), "eid");
    hp_attrs a = {.i = {1, 2, 0}};
    int in[2] = {xp, eid}, out[HP_MAX_OUT];
    CHECK(hp_graph_node(g, out, &hp_op_moe_ep_send, in, 2, &a) >= 0);
    int rin[3] = {out[0], out[2], eid}, yp[HP_MAX_OUT];
    CHECK(hp_graph_node(g, yp, &hp_op_moe_ep_return, rin, 3, &a) >= 0);
    a.i[0] = 2; /* two members */
    int out2[HP_MAX_OUT];
    CHECK(hp_graph_node(g, out2, &hp_op_moe_ep_send, in, 2, &a) >= 0);
    int rin2[3] = {out2[0], out2[2], eid}, yp2[HP_MAX_OUT];
    CHECK(hp_graph_node(g, yp2, &hp_op_moe_ep_return, rin2, 3, &a) >= 0);
    /* a capacity: xq[4, 1] of 2 tokens x 2 slots over 2 experts, factor 0.5: ceil(4 / 2 x 0.5) = 1 row each */
    int xq = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(4, 1), "xq");
    int eq = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape1(4), "eq");
    int sc = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape2(2, 2), "scores");
    int ro = hp_graph_value(g, HP_V_ACT, HP_I32, hp_shape2(2, 2), "rowof");
    hp_attrs ac = {.i = {2, 2, 0}, .f = {0.5}};
    int in4[4] = {xq, eq, sc, ro}, out4[HP_MAX_OUT];
    CHECK(hp_graph_node(g, out4, &hp_op_moe_ep_send, in4, 4, &ac) >= 0);
    CHECK_OK(hp_graph_status(g));
    size_t ns = 0;
    for (int i = 0; i < g->nnodes; i++) {
        size_t q = hp_op_moe_ep_send.scratch ? hp_op_moe_ep_send.scratch(g, &g->nodes[i], 1) : 0;
        ns = q > ns ? q : ns;
    }
    float *scratch = calloc(ns + 1, sizeof(float));
    float x[6] = {1, 2, 3, 4, 5, 6}, xr[12], y[6];
    int32_t e[3] = {0, 1, -1}, er[6], s[12];
    hp_status err = HP_OK;
    hp_kctx k = {.graph = g, .err = &err, .scratch = scratch};
    hp_tensor ti[2] = {{HP_F32, hp_shape2(3, 2), x}, {HP_I32, hp_shape1(3), e}};
    hp_tensor to[3] = {{HP_F32, hp_shape2(3, 2), xr}, {HP_I32, hp_shape1(3), er}, {HP_I32, hp_shape2(3, 2), s}};
    hp_op_moe_ep_send.run(&k, &g->nodes[0], ti, to);
    CHECK(!memcmp(x, xr, 4 * sizeof *x) && xr[4] == 0 && xr[5] == 0 && er[0] == 0 && er[1] == 1 && er[2] == -1 &&
          s[0] == 0 && s[1] == 0 && s[3] == 1 && s[4] == -1);
    hp_tensor ri[3] = {to[0], to[2], ti[1]}, rout[1] = {{HP_F32, hp_shape2(3, 2), y}};
    hp_op_moe_ep_return.run(&k, &g->nodes[1], ri, rout);
    CHECK(y[0] == 1 && y[3] == 4 && y[4] == 0 && y[5] == 0);
    /* two members: the same rows, then the room for the other member's (empty) */
    for (int i = 0; i < 12; i++) xr[i] = 99, s[i] = 99;
    hp_tensor to2[3] = {{HP_F32, hp_shape2(6, 2), xr}, {HP_I32, hp_shape1(6), er}, {HP_I32, hp_shape2(6, 2), s}};
    hp_op_moe_ep_send.run(&k, &g->nodes[2], ti, to2);
    int room = 1;
    for (int r = 2; r < 6; r++) room &= xr[2 * r] == 0 && xr[2 * r + 1] == 0 && er[r] == -1 && s[2 * r] == -1;
    CHECK(!memcmp(x, xr, 4 * sizeof *x) && er[0] == 0 && er[1] == 1 && s[1] == 0 && s[3] == 1 && room);
    hp_tensor ri2[3] = {to2[0], to2[2], ti[1]};
    for (int i = 0; i < 6; i++) y[i] = 99;
    hp_op_moe_ep_return.run(&k, &g->nodes[3], ri2, rout);
    CHECK(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == 4 && y[4] == 0 && y[5] == 0);
    /* the capacity: rows 0..2 of expert 0 scored 0.3, 0.5, 0.5 (via rowof), row 3 of expert 1 0.9 */
    float xq_[4] = {1, 2, 3, 4}, scores[4] = {0.3f, 0.9f, 0.5f, 0.5f}, xqr[8];
    int32_t eq_[4] = {0, 0, 0, 1}, rowof[4] = {0, 3, 1, 2}, eqr[8], sq[16];
    hp_tensor ci[4] = {{HP_F32, hp_shape2(4, 1), xq_}, {HP_I32, hp_shape1(4), eq_}, {HP_F32, hp_shape2(2, 2), scores},
                       {HP_I32, hp_shape2(2, 2), rowof}};
    hp_tensor co[3] = {{HP_F32, hp_shape2(8, 1), xqr}, {HP_I32, hp_shape1(8), eqr}, {HP_I32, hp_shape2(8, 2), sq}};
    hp_op_moe_ep_send.run(&k, &g->nodes[4], ci, co);
    /* kept: row 1 (the tie at 0.5 to the earlier row), row 3; dropped: rows 0 and 2, no expert, no source */
    CHECK(xqr[0] == 2 && xqr[1] == 4 && xqr[2] == 0 && xqr[3] == 0 && eqr[0] == 0 && eqr[1] == 1 && eqr[2] == -1 &&
          eqr[3] == -1 && eqr[7] == -1);
    CHECK(sq[0] == 0 && sq[1] == 1 && sq[2] == 0 && sq[3] == 3 && sq[4] == -1 && sq[5] == -1 && sq[6] == -1);
    CHECK_OK(err);
    /* a stack of experts the members cannot share evenly */
    a.i[0] = 3;
    CHECK(hp_graph_node(g, out, &hp_op_moe_ep_send, in, 2, &a) < 0);
    free(scratch);
    hp_graph_destroy(g);
}

int main(void) {
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "a=2,ep=4"));
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = hp_mesh_size(&m);
    o.mpi = 0;
    o.timeout_s = 60;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    hp_mesh_comm *mc = NULL;
    if (w) CHECK_OK(hp_mesh_comm_create(&mc, w, &m));
    if (mc) {
        pthread_t th[8];
        job jobs[8];
        for (int r = 0; r < 8; r++) {
            jobs[r] = (job){w, &m, mc, r};
            pthread_create(&th[r], NULL, rank_main, &jobs[r]);
        }
        for (int r = 0; r < 8; r++) pthread_join(th[r], NULL);
        for (int r = 0; r < 8; r++) pthread_create(&th[r], NULL, cap_main, &jobs[r]);
        for (int r = 0; r < 8; r++) pthread_join(th[r], NULL);
        hp_mesh_comm_destroy(mc);
    }
    if (w) hp_comm_world_destroy(w);
    global_form();
    return hp_test_finish("test_ep_ops");
}
