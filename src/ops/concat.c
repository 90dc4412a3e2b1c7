/* ops/concat: joining tensors and broadcasting a position table (issue 26's
 * PanGu-α query layer: its query from a learned position table, its keys and
 * values from the hidden states, joined into attention's fused [B,T,3,C]).
 *   concat(a, b) along dim i[0] (a's extent there i[1]) -> [..., a_d + b_d, ...]; backward concat_bwd
 *     (dy) -> (da, db), the two slices;
 *   pos_table(table[P, C]) -> [B, T, C] = table[t] for every b (B = i[0],
 *     T = i[1] <= P); backward add_pos_bwd (dy summed over the batch).
 * Both are copies of rows (the kernel table's k_copy_rows), any dtype. */
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_util.h"

/* outer x (rows of a's and b's extents at dim) */
static void concat_geometry(const hp_shape *a, const hp_shape *b, int dim, long *outer, long *ra, long *rb) {
    long inner = 1, o = 1;
    for (int d = 0; d < dim; d++) o *= (long)a->d[d];
    for (int d = dim + 1; d < a->ndim; d++) inner *= (long)a->d[d];
    *outer = o, *ra = (long)a->d[dim] * inner, *rb = (long)b->d[dim] * inner;
}

static hp_status concat_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *a = in_shape(g, n, 0), *b = in_shape(g, n, 1);
    int dim = (int)n->a.i[0], ok = a->ndim == b->ndim && dim >= 0 && dim < a->ndim;
    for (int d = 0; ok && d < a->ndim; d++) ok = d == dim || a->d[d] == b->d[d];
    char b1[64], b2[64];
    if (!ok)
        return SHAPE_ERR("concat along dimension %d: %s and %s differ elsewhere", dim, hp_shape_str(b1, sizeof b1, a),
                         hp_shape_str(b2, sizeof b2, b));
    if (g->vals[n->in[0]].dtype != g->vals[n->in[1]].dtype)
        return SHAPE_ERR("concat: '%s' and '%s' have different dtypes", g->vals[n->in[0]].name, g->vals[n->in[1]].name);
    os[0] = *a;
    os[0].d[dim] = a->d[dim] + b->d[dim];
    od[0] = g->vals[n->in[0]].dtype;
    return HP_OK;
}

/* in (a, b) -> out */
static void concat_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    long outer, ra, rb, es = (long)hp_dtype_size(in[0].dtype);
    concat_geometry(&in[0].shape, &in[1].shape, (int)n->a.i[0], &outer, &ra, &rb);
    char *o = out[0].data;
    kern_of(k)->k_copy_rows(k->pool, o, (ra + rb) * es, in[0].data, ra * es, outer, ra * es);
    kern_of(k)->k_copy_rows(k->pool, o + ra * es, (ra + rb) * es, in[1].data, rb * es, outer, rb * es);
}

static void concat_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int out[2] = {grad_for(g, node, 0), grad_for(g, node, 1)};
    if (out[0] < 0 && out[1] < 0) return;
    emit_bwd(g, &hp_op_concat_bwd, node, gout, 1, out, 2);
    gin[0] = out[0], gin[1] = out[1];
}

const hp_opdef hp_op_concat = {
    .name = "concat", .nout = 1, .infer = concat_infer, .run = concat_run, .backward = concat_backward,
    .bytes = hp_ops_io_bytes, .bf16 = HP_PREC("bb", "b"),
};

/* in (dy) -> out (da, db): each may be absent; i[1] a's extent along dim */
static void concat_bwd_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    int dim = (int)n->a.i[0];
    hp_shape a = in[0].shape, b = in[0].shape;
    a.d[dim] = n->a.i[1], b.d[dim] = in[0].shape.d[dim] - n->a.i[1]; /* i[1]: a's extent (never sharded) */
    long outer, ra, rb, es = (long)hp_dtype_size(in[0].dtype);
    concat_geometry(&a, &b, dim, &outer, &ra, &rb);
    const char *dy = in[0].data;
    if (n->out[0] >= 0) kern_of(k)->k_copy_rows(k->pool, out[0].data, ra * es, dy, (ra + rb) * es, outer, ra * es);
    if (n->out[1] >= 0)
        kern_of(k)->k_copy_rows(k->pool, out[1].data, rb * es, dy + ra * es, (ra + rb) * es, outer, rb * es);
}

const hp_opdef hp_op_concat_bwd = {
    .name = "concat_bwd", .nout = 2, .run = concat_bwd_run, .bytes = hp_ops_io_bytes,
};

static hp_status table_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    const hp_shape *t = in_shape(g, n, 0);
    char b1[64];
    if (t->ndim != 2 || n->a.i[0] < 1 || n->a.i[1] < 1 || n->a.i[1] > t->d[0])
        return SHAPE_ERR("pos_table: a table [P, C] with P >= T for batch %lld x %lld positions, got '%s' %s",
                         (long long)n->a.i[0], (long long)n->a.i[1], g->vals[n->in[0]].name,
                         hp_shape_str(b1, sizeof b1, t));
    os[0] = hp_shape3(n->a.i[0], n->a.i[1], t->d[1]);
    od[0] = g->vals[n->in[0]].dtype;
    return HP_OK;
}

/* in (table[P, C]) -> out [B, T, C] (local B, C: the output's own shape) */
static void table_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)n;
    const hp_shape *o = &out[0].shape;
    long es = (long)hp_dtype_size(out[0].dtype), row = (long)o->d[1] * (long)o->d[2] * es;
    kern_of(k)->k_copy_rows(k->pool, out[0].data, row, in[0].data, 0, (long)o->d[0], row);
}

static void table_backward(hp_graph *g, int node, const int *gout, int *gin) {
    int dt = grad_for(g, node, 0);
    if (dt < 0) return;
    emit_bwd(g, &hp_op_add_pos_bwd, node, gout, 1, &dt, 1);
    gin[0] = dt;
}

static double table_bytes(const hp_graph *g, const hp_node *n) { return hp_ops_io_bytes(g, n); }

const hp_opdef hp_op_pos_table = {
    .name = "pos_table", .nout = 1, .infer = table_infer, .run = table_run, .backward = table_backward,
    .bytes = table_bytes, .bf16 = HP_PREC("b", "b"),
};

int hp_concat(hp_graph *g, int a, int b, int dim) {
    hp_attrs at = {.i = {dim, a >= 0 && a < g->nvals && dim >= 0 && dim < g->vals[a].shape.ndim ? g->vals[a].shape.d[dim] : 0}};
    int in[2] = {a, b};
    return hp_graph_node(g, NULL, &hp_op_concat, in, 2, &at);
}

int hp_pos_table(hp_graph *g, int table, int B, int T) {
    hp_attrs at = {.i = {B, T}};
    return hp_graph_node(g, NULL, &hp_op_pos_table, &table, 1, &at);
}
