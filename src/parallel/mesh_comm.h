/* parallel/mesh_comm: the communication groups of a device mesh in one
 * process — one hp_comm_group per (mesh axis, group of ranks along it), so a
 * rank can reach its peers along any axis.
 *
 * Create it once per process, from one thread, before the ranks use it (the
 * groups are created in the same order on every process: axis by axis, groups
 * in order of their lowest rank). Group names read "<axis>[r0,r1,...]". */
#ifndef HP_PARALLEL_MESH_COMM_H
#define HP_PARALLEL_MESH_COMM_H

#include "comm/comm.h"
#include "layout/layout.h"

typedef struct hp_mesh_comm hp_mesh_comm;

/* Fails when the mesh size differs from the world size. */
hp_status hp_mesh_comm_create(hp_mesh_comm **out, hp_comm_world *w, const hp_mesh *m);
void hp_mesh_comm_destroy(hp_mesh_comm *mc);
const hp_mesh *hp_mesh_comm_mesh(const hp_mesh_comm *mc);
/* The group of `rank` along mesh axis `axis` (member i has coordinate i). */
hp_comm_group *hp_mesh_comm_group(const hp_mesh_comm *mc, int axis, int rank);
/* The second group of `rank` along an axis named "pp" (the same ranks; a pipeline's backward transfers,
 * matched apart from the forward ones); NULL for another axis. Created with the others, after them. */
hp_comm_group *hp_mesh_comm_group_back(const hp_mesh_comm *mc, int axis, int rank);

#endif
