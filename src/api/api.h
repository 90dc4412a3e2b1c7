/* api/api: what the public handles of include/hyperpar/hyperpar.h hold — the
 * internal objects each wraps — shared by the api room's files, which
 * convert public structs to internal ones and call the library. */
#ifndef HP_API_API_H
#define HP_API_API_H

#include <hyperpar/hyperpar.h>

#include "comm/comm.h"
#include "core/graph.h"
#include "layout/plan.h"
#include "models/gpt2.h"

struct hp_model {
    hp_gpt2_config cfg; /* checked (Vp filled) */
    int B, T;
    hp_graph *g;        /* the forward graph, loss set */
    hp_gpt2_io io;
};

struct hp_shard_plan {
    hp_plan plan;
    char mesh[128];
    char *text; /* the file form (owned) */
};

struct hp_world {
    hp_comm_world *w;
};

/* A copy of s (NULL stays NULL); *out is malloc'd. */
hp_status hp_api_strdup(char **out, const char *s);

#endif
