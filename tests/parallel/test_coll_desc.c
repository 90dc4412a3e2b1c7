/* Every communicating operator of per-rank programs says what it does
 * (hp_opdef.describe, core/coll_desc.h): kind, role, group, the pair a wait
 * finds its start by, bytes and what validation compares, read from a node's
 * attributes the way the schedule, plan report, trace and validation read
 * them. Computing operators describe nothing. */
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"
#include "optim/sumsq_exact.h"
#include "parallel/fsdp.h"
#include "parallel/rank.h"
#include "testutil.h"

static hp_graph *g;
static int x, y;

/* A node of op with attributes a (inputs x, y; outputs by the op's count). */
static const hp_node *node(const hp_opdef *op, hp_attrs a, hp_phase ph) {
    int in[2] = {x, y}, out = y;
    int n = hp_graph_node_into(g, op, in, 2, op->nout ? &out : NULL, op->nout ? 1 : 0, &a, ph, -1);
    CHECK(n >= 0);
    return n >= 0 ? &g->nodes[n] : &g->nodes[0];
}

static hp_coll_desc desc(const hp_node *n) {
    hp_coll_desc d;
    memset(&d, 0xff, sizeof d);
    CHECKF(hp_coll_describe(&d, g, n), "%s describes nothing", n->op->name);
    return d;
}

int main(void) {
    CHECK_OK(hp_graph_create(&g));
    x = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(6), "x");
    y = hp_graph_value(g, HP_V_ACT, HP_F32, hp_shape1(6), "y");

    /* redistribute: plan i[0], a gradient's reduction in backward, bytes f[0], its output compared */
    hp_attrs a = {{4, 0, 1}, {96}};
    hp_coll_desc d = desc(node(&hp_op_redistribute, a, HP_PHASE_BWD));
    CHECK(d.kind == HP_COLL_REDISTRIBUTE && d.role == HP_COLL_BLOCKING && d.group == HP_COLL_GROUP_PLAN);
    CHECK(d.plan == 4 && d.grad == 1 && d.bytes == 96 && d.check == HP_COLL_CHECK_VALUE && d.pair == HP_COLL_PAIR_NONE);
    d = desc(node(&hp_op_redistribute, a, HP_PHASE_FWD));
    CHECK(d.grad == 0); /* only backward reductions are gradients' */
    /* its split halves: slot i[1] pairs them, the wait carries the start's bytes, nothing compared */
    a.i[1] = 3;
    hp_coll_desc s = desc(node(&hp_op_redistribute_start, a, HP_PHASE_BWD));
    hp_coll_desc w = desc(node(&hp_op_redistribute_wait, a, HP_PHASE_BWD));
    CHECK(s.role == HP_COLL_START && w.role == HP_COLL_WAIT && s.kind == HP_COLL_REDISTRIBUTE &&
          w.kind == HP_COLL_REDISTRIBUTE);
    CHECK(s.pair == HP_COLL_PAIR_SLOT && w.pair == HP_COLL_PAIR_SLOT && s.pair_key == 3 && w.pair_key == 3);
    CHECK(w.bytes == 96 && s.check == HP_COLL_CHECK_NONE && w.check == HP_COLL_CHECK_NONE && s.plan == 4);

    /* the cross-entropy statistics' all-gather along mesh axis i[0] */
    hp_attrs ag = {{1}, {0}};
    d = desc(node(&hp_op_mesh_all_gather, ag, HP_PHASE_FWD));
    CHECK(d.kind == HP_COLL_ALL_GATHER && d.role == HP_COLL_BLOCKING && d.group == HP_COLL_GROUP_AXIS && d.axis == 1);
    CHECK(d.bytes == 24 && d.purpose && !strcmp(d.purpose, "cross-entropy statistics"));

    /* the gradient norm's all-gather over the world (i[0] ranks, 8 bytes to each other) */
    hp_attrs sq = {{4}, {0}};
    d = desc(node(&hp_op_sumsq_combine, sq, HP_PHASE_OPT));
    CHECK(d.kind == HP_COLL_ALL_GATHER && d.group == HP_COLL_GROUP_WORLD && d.bytes == 24);
    CHECK(d.purpose && !strcmp(d.purpose, "gradient norm"));
    /* the deterministic mode's: the exact accumulator's words to each other rank, nothing compared */
    d = desc(node(&hp_op_sumsq_combine_exact, sq, HP_PHASE_OPT));
    CHECK(d.kind == HP_COLL_ALL_GATHER && d.role == HP_COLL_BLOCKING && d.group == HP_COLL_GROUP_WORLD);
    CHECK(d.bytes == 8.0 * HP_SUMSQ_EXACT_WORDS * 3 && d.pair == HP_COLL_PAIR_NONE && d.pair_key == -1);
    CHECK(d.check == HP_COLL_CHECK_NONE && d.grad == 0 && d.axis == -1 && d.unit == -1 && d.peer == -1);
    CHECK(d.purpose && !strncmp(d.purpose, "gradient norm", 13));
    hp_attrs one = {{1}, {0}}; /* on one rank it merges its own accumulator: no bytes move */
    d = desc(node(&hp_op_sumsq_combine_exact, one, HP_PHASE_OPT));
    CHECK(d.kind == HP_COLL_ALL_GATHER && d.bytes == 0);

    /* FSDP: unit i[0] pairs each stage; the gather's wait checks the parameters, the reductions the shard */
    hp_attrs f = {{2}, {0}};
    s = desc(node(&hp_op_fsdp_gather_start, f, HP_PHASE_FWD));
    w = desc(node(&hp_op_fsdp_gather_wait, f, HP_PHASE_FWD));
    CHECK(s.kind == HP_COLL_ALL_GATHER && s.role == HP_COLL_START && s.group == HP_COLL_GROUP_FSDP_SHARD);
    CHECK(w.kind == HP_COLL_ALL_GATHER && w.role == HP_COLL_WAIT && w.check == HP_COLL_CHECK_PARAMS);
    CHECK(s.pair == HP_COLL_PAIR_UNIT && s.unit == 2 && w.unit == 2 && s.grad == 0);
    d = desc(node(&hp_op_fsdp_reduce_start, f, HP_PHASE_BWD));
    CHECK(d.kind == HP_COLL_REDUCE_SCATTER && d.role == HP_COLL_START && d.group == HP_COLL_GROUP_FSDP_SHARD);
    CHECK(d.grad == 1 && d.bytes == 24); /* fp32 gradient of 6 */
    d = desc(node(&hp_op_fsdp_reduce_wait, f, HP_PHASE_BWD));
    CHECK(d.kind == HP_COLL_ALL_REDUCE && d.role == HP_COLL_START && d.group == HP_COLL_GROUP_FSDP_REPLICAS);
    CHECK(d.check == HP_COLL_CHECK_SHARD && d.check_in == 1);
    d = desc(node(&hp_op_fsdp_allreduce_wait, f, HP_PHASE_BWD));
    CHECK(d.kind == HP_COLL_ALL_REDUCE && d.role == HP_COLL_WAIT && d.check == HP_COLL_CHECK_SHARD && d.check_in == 0);

    /* every communicating operator of per-rank programs has a descriptor; the operator table's
     * (computing) operators neither communicate nor describe */
    const hp_opdef *const comm[] = {&hp_op_redistribute, &hp_op_mesh_all_gather, &hp_op_redistribute_start,
                                    &hp_op_redistribute_wait, &hp_op_sumsq_combine, &hp_op_sumsq_combine_exact,
                                    &hp_op_send_start, &hp_op_recv_start, &hp_op_all_to_all_v_start,
                                    &hp_op_slot_wait, &hp_op_fsdp_gather_start, &hp_op_fsdp_gather_wait,
                                    &hp_op_fsdp_reduce_start, &hp_op_fsdp_reduce_wait, &hp_op_fsdp_allreduce_wait};
    for (size_t k = 0; k < sizeof comm / sizeof comm[0]; k++)
        CHECKF(comm[k]->communicates && comm[k]->describe, "%s: communicates without a descriptor", comm[k]->name);
    int nops;
    const hp_opdef *const *all = hp_ops_all(&nops);
    for (int k = 0; k < nops; k++) CHECKF(!all[k]->communicates && !all[k]->describe, "%s", all[k]->name);

    /* computing operators describe nothing; ops answers what passes ask of them */
    hp_coll_desc none;
    CHECK(!hp_coll_describe(&none, g, node(&hp_op_add, (hp_attrs){{0}, {0}}, HP_PHASE_FWD)));
    CHECK(hp_op_is_cast(&hp_op_cast) && !hp_op_is_cast(&hp_op_add));
    CHECK(hp_op_linear_gemm_input(&hp_op_linear) == 0 && hp_op_linear_gemm_input(&hp_op_linear_bwd) == 1 &&
          hp_op_linear_gemm_input(&hp_op_add) == -1);
    CHECK_OK(hp_graph_status(g));
    hp_graph_destroy(g);
    return hp_test_finish("test_coll_desc");
}
