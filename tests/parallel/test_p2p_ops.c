/* The point-to-point and all-to-all-with-counts operators of per-rank
 * programs (parallel/comm_ops.c: send_start, recv_start, all_to_all_v_start,
 * slot_wait), run node by node on rank-threads of a 2 x 3 mesh along its
 * second axis: a ring of uneven messages (one empty) and an all-to-all with
 * uneven counts (zeros among them) and an all-gather with uneven counts (one
 * empty, the sent value longer than its piece) give the sent values, nothing past them;
 * their descriptors say kind, role, group axis, peer, slot pair and bytes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/rank.h"
#include "testutil.h"

#define K 3 /* members along the axis */
#define AXIS 1

static float val(int from, int to, int64_t i) { return (float)(from * 1000 + to * 100) + 0.5f * (float)i; }
static int64_t ring_len(int m) { return m == 1 ? 0 : 5 + 11 * (int64_t)m; }
static int64_t a2a_len(int from, int to) { return (int64_t)((from * 3 + to * 5) % 4) * 3 + (from == to); }
static int64_t ag_len(int m) { return m == 1 ? 0 : 3 + 4 * (int64_t)m; }

typedef struct {
    hp_comm_world *w;
    const hp_mesh *m;
    const hp_mesh_comm *mc;
    int rank;
} job;

/* Runs node `node` of g on the buffers buf[value]. */
static void run_node(const hp_kctx *k, const hp_graph *g, int node, void **buf) {
    const hp_node *n = &g->nodes[node];
    hp_tensor in[HP_MAX_IN], out[HP_MAX_OUT];
    for (int q = 0; q < n->nin; q++) in[q] = (hp_tensor){g->vals[n->in[q]].dtype, g->vals[n->in[q]].shape, buf[n->in[q]]};
    for (int q = 0; q < n->nout; q++)
        out[q] = (hp_tensor){g->vals[n->out[q]].dtype, g->vals[n->out[q]].shape, buf[n->out[q]]};
    n->op->run(k, n, in, out);
}

static void check_desc(const hp_graph *g, int node, hp_coll_kind kind, hp_coll_role role, int peer, int slot,
                       double bytes) {
    hp_coll_desc d;
    CHECK(hp_coll_describe(&d, g, &g->nodes[node]));
    CHECKF(d.kind == kind && d.role == role && d.group == HP_COLL_GROUP_AXIS && d.axis == AXIS && d.peer == peer &&
               d.pair == HP_COLL_PAIR_SLOT && d.pair_key == slot && d.bytes == bytes,
           "node %s: kind %d role %d axis %d peer %d slot %d bytes %g", g->nodes[node].name, (int)d.kind, (int)d.role,
           d.axis, d.peer, d.pair_key, d.bytes);
}

static void *rank_main(void *arg) {
    job *j = arg;
    int coord[2];
    for (coord[0] = 0; coord[0] < 2; coord[0]++)
        for (coord[1] = 0; coord[1] < K; coord[1]++)
            if (hp_mesh_rank(j->m, coord) == j->rank) goto found;
found:;
    int row = coord[0], me = coord[1], to = (me + 1) % K, from = (me + K - 1) % K;
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    if (!g) return NULL;
    int64_t sc[K], rc[K], so = 0, ro = 0;
    for (int q = 0; q < K; q++) sc[q] = a2a_len(me, q), rc[q] = a2a_len(q, me), so += sc[q], ro += rc[q];
    int xs = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(ring_len(me)), "ring.send");
    int yr = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(ring_len(from)), "ring.recv");
    int xa = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(so), "a2a.send");
    int ya = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(ro), "a2a.recv");
    /* even members send first, odd receive first: both calls share the axis group's lane */
    int w1 = me % 2 ? hp_comm_op_recv(g, yr, AXIS, from, 0, HP_PHASE_FWD)
                    : hp_comm_op_send(g, xs, AXIS, to, 0, HP_PHASE_FWD);
    int w2 = me % 2 ? hp_comm_op_send(g, xs, AXIS, to, 1, HP_PHASE_FWD)
                    : hp_comm_op_recv(g, yr, AXIS, from, 1, HP_PHASE_FWD);
    int w3 = hp_comm_op_all_to_all_v(g, ya, xa, AXIS, sc, rc, K, 2, HP_PHASE_FWD);
    int64_t gc[K], go = 0;
    for (int q = 0; q < K; q++) gc[q] = ag_len(q), go += gc[q];
    int xg = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(ag_len(me) + 2), "ag.send");
    int yg = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(go), "ag.recv");
    int w4 = hp_comm_op_all_gather_v(g, yg, xg, AXIS, gc, K, me, 3, HP_PHASE_FWD);
    CHECK_OK(hp_graph_status(g));
    CHECK(w1 == 1 && w2 == 3 && w3 == 5 && w4 == 7 && g->nnodes == 8);
    if (hp_graph_status(g) || g->nnodes != 8) {
        hp_graph_destroy(g);
        return NULL;
    }
    double sb = 4.0 * (double)ring_len(me), rb = 4.0 * (double)ring_len(from);
    int sfirst = me % 2 == 0;
    check_desc(g, sfirst ? 0 : 2, HP_COLL_SEND, HP_COLL_START, to, sfirst ? 0 : 1, sb);
    check_desc(g, sfirst ? 1 : 3, HP_COLL_SEND, HP_COLL_WAIT, to, sfirst ? 0 : 1, sb);
    check_desc(g, sfirst ? 2 : 0, HP_COLL_RECV, HP_COLL_START, from, sfirst ? 1 : 0, rb);
    check_desc(g, sfirst ? 3 : 1, HP_COLL_RECV, HP_COLL_WAIT, from, sfirst ? 1 : 0, rb);
    check_desc(g, 4, HP_COLL_ALL_TO_ALL, HP_COLL_START, -1, 2, 4.0 * (double)so);
    check_desc(g, 5, HP_COLL_ALL_TO_ALL, HP_COLL_WAIT, -1, 2, 4.0 * (double)so);
    check_desc(g, 6, HP_COLL_ALL_GATHER, HP_COLL_START, -1, 3, 4.0 * (double)ag_len(me));
    check_desc(g, 7, HP_COLL_ALL_GATHER, HP_COLL_WAIT, -1, 3, 4.0 * (double)ag_len(me));

    /* buffers, one guard element past each */
    void *buf[6];
    for (int v = 0; v < 6; v++) {
        int64_t n = hp_val_numel(g, v);
        float *b = malloc(sizeof(float) * (size_t)(n + 1));
        for (int64_t i = 0; i <= n; i++) b[i] = -1;
        buf[v] = b;
    }
    for (int64_t i = 0; i < ring_len(me); i++) ((float *)buf[xs])[i] = val(me, to, i);
    for (int q = 0, at = 0; q < K; q++)
        for (int64_t i = 0; i < sc[q]; i++) ((float *)buf[xa])[at++] = val(me, q, i);
    for (int64_t i = 0; i < ag_len(me) + 2; i++) ((float *)buf[xg])[i] = val(me, 0, i);

    hp_rank_ctx c;
    memset(&c, 0, sizeof c);
    c.rank = j->rank;
    c.comm = hp_comm_world_rank(j->w, j->rank);
    c.mesh = j->m;
    c.mc = j->mc;
    c.world_group = hp_comm_world_group(j->w);
    c.world_size = hp_comm_world_size(j->w);
    c.nslots = 4;
    CHECK_OK(hp_rank_ctx_alloc(&c));
    hp_status err = HP_OK;
    hp_kctx k = {.graph = g, .rank = &c, .err = &err};
    int order[8] = {0, 2, 4, 6, 1, 3, 5, 7}; /* every call started, then every wait */
    for (int s = 0; s < 8 && !err; s++) run_node(&k, g, order[s], buf);
    CHECK_OK(err);

    int bad = 0;
    const float *r = buf[yr];
    for (int64_t i = 0; i < ring_len(from); i++) bad += r[i] != val(from, me, i);
    bad += r[ring_len(from)] != -1;
    CHECKF(!bad, "rank %d (row %d, member %d): ring message from %d: %d wrong", j->rank, row, me, from, bad);
    bad = 0;
    r = buf[ya];
    for (int q = 0, at = 0; q < K; q++)
        for (int64_t i = 0; i < rc[q]; i++) bad += r[at++] != val(q, me, i);
    bad += r[ro] != -1;
    CHECKF(!bad, "rank %d (row %d, member %d): all-to-all: %d wrong", j->rank, row, me, bad);
    bad = 0;
    r = buf[yg];
    for (int q = 0, at = 0; q < K; q++)
        for (int64_t i = 0; i < gc[q]; i++) bad += r[at++] != val(q, 0, i);
    bad += r[go] != -1;
    CHECKF(!bad, "rank %d (row %d, member %d): all-gather with counts: %d wrong", j->rank, row, me, bad);

    hp_rank_ctx_free(&c);
    for (int v = 0; v < 6; v++) free(buf[v]);
    hp_graph_destroy(g);
    return NULL;
}

/* Counts beyond the values' sizes are the builder's error (fewer are allowed: the rest is not touched). */
static void bad_counts(void) {
    hp_graph *g = NULL;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(4), "x");
    int y = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(4), "y");
    int64_t sc[2] = {1, 2}, rc[2] = {2, 2};
    CHECK(hp_comm_op_all_to_all_v(g, y, x, 0, sc, rc, 2, 0, HP_PHASE_FWD) >= 0);
    CHECK_OK(hp_graph_status(g));
    sc[0] = 3;
    CHECK(hp_comm_op_all_to_all_v(g, y, x, 0, sc, rc, 2, 0, HP_PHASE_FWD) < 0);
    hp_status st = hp_graph_status(g);
    CHECKF(st && strstr(hp_status_msg(st), "the counts send 5 and receive 4 elements, the values hold 4 and 4"),
           "error: %s", st ? hp_status_msg(st) : "none");
    hp_graph_destroy(g);
    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(2), "x");
    y = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(4), "y");
    int64_t gc[2] = {2, 3};
    CHECK(hp_comm_op_all_gather_v(g, y, x, 0, gc, 2, 1, 0, HP_PHASE_FWD) < 0);
    st = hp_graph_status(g);
    CHECKF(st && strstr(hp_status_msg(st), "all_gather_v: member 1 of 2 sends 3 of 2 elements and receives 5 of 4"),
           "error: %s", st ? hp_status_msg(st) : "none");
    hp_graph_destroy(g);
}

int main(void) {
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "a=2,x=3"));
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
        pthread_t th[6];
        job jobs[6];
        for (int r = 0; r < 6; r++) {
            jobs[r] = (job){w, &m, mc, r};
            pthread_create(&th[r], NULL, rank_main, &jobs[r]);
        }
        for (int r = 0; r < 6; r++) pthread_join(th[r], NULL);
        hp_mesh_comm_destroy(mc);
    }
    if (w) hp_comm_world_destroy(w);
    bad_counts();
    return hp_test_finish("test_p2p_ops");
}
