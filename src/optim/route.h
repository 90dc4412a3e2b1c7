/* optim/route: which optimizer updates which parameter. With optimizer
 * "adamw" everything goes to AdamW. With "muon", parameters the model builder
 * marked hidden_matrix go to Muon and the rest (embeddings, LM head, norms,
 * biases) to AdamW; then two lists of comma-separated fnmatch globs override
 * that: names matching `adamw_params` go to AdamW, names matching
 * `muon_params` go to Muon. Errors (one line, naming field and parameter):
 * a name matching both lists, a pattern matching no parameter, a Muon
 * parameter that is not a matrix. Muon takes 2-D matrices [rows, cols] and
 * N-D stacks [d0, ..., rows, cols]: d0 x ... x d(N-3) independent matrices,
 * each orthogonalised on its own (e.g. MoE experts [E, C, Fe]; the experts'
 * gate and up projections [E, 2, Fe, C]: 2E matrices). */
#ifndef HP_OPTIM_ROUTE_H
#define HP_OPTIM_ROUTE_H

#include "core/status.h"
#include "core/tensor.h"

typedef enum { HP_OPT_ADAMW = 0, HP_OPT_MUON = 1 } hp_opt_kind;

/* One trainable parameter as the model builder describes it. */
typedef struct {
    const char *name; /* unique, e.g. "h.0.attn.qkv.weight" */
    float *param;     /* [shape] */
    float *grad;      /* [shape] */
    hp_shape shape;
    int hidden_matrix; /* a hidden weight matrix (or stack of them): Muon's by default */
} hp_opt_param;

/* 1 if Muon can take a parameter of this shape: 2 or more dims (the last two
 * a matrix's rows and columns, the others a stack of them). */
int hp_optim_is_matrix(const hp_shape *shape);
/* The matrices of a stack: the product of every dim but the last two (1 for
 * a 2-D matrix): [E, 2, F, C] is 2E matrices of [F, C]. */
int64_t hp_optim_stack_count(const hp_shape *shape);

/* The default Muon rule, by shape and name (the graph carries no optimizer
 * marks): a hidden matrix is a parameter of 2 or more dims that is neither a
 * bias (name ending in "bias") nor an embedding table or output head (names
 * "wte", "wpe", or containing "embed" or "lm_head"). */
int hp_optim_hidden_matrix(const char *name, const hp_shape *shape);

/* "adamw" or "muon"; an unknown name is an error naming the field `optimizer`. */
hp_status hp_opt_kind_parse(hp_opt_kind *out, const char *name);
const char *hp_opt_kind_name(hp_opt_kind k);

/* out[nparams]: the optimizer of each parameter. muon_params / adamw_params
 * may be NULL or empty (no override); both are ignored for HP_OPT_ADAMW. */
hp_status hp_optim_route(hp_opt_kind *out, hp_opt_kind kind, const char *muon_params,
                         const char *adamw_params, const hp_opt_param *params, int nparams);
/* The same for one rank's part of the model (the parameters whose pieces it
 * holds): a pattern may match none of them (it matches another rank's);
 * check the patterns against the whole model with hp_optim_route. */
hp_status hp_optim_route_part(hp_opt_kind *out, hp_opt_kind kind, const char *muon_params,
                              const char *adamw_params, const hp_opt_param *params, int nparams);

#endif
