/* parallel/precision: see the header. */
#include "parallel/precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

static hp_dtype want_of(char c, hp_dtype as_is) {
    return c == 'b' ? HP_BF16 : c == 'f' ? HP_F32 : as_is;
}

/* The value of v in dtype dt: v itself, or its cast (made once, before the
 * node being rebuilt). cache[2 * v + (dt == HP_BF16)] keeps the casts; with
 * all_params a parameter read in fp32 is the widened copy of its bf16 copy
 * (kept in its fp32 slot, which a parameter's own dtype leaves free). */
static int in_dtype(hp_graph *g, int *cache, int v, hp_dtype dt, int all_params, int *ncasts, int *nparams) {
    int through16 = all_params && g->vals[v].kind == HP_V_PARAM && g->vals[v].dtype == HP_F32 && dt == HP_F32;
    if (g->vals[v].dtype == dt && !through16) return v;
    if (dt != HP_F32 && dt != HP_BF16) return v;
    int *slot = &cache[2 * v + (dt == HP_BF16)];
    if (*slot >= 0) return *slot;
    int from = v;
    if (through16) {
        from = in_dtype(g, cache, v, HP_BF16, all_params, ncasts, nparams);
        if (from < 0) return -1;
    }
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.88s.%s", g->vals[v].name, dt == HP_BF16 ? "bf16" : "f32");
    int c = hp_graph_value(g, HP_V_ACT, dt, g->vals[v].shape, nm);
    if (c < 0) return -1;
    int is_param = g->vals[from].kind == HP_V_PARAM;
    g->vals[c].grad_fp32 = is_param || g->vals[from].grad_fp32;
    g->vals[c].no_grad = g->vals[from].no_grad;
    hp_attrs a = {.i = {dt}};
    int node = hp_graph_node_into(g, &hp_op_cast, &from, 1, &c, 1, &a, HP_PHASE_FWD, -1);
    if (node < 0) return -1;
    snprintf(g->nodes[node].name, sizeof g->nodes[node].name, "%.80s.to_%s", g->vals[v].name,
             dt == HP_BF16 ? "bf16" : "f32");
    *slot = c;
    ++*ncasts;
    *nparams += is_param;
    return c;
}

hp_status hp_pass_precision(hp_graph *g, hp_dtype dtype, int all_params, int *ncasts, int *nparams) {
    int nc = 0, np = 0;
    if (ncasts) *ncasts = 0;
    if (nparams) *nparams = 0;
    if (dtype == HP_F32 && all_params) return hp_errorf("precision: every parameter in bf16 needs bf16 compute");
    if (dtype == HP_F32) return HP_OK;
    if (dtype != HP_BF16) return hp_errorf("precision: dtype %s is not fp32 or bf16", hp_dtype_name(dtype));
    if (g->err) return hp_errorf("precision: the graph has an error: %s", hp_status_msg(g->err));
    if (g->loss_seed >= 0) return hp_errorf("precision: the graph is already differentiated (run the pass before autodiff)");
    int nnodes = g->nnodes, nv0 = g->nvals;
    hp_node *old = malloc(sizeof *old * (size_t)(nnodes ? nnodes : 1));
    int *cache = malloc(sizeof *cache * 2 * (size_t)(nv0 ? nv0 : 1));
    if (!old || !cache) {
        free(old);
        free(cache);
        return hp_errorf("precision: out of memory");
    }
    memcpy(old, g->nodes, sizeof *old * (size_t)nnodes);
    for (int i = 0; i < 2 * nv0; i++) cache[i] = -1;
    g->nnodes = 0; /* rebuilt in the same order, casts put in before their readers */
    hp_status st = HP_OK;
    for (int i = 0; i < nnodes && !st; i++) {
        hp_node n = old[i];
        if (n.phase != HP_PHASE_FWD || n.nxin) {
            st = hp_errorf("precision: node '%s' is not a plain forward node", n.name);
            break;
        }
        const hp_precision *r = n.op->bf16;
        int scalars = n.nin > 0; /* an operator over fp32 scalars only (losses summed) stays fp32 */
        for (int k = 0; k < n.nin; k++)
            scalars &= g->vals[n.in[k]].dtype == HP_F32 && hp_val_numel(g, n.in[k]) == 1;
        if (scalars) r = NULL;
        int in[HP_MAX_IN];
        for (int k = 0; k < n.nin; k++) {
            int v = n.in[k];
            hp_dtype as_is = g->vals[v].dtype;
            hp_dtype want = r ? want_of(r->in[k], as_is) : (as_is == HP_BF16 ? HP_F32 : as_is);
            in[k] = in_dtype(g, cache, v, want, all_params, &nc, &np);
            if (in[k] < 0) break;
        }
        if (g->err) break;
        int id = hp_graph_node_into(g, n.op, in, n.nin, n.out, n.nout, &n.a, HP_PHASE_FWD, -1);
        if (id < 0) break;
        memcpy(g->nodes[id].name, n.name, sizeof n.name);
        for (int k = 0; k < n.nout && r; k++)
            if (n.out[k] >= 0) g->vals[n.out[k]].dtype = want_of(r->out[k], g->vals[n.out[k]].dtype);
    }
    free(old);
    free(cache);
    if (!st && g->err) st = hp_errorf("precision: %s", hp_status_msg(g->err));
    if (st) return st;
    if (g->loss >= 0 && g->vals[g->loss].dtype != HP_F32)
        return hp_errorf("precision: the loss '%s' came out %s; it must stay fp32", g->vals[g->loss].name,
                         hp_dtype_name(g->vals[g->loss].dtype));
    if (ncasts) *ncasts = nc;
    if (nparams) *nparams = np;
    return HP_OK;
}
