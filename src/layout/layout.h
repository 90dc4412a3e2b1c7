/* layout/layout: device meshes, placements and layouts — the vocabulary of
 * sharding plans.
 *
 * A mesh arranges the world's ranks as an n-dimensional grid with named axes
 * (e.g. "dp" x "tp"); rank r sits at the row-major coordinates of r (the last
 * axis varies fastest, so the last axis groups contiguous ranks, which sit in
 * one supernode). A placement says what a tensor looks like along one mesh
 * axis: Shard(d) (split along tensor dim d), Replicate, or Partial(op) (each
 * rank holds a term; the value is their sum / average / max). A layout is one
 * placement per mesh axis. When several axes shard the same tensor dim, the
 * earlier mesh axis is the outer split.
 *
 * Uneven shards (the ceil-chunk rule, as torch.chunk and FSDP2): a dim of size
 * n split k ways gives every member ceil(n/k) entries except at the end,
 * member i holding [i*c, min(n, (i+1)*c)) with c = ceil(n/k); trailing
 * members may hold fewer or none.
 *
 * Text form (plans, errors, printouts): placements "S(0)", "R", "P(sum)",
 * "P(avg)", "P(max)"; a layout is comma-separated "placement@axis" for every
 * axis in mesh order, e.g. "S(0)@dp,R@tp"; a mesh is "dp=2,tp=2". */
#ifndef HP_LAYOUT_LAYOUT_H
#define HP_LAYOUT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

#define HP_MESH_MAX_DIMS 4
#define HP_AXIS_NAME_LEN 16

typedef struct {
    int ndim;
    int size[HP_MESH_MAX_DIMS];
    char name[HP_MESH_MAX_DIMS][HP_AXIS_NAME_LEN];
} hp_mesh;

typedef enum { HP_REPLICATE = 0, HP_SHARD = 1, HP_PARTIAL = 2 } hp_pl_kind;
typedef enum { HP_PARTIAL_SUM = 0, HP_PARTIAL_AVG = 1, HP_PARTIAL_MAX = 2 } hp_partial_op;

typedef struct {
    hp_pl_kind kind;
    int dim;          /* HP_SHARD: tensor dim (>= 0) */
    hp_partial_op op; /* HP_PARTIAL */
} hp_placement;

typedef struct {
    int ndim; /* = mesh ndim */
    hp_placement p[HP_MESH_MAX_DIMS];
} hp_layout;

/* ---- meshes ---- */
/* "dp=2,tp=2" -> mesh; errors name the text and the problem. */
hp_status hp_mesh_parse(hp_mesh *out, const char *text);
int hp_mesh_size(const hp_mesh *m); /* number of ranks */
int hp_mesh_axis(const hp_mesh *m, const char *name); /* index, or -1 */
/* Coordinates of rank r (coord[ndim]) and back. */
void hp_mesh_coords(int *coord, const hp_mesh *m, int rank);
int hp_mesh_rank(const hp_mesh *m, const int *coord);
/* The ranks of rank r's group along axis `axis` (ranks[size[axis]], in axis
 * order); *index gets r's position in it. */
void hp_mesh_axis_group(int *ranks, int *index, const hp_mesh *m, int axis, int rank);
char *hp_mesh_str(char *buf, size_t n, const hp_mesh *m);

/* ---- placements and layouts ---- */
static inline hp_placement hp_replicate(void) { return (hp_placement){HP_REPLICATE, 0, HP_PARTIAL_SUM}; }
static inline hp_placement hp_shard(int dim) { return (hp_placement){HP_SHARD, dim, HP_PARTIAL_SUM}; }
static inline hp_placement hp_partial(hp_partial_op op) { return (hp_placement){HP_PARTIAL, 0, op}; }
int hp_placement_eq(hp_placement a, hp_placement b);
int hp_layout_eq(const hp_layout *a, const hp_layout *b);
/* The same layout with every placement on an axis of size 1 made Replicate
 * (on such an axis all placements describe the same data). */
hp_layout hp_layout_canonical(const hp_layout *l, const hp_mesh *m);
/* All Replicate on every axis of m. */
hp_layout hp_layout_replicated(const hp_mesh *m);
int hp_layout_is_replicated(const hp_layout *l);
int hp_layout_has_partial(const hp_layout *l);

/* Text form; parse errors name the text and the problem. */
char *hp_placement_str(char *buf, size_t n, hp_placement p);
char *hp_layout_str(char *buf, size_t n, const hp_layout *l, const hp_mesh *m);
hp_status hp_layout_parse(hp_layout *out, const char *text, const hp_mesh *m);
/* Checks a layout against a tensor of rank `ndim` (shard dims in range). */
hp_status hp_layout_check(const hp_layout *l, const hp_mesh *m, int ndim, const char *tensor_name);

/* ---- local pieces ---- */
/* The ceil-chunk rule: [*begin, *end) of member i of k for a dim of size n. */
void hp_chunk(int64_t *begin, int64_t *end, int64_t n, int k, int i);
/* The local shape and, per tensor dim, the offset of rank r's piece of a
 * tensor with global shape `global` (offset may be NULL). */
void hp_local_shape(hp_shape *local, int64_t *offset, const hp_shape *global, const hp_layout *l,
                    const hp_mesh *m, int rank);

#endif
