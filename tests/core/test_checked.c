/* Size arithmetic that overflows is caught (core/checked), a shape whose
 * element count overflows int64 or exceeds HP_MAX_NUMEL is refused by the
 * graph builder with the limit named (issue 11, defect 8: --channels
 * 2147483647 overflowed hp_shape_numel), and an operator whose output would
 * be too large fails the graph instead of building it. */
#include <stdint.h>

#include "core/checked.h"
#include "core/graph.h"
#include "core/opdef.h"
#include "testutil.h"

/* An operator whose output is its input's shape with dim 0 times 2^30. */
static hp_status grow_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    os[0] = g->vals[n->in[0]].shape;
    os[0].d[0] *= (int64_t)1 << 30;
    od[0] = HP_F32;
    return HP_OK;
}
static const hp_opdef op_grow = {.name = "grow", .nout = 1, .infer = grow_infer};

static void test_helpers(void) {
    int64_t r = 0;
    size_t z = 0;
    CHECK(hp_mul_i64(&r, (int64_t)1 << 31, (int64_t)1 << 31) && r == (int64_t)1 << 62);
    CHECK(!hp_mul_i64(&r, (int64_t)1 << 32, (int64_t)1 << 31));
    CHECK(!hp_mul_i64(&r, INT64_MAX, 2));
    CHECK(!hp_add_i64(&r, INT64_MAX, 1));
    CHECK(hp_add_i64(&r, INT64_MAX - 1, 1) && r == INT64_MAX);
    CHECK(!hp_mul_size(&z, (size_t)1 << 62, sizeof(float))); /* 2^62 floats: not 0 bytes */
    CHECK(hp_mul_size(&z, (size_t)1 << 40, sizeof(float)) && z == (size_t)1 << 42);
    CHECK(!hp_add_size(&z, SIZE_MAX, 1));
}

static void test_numel(void) {
    int64_t n = -1;
    hp_shape s = hp_shape2(4LL * 2147483647, 2147483647); /* the MLP weight at C = 2^31 - 1 */
    CHECK(!hp_shape_numel_checked(&n, &s));
    s = hp_shape4(1 << 20, 1 << 20, 1 << 20, 1 << 20); /* 2^80: wraps to 0 unchecked */
    CHECK(!hp_shape_numel_checked(&n, &s));
    s = hp_shape2((int64_t)1 << 20, (int64_t)1 << 20); /* exactly the limit */
    CHECK(hp_shape_numel_checked(&n, &s) && n == HP_MAX_NUMEL);
    s = hp_shape2(((int64_t)1 << 20) + 1, (int64_t)1 << 20);
    CHECK(!hp_shape_numel_checked(&n, &s));
    s = hp_shape2(3, 0); /* an empty local piece is fine */
    CHECK(hp_shape_numel_checked(&n, &s) && n == 0);
    s = hp_shape2(3, -1);
    CHECK(!hp_shape_numel_checked(&n, &s));
}

static void test_graph(void) {
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    CHECK(hp_graph_param(g, "w", hp_shape2(4LL * 2147483647, 2147483647)) < 0);
    CHECK_ERR(hp_errorf("%s", hp_status_msg(hp_graph_status(g))), /* a copy: the graph owns its error */
              "graph: parameter 'w': shape [8589934588, 2147483647] has more than the 1099511627776 elements");
    hp_graph_destroy(g);

    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape2(1 << 12, 4));
    CHECK(x >= 0);
    int in[1] = {x};
    CHECK(hp_graph_node(g, NULL, &op_grow, in, 1, NULL) < 0); /* 2^44 elements */
    CHECK_ERR(hp_errorf("%s", hp_status_msg(hp_graph_status(g))),
              "graph: value 'grow:0' of shape [4398046511104, 4] has more than the 1099511627776 elements");
    hp_graph_destroy(g);
}

int main(void) {
    test_helpers();
    test_numel();
    test_graph();
    return hp_test_finish("test_checked");
}
