/* models/build: the public model-writing calls of include/hyperpar/hyperpar.h
 * that are not core/graph's or ops' own (inputs and parameters with public
 * dims, a parameter's stated init, marking the loss) and the initialisation
 * of a model's parameters: by the init stated where each was declared, else
 * by name. Model builders (models/gpt2.c) and users write models on them. */
#include <hyperpar/hyperpar.h>

#include <math.h>
#include <string.h>

#include "core/graph.h"
#include "core/rng.h"
#include "ops/ops.h"

_Static_assert((int)HP_ELEM_F32 == (int)HP_F32 && (int)HP_ELEM_I32 == (int)HP_I32, "hp_elem mirrors hp_dtype");
_Static_assert(HP_DIMS_MAX == HP_MAX_DIMS, "hp_dims holds an hp_shape");
_Static_assert(HP_NAME_MAX == HP_NAME_LEN, "one name length");

static int to_shape(hp_shape *s, hp_graph *g, const char *what, const char *name, hp_dims d) {
    if (d.ndim < 0 || d.ndim > HP_MAX_DIMS) {
        hp_graph_fail(g, hp_errorf("%s '%s': %d dims (0 to %d allowed)", what, name ? name : "?", d.ndim,
                                   HP_MAX_DIMS));
        return 0;
    }
    memset(s, 0, sizeof *s);
    s->ndim = d.ndim;
    for (int i = 0; i < d.ndim; i++) s->d[i] = d.d[i];
    return 1;
}

int hp_input(hp_graph *g, const char *name, hp_elem elem, hp_dims dims) {
    hp_shape s;
    if (hp_graph_status(g) || !to_shape(&s, g, "input", name, dims)) return -1;
    if (elem != HP_ELEM_F32 && elem != HP_ELEM_I32) {
        hp_graph_fail(g, hp_errorf("input '%s': element type %d is not HP_ELEM_F32 or HP_ELEM_I32", name, (int)elem));
        return -1;
    }
    return hp_graph_input(g, name, (hp_dtype)elem, s);
}

int hp_param(hp_graph *g, const char *name, hp_dims dims) {
    hp_shape s;
    if (hp_graph_status(g) || !to_shape(&s, g, "parameter", name, dims)) return -1;
    return hp_graph_param(g, name, s);
}

/* An error naming the parameter when `in` is not an init for dims, else HP_OK. */
static hp_status check_init(const char *name, hp_dims dims, const hp_init *in) {
    const char *nm = name ? name : "?";
    switch (in->kind) {
    case HP_INIT_BY_NAME:
    case HP_INIT_ZEROS:
    case HP_INIT_ONES:
        break;
    case HP_INIT_CONSTANT:
        if (!isfinite(in->value)) return hp_errorf("parameter '%s': constant init %g is not finite", nm, in->value);
        break;
    case HP_INIT_NORMAL:
        if (!isfinite(in->std) || in->std < 0)
            return hp_errorf("parameter '%s': normal init's std %g is not a finite value >= 0", nm, in->std);
        break;
    case HP_INIT_UNIFORM:
        if (!isfinite(in->low) || !isfinite(in->high) || in->low > in->high)
            return hp_errorf("parameter '%s': uniform init's bounds [%g, %g] are not finite with low <= high", nm,
                             in->low, in->high);
        break;
    default:
        return hp_errorf("parameter '%s': unknown init kind %d", nm, (int)in->kind);
    }
    int64_t d0 = dims.ndim > 0 ? dims.d[0] : 1;
    if (in->rows < 0 || in->rows > d0)
        return hp_errorf("parameter '%s': init rows %lld outside 0 .. %lld (its first dimension)", nm,
                         (long long)in->rows, (long long)d0);
    return HP_OK;
}

int hp_param_init(hp_graph *g, const char *name, hp_dims dims, hp_init init) {
    int id = hp_param(g, name, dims);
    if (id < 0) return -1;
    hp_status st = check_init(name, dims, &init);
    if (st) {
        hp_graph_fail(g, st);
        return -1;
    }
    if (init.kind == HP_INIT_BY_NAME) return id;
    long at = hp_graph_blob(g, &init, sizeof init); /* plain data, read back by stated_init */
    if (at < 0) return -1;
    g->vals[id].param_init = at;
    return id;
}

void hp_set_loss(hp_graph *g, int loss, int per_position) {
    if (hp_graph_status(g)) return;
    if (loss < 0 || loss >= g->nvals || hp_val_numel(g, loss) != 1) {
        hp_graph_fail(g, hp_errorf("hp_set_loss: value %d is not a scalar of the graph", loss));
        return;
    }
    if (per_position >= g->nvals) {
        hp_graph_fail(g, hp_errorf("hp_set_loss: per-position value %d is not in the graph", per_position));
        return;
    }
    g->vals[loss].persistent = 1;
    if (per_position >= 0) g->vals[per_position].persistent = 1;
    g->loss = loss; /* what training differentiates */
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The init of parameter v: the one stated where it was declared, else the
 * by-name rule's. */
static hp_init stated_init(const hp_graph *g, int v) {
    const hp_value *val = &g->vals[v];
    hp_init in;
    if (val->param_init >= 0) {
        memcpy(&in, hp_graph_blob_at(g, val->param_init), sizeof in);
        return in;
    }
    const char *nm = val->name;
    if (ends_with(nm, ".bias")) return hp_init_zeros();
    if ((strstr(nm, "ln") || strstr(nm, "norm")) && ends_with(nm, ".weight")) return hp_init_ones();
    return hp_init_normal(0.02);
}

/* Fills p[numel] (rows of row_len floats) as `in` says, drawing from rng. */
static void fill(float *p, const hp_init *in, hp_rng *rng, size_t numel, size_t row_len) {
    size_t live = in->rows > 0 ? (size_t)in->rows * row_len : numel; /* the rest are 0 and draw nothing */
    for (size_t k = 0; k < numel; k++) {
        float x = 0.0f;
        if (k < live) switch (in->kind) {
            case HP_INIT_ONES: x = 1.0f; break;
            case HP_INIT_CONSTANT: x = (float)in->value; break;
            case HP_INIT_NORMAL: x = (float)(in->std * hp_rng_normal(rng)); break;
            case HP_INIT_UNIFORM: x = (float)(in->low + (in->high - in->low) * (double)hp_rng_uniform(rng)); break;
            default: break; /* zeros (checked at declaration) */
            }
        p[k] = x;
    }
}

hp_status hp_model_init(float *const *params, const hp_graph *g, const char (*names)[HP_NAME_LEN], int n,
                        uint64_t seed) {
    int np = hp_graph_params(g, NULL, 0);
    if (n != np) return hp_errorf("init: %d parameter tensors given, the model has %d", n, np);
    hp_rng rng;
    hp_rng_seed(&rng, seed);
    for (int v = 0, i = 0; v < g->nvals; v++) {
        const hp_value *val = &g->vals[v];
        if (val->kind != HP_V_PARAM) continue;
        if (strcmp(names[i], val->name) != 0)
            return hp_errorf("init: parameter %d is '%s', the model's is '%s'", i, names[i], val->name);
        size_t numel = (size_t)hp_shape_numel(&val->shape);
        hp_init in = stated_init(g, v);
        fill(params[i++], &in, &rng, numel, numel / (size_t)(val->shape.d[0] > 0 ? val->shape.d[0] : 1));
    }
    return HP_OK;
}
