#include "core/graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/opdef.h"

hp_status hp_graph_create(hp_graph **out) {
    hp_graph *g = calloc(1, sizeof *g);
    if (!g) return hp_errorf("graph: out of memory");
    g->loss = -1;
    g->loss_seed = -1;
    *out = g;
    return HP_OK;
}

void hp_graph_destroy(hp_graph *g) {
    if (!g) return;
    hp_status_free(g->err);
    free(g->vals);
    free(g->nodes);
    free(g->xin);
    free(g->blob);
    free(g);
}

hp_status hp_graph_status(const hp_graph *g) { return g->err; }

hp_status hp_graph_error(const hp_graph *g) { return g->err ? hp_errorf("%s", hp_status_msg(g->err)) : HP_OK; }

void hp_graph_fail(hp_graph *g, hp_status err) {
    if (!err) return;
    if (g->err)
        hp_status_free(err);
    else
        g->err = err;
}

void hp_graph_scope(hp_graph *g, const char *fmt, ...) {
    if (!fmt) {
        g->scope[0] = 0;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->scope, sizeof g->scope, fmt, ap);
    va_end(ap);
}

int hp_graph_value(hp_graph *g, hp_vkind kind, hp_dtype dtype, hp_shape shape, const char *name) {
    if (g->err) return -1;
    int64_t numel;
    if (shape.ndim < 0 || shape.ndim > HP_MAX_DIMS || !hp_shape_numel_checked(&numel, &shape)) {
        char sb[128];
        int bad_rank = shape.ndim < 0 || shape.ndim > HP_MAX_DIMS, negative = 0;
        if (bad_rank) shape.ndim = 0;
        for (int i = 0; i < shape.ndim; i++) negative |= shape.d[i] < 0;
        hp_graph_fail(g, bad_rank   ? hp_errorf("graph: value '%s' has a rank outside 0..%d", name ? name : "", HP_MAX_DIMS)
                         : negative ? hp_errorf("graph: value '%s' of shape %s has a negative dimension", name ? name : "",
                                                hp_shape_str(sb, sizeof sb, &shape))
                                    : hp_errorf("graph: value '%s' of shape %s has more than the %lld elements a tensor "
                                                "may have",
                                                name ? name : "", hp_shape_str(sb, sizeof sb, &shape),
                                                (long long)HP_MAX_NUMEL));
        return -1;
    }
    if (g->nvals == g->capv) {
        int cap = g->capv ? g->capv * 2 : 64;
        hp_value *v = realloc(g->vals, (size_t)cap * sizeof *v);
        if (!v) {
            hp_graph_fail(g, hp_errorf("graph: out of memory"));
            return -1;
        }
        g->vals = v;
        g->capv = cap;
    }
    int id = g->nvals++;
    hp_value *v = &g->vals[id];
    memset(v, 0, sizeof *v);
    v->dtype = dtype;
    v->shape = shape;
    v->kind = kind;
    v->producer = -1;
    v->grad = -1;
    v->grad_of = -1;
    v->state_of = -1;
    v->init = -1;
    v->param_init = -1;
    v->view_of = -1;
    v->mirror_of = -1;
    v->store_slot = -1;
    v->persistent = kind == HP_V_INPUT || kind == HP_V_PARAM || kind == HP_V_CONST || kind == HP_V_STATE;
    snprintf(v->name, sizeof v->name, "%s", name ? name : "");
    return id;
}

static int check_shape(hp_graph *g, const char *what, const char *name, hp_shape s) {
    if (s.ndim < 1 || s.ndim > HP_MAX_DIMS) {
        hp_graph_fail(g, hp_errorf("graph: %s '%s': rank %d not in 1..%d", what, name, s.ndim,
                                   HP_MAX_DIMS));
        return 0;
    }
    for (int i = 0; i < s.ndim; i++)
        if (s.d[i] < 1) {
            hp_graph_fail(g, hp_errorf("graph: %s '%s': dimension %d is %lld, must be >= 1", what,
                                       name, i, (long long)s.d[i]));
            return 0;
        }
    int64_t numel;
    if (!hp_shape_numel_checked(&numel, &s)) {
        char sb[128];
        hp_graph_fail(g, hp_errorf("graph: %s '%s': shape %s has more than the %lld elements a tensor may have", what,
                                   name, hp_shape_str(sb, sizeof sb, &s), (long long)HP_MAX_NUMEL));
        return 0;
    }
    return 1;
}

int hp_graph_input(hp_graph *g, const char *name, hp_dtype dtype, hp_shape shape) {
    if (g->err || !check_shape(g, "input", name, shape)) return -1;
    int id = hp_graph_value(g, HP_V_INPUT, dtype, shape, name);
    if (id >= 0) g->vals[id].no_grad = 1;
    return id;
}

int hp_graph_param(hp_graph *g, const char *name, hp_shape shape) {
    if (g->err || !check_shape(g, "parameter", name, shape)) return -1;
    if (hp_graph_find(g, name) >= 0) {
        hp_graph_fail(g, hp_errorf("graph: parameter '%s' defined twice", name));
        return -1;
    }
    return hp_graph_value(g, HP_V_PARAM, HP_F32, shape, name);
}

static int push_node(hp_graph *g) {
    if (g->nnodes == g->capn) {
        int cap = g->capn ? g->capn * 2 : 64;
        hp_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) {
            hp_graph_fail(g, hp_errorf("graph: out of memory"));
            return -1;
        }
        g->nodes = n;
        g->capn = cap;
    }
    int id = g->nnodes++;
    memset(&g->nodes[id], 0, sizeof g->nodes[id]);
    return id;
}

int hp_graph_node(hp_graph *g, int *outs, const hp_opdef *op, const int *in, int nin,
                  const hp_attrs *a) {
    if (g->err) return -1;
    HP_ASSERT(nin <= HP_MAX_IN && op->nout <= HP_MAX_OUT);
    for (int i = 0; i < nin; i++)
        if (in[i] < 0 || in[i] >= g->nvals) {
            hp_graph_fail(g, hp_errorf("graph: %s%s%s: input %d is not a value of this graph",
                                       g->scope, g->scope[0] ? "." : "", op->name, i));
            return -1;
        }
    if (!op->infer) {
        hp_graph_fail(g, hp_errorf("graph: operator '%s' is emitted by passes only", op->name));
        return -1;
    }
    hp_node tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.op = op;
    tmp.nin = nin;
    for (int i = 0; i < nin; i++) tmp.in[i] = in[i];
    if (a) tmp.a = *a;
    tmp.phase = HP_PHASE_FWD;
    tmp.fwd_node = -1;
    snprintf(tmp.name, sizeof tmp.name, "%.62s%s%.30s", g->scope, g->scope[0] ? "." : "", op->name);
    hp_shape shapes[HP_MAX_OUT];
    hp_dtype dtypes[HP_MAX_OUT];
    for (int i = 0; i < HP_MAX_OUT; i++) dtypes[i] = HP_F32;
    hp_status s = op->infer(g, &tmp, shapes, dtypes);
    if (s) {
        hp_graph_fail(g, hp_error_wrap(s, "graph: %s", tmp.name));
        return -1;
    }
    tmp.nout = op->nout;
    for (int i = 0; i < op->nout; i++) {
        char nm[HP_NAME_LEN];
        snprintf(nm, sizeof nm, "%.80s:%d", tmp.name, i);
        int v = hp_graph_value(g, HP_V_ACT, dtypes[i], shapes[i], nm);
        if (v < 0) return -1;
        tmp.out[i] = v;
        if (op->nograd_outs & (1u << i)) g->vals[v].no_grad = 1;
    }
    int id = push_node(g);
    if (id < 0) return -1;
    g->nodes[id] = tmp;
    for (int i = 0; i < tmp.nout; i++) g->vals[tmp.out[i]].producer = id;
    if (outs)
        for (int i = 0; i < tmp.nout; i++) outs[i] = tmp.out[i];
    return tmp.out[0];
}

int hp_graph_node_into(hp_graph *g, const hp_opdef *op, const int *in, int nin, const int *out,
                       int nout, const hp_attrs *a, hp_phase phase, int fwd_node) {
    if (g->err) return -1;
    HP_ASSERT(nin <= HP_MAX_IN && nout <= HP_MAX_OUT);
    hp_attrs attrs;
    memset(&attrs, 0, sizeof attrs);
    if (a) attrs = *a; /* a may point into the node array, which may move */
    int id = push_node(g);
    if (id < 0) return -1;
    hp_node *n = &g->nodes[id];
    n->op = op;
    n->nin = nin;
    n->nout = nout;
    for (int i = 0; i < nin; i++) n->in[i] = in[i];
    for (int i = 0; i < nout; i++) {
        n->out[i] = out[i];
        if (out[i] >= 0) g->vals[out[i]].producer = id;
    }
    if (a) n->a = attrs;
    n->phase = phase;
    n->fwd_node = fwd_node;
    if (fwd_node >= 0) {
        char fname[HP_NAME_LEN];
        memcpy(fname, g->nodes[fwd_node].name, sizeof fname);
        snprintf(n->name, sizeof n->name, "%.62s.%.30s", fname, op->name);
    }
    else
        snprintf(n->name, sizeof n->name, "%s", op->name);
    return id;
}

int hp_graph_params(const hp_graph *g, int *ids, int cap) {
    int n = 0;
    for (int i = 0; i < g->nvals; i++)
        if (g->vals[i].kind == HP_V_PARAM) {
            if (ids && n < cap) ids[n] = i;
            n++;
        }
    return n;
}

int hp_graph_readers(const hp_graph *g, int v) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < hp_node_nin_all(&g->nodes[i]); k++) n += hp_node_input(g, &g->nodes[i], k) == v;
    return n;
}

int hp_graph_find(const hp_graph *g, const char *name) {
    for (int i = 0; i < g->nvals; i++)
        if (strcmp(g->vals[i].name, name) == 0) return i;
    return -1;
}

int hp_graph_node_list(hp_graph *g, const hp_opdef *op, const int *in, int nin, const int *xin, int nxin,
                       const int *out, int nout, const hp_attrs *a, hp_phase phase) {
    if (g->err) return -1;
    if (g->nxin + nxin > g->capxin) {
        int cap = g->capxin ? g->capxin : 64;
        while (cap < g->nxin + nxin) cap *= 2;
        int *x = realloc(g->xin, (size_t)cap * sizeof *x);
        if (!x) {
            hp_graph_fail(g, hp_errorf("graph: out of memory"));
            return -1;
        }
        g->xin = x;
        g->capxin = cap;
    }
    int id = hp_graph_node_into(g, op, in, nin, out, nout, a, phase, -1);
    if (id < 0) return -1;
    g->nodes[id].xin_at = g->nxin;
    g->nodes[id].nxin = nxin;
    for (int k = 0; k < nxin; k++) g->xin[g->nxin++] = xin[k];
    return id;
}

hp_status hp_graph_clone(hp_graph **out, const hp_graph *g) {
    *out = NULL;
    if (g->err) return hp_errorf("graph: cannot copy a graph with an error: %s", hp_status_msg(g->err));
    hp_graph *c = calloc(1, sizeof *c);
    if (!c) return hp_errorf("graph: out of memory");
    *c = *g;
    c->err = HP_OK;
    c->vals = malloc(sizeof *c->vals * (size_t)(g->capv ? g->capv : 1));
    c->nodes = malloc(sizeof *c->nodes * (size_t)(g->capn ? g->capn : 1));
    c->xin = malloc(sizeof *c->xin * (size_t)(g->capxin ? g->capxin : 1));
    c->blob = malloc((size_t)(g->capblob ? g->capblob : 1));
    if (!c->vals || !c->nodes || !c->xin || !c->blob) {
        hp_graph_destroy(c);
        return hp_errorf("graph: out of memory");
    }
    if (g->nvals) memcpy(c->vals, g->vals, sizeof *c->vals * (size_t)g->nvals);
    if (g->nnodes) memcpy(c->nodes, g->nodes, sizeof *c->nodes * (size_t)g->nnodes);
    if (g->nxin) memcpy(c->xin, g->xin, sizeof *c->xin * (size_t)g->nxin);
    if (g->nblob) memcpy(c->blob, g->blob, (size_t)g->nblob);
    *out = c;
    return HP_OK;
}

long hp_graph_blob(hp_graph *g, const void *data, size_t bytes) {
    if (g->err) return -1;
    long at = (g->nblob + 15) / 16 * 16;
    if (at + (long)bytes > g->capblob) {
        long cap = g->capblob ? g->capblob : 256;
        while (cap < at + (long)bytes) cap *= 2;
        char *b = realloc(g->blob, (size_t)cap);
        if (!b) {
            hp_graph_fail(g, hp_errorf("graph: out of memory"));
            return -1;
        }
        g->blob = b;
        g->capblob = cap;
    }
    memcpy(g->blob + at, data, bytes);
    g->nblob = at + (long)bytes;
    return at;
}

int hp_graph_const(hp_graph *g, const char *name, hp_dtype dtype, hp_shape shape, const void *data) {
    if (g->err || !check_shape(g, "constant", name, shape)) return -1;
    long at = hp_graph_blob(g, data, (size_t)hp_shape_numel(&shape) * hp_dtype_size(dtype));
    int id = at < 0 ? -1 : hp_graph_value(g, HP_V_CONST, dtype, shape, name);
    if (id >= 0) {
        g->vals[id].init = at;
        g->vals[id].no_grad = 1;
    }
    return id;
}

int hp_graph_view(hp_graph *g, int base, int64_t offset, hp_shape shape, const char *name) {
    if (g->err) return -1;
    if (base < 0 || base >= g->nvals || g->vals[base].view_of >= 0) {
        hp_graph_fail(g, hp_errorf("graph: view '%s': base %d is no value or is itself a view", name ? name : "", base));
        return -1;
    }
    int64_t n = hp_shape_numel(&shape);
    if (offset < 0 || n < 0 || offset + n > hp_val_numel(g, base)) {
        hp_graph_fail(g, hp_errorf("graph: view '%s': elements [%lld, %lld) are outside '%s' (%lld elements)",
                                   name ? name : "", (long long)offset, (long long)(offset + n), g->vals[base].name,
                                   (long long)hp_val_numel(g, base)));
        return -1;
    }
    const hp_value b = g->vals[base];
    int id = hp_graph_value(g, b.kind == HP_V_PARAM || b.kind == HP_V_STATE ? HP_V_ACT : b.kind, b.dtype, shape, name);
    if (id < 0) return -1;
    hp_value *v = &g->vals[id];
    v->view_of = base;
    v->view_offset = offset;
    v->persistent = b.persistent;
    v->no_grad = 1;
    return id;
}
