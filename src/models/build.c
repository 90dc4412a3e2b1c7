/* models/build: the public model-writing calls of include/hyperpar/hyperpar.h
 * that are not core/graph's or ops' own (inputs and parameters with public
 * dims, marking the loss) and the by-name initialisation of a model written
 * that way. Model builders (models/gpt2.c) and users write models on them. */
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

hp_status hp_model_init_by_name(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                                int n, uint64_t seed) {
    hp_rng rng;
    hp_rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        size_t numel = (size_t)hp_shape_numel(&shapes[i]);
        float *p = params[i];
        if (ends_with(nm, ".bias")) {
            memset(p, 0, numel * sizeof(float));
        } else if ((strstr(nm, "ln") || strstr(nm, "norm")) && ends_with(nm, ".weight")) {
            for (size_t k = 0; k < numel; k++) p[k] = 1.0f;
        } else {
            for (size_t k = 0; k < numel; k++) p[k] = (float)(0.02 * hp_rng_normal(&rng));
        }
    }
    return HP_OK;
}
