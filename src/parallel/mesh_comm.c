/* parallel/mesh_comm: one comm group per (mesh axis, group) (mesh_comm.h). */
#include "parallel/mesh_comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hp_mesh_comm {
    hp_mesh mesh;
    int nranks;
    hp_comm_group **by_rank; /* [ndim * nranks]: axis a, rank r -> group */
    hp_comm_group **back;    /* [nranks]: the "pp" axis's second group of rank r (NULL: no such axis) */
    int back_axis;
    hp_comm_group **groups;  /* [ngroups], owned */
    int ngroups;
};

void hp_mesh_comm_destroy(hp_mesh_comm *mc) {
    if (!mc) return;
    for (int i = 0; i < mc->ngroups; i++) hp_comm_group_destroy(mc->groups[i]);
    free(mc->groups);
    free(mc->by_rank);
    free(mc->back);
    free(mc);
}

/* "tp[0,1]", or "tp#3" when the rank list does not fit. */
static void group_name(char *buf, size_t n, const char *axis, const int *ranks, int k, int index) {
    int used = snprintf(buf, n, "%s[", axis);
    for (int i = 0; i < k && used > 0 && (size_t)used < n; i++)
        used += snprintf(buf + used, n - (size_t)used, "%s%d", i ? "," : "", ranks[i]);
    if (used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, "]");
    if (used < 0 || (size_t)used >= n) snprintf(buf, n, "%s#%d", axis, index);
}

hp_status hp_mesh_comm_create(hp_mesh_comm **out, hp_comm_world *w, const hp_mesh *m) {
    *out = NULL;
    int size = hp_mesh_size(m), ws = hp_comm_world_size(w);
    char ms[128];
    if (size != ws)
        return hp_errorf("mesh '%s' has %d ranks but the world has %d", hp_mesh_str(ms, sizeof ms, m), size, ws);
    hp_mesh_comm *mc = calloc(1, sizeof *mc);
    if (!mc) return hp_errorf("mesh comm: out of memory");
    mc->mesh = *m;
    mc->nranks = size;
    int total = 0, pp = hp_mesh_axis(m, "pp");
    for (int a = 0; a < m->ndim; a++) total += size / m->size[a];
    if (pp >= 0) total += size / m->size[pp]; /* the pipeline axis's second set */
    mc->by_rank = calloc((size_t)(m->ndim > 0 ? m->ndim : 1) * (size_t)size, sizeof *mc->by_rank);
    mc->groups = calloc((size_t)(total > 0 ? total : 1), sizeof *mc->groups);
    int *ranks = malloc((size_t)size * sizeof *ranks);
    hp_status st = HP_OK;
    if (!mc->by_rank || !mc->groups || !ranks) {
        st = hp_errorf("mesh comm: out of memory");
        goto fail;
    }
    mc->back_axis = pp;
    if (pp >= 0 && !(mc->back = calloc((size_t)size, sizeof *mc->back))) {
        st = hp_errorf("mesh comm: out of memory");
        goto fail;
    }
    for (int a = 0; a <= m->ndim; a++) { /* axis ndim: the pipeline axis again (its second set) */
        int ax = a < m->ndim ? a : pp, index = 0;
        if (ax < 0) break;
        for (int r = 0; r < size; r++) {
            int coord[HP_MESH_MAX_DIMS];
            hp_mesh_coords(coord, m, r);
            if (coord[ax] != 0) continue; /* the group's first member creates it */
            hp_mesh_axis_group(ranks, NULL, m, ax, r);
            char name[64], axname[24];
            snprintf(axname, sizeof axname, "%s%s", m->name[ax], a < m->ndim ? "" : ".back");
            group_name(name, sizeof name, axname, ranks, m->size[ax], index++);
            hp_comm_group *g = NULL;
            st = hp_comm_group_create(&g, w, ranks, m->size[ax], name);
            if (st) goto fail;
            mc->groups[mc->ngroups++] = g;
            for (int i = 0; i < m->size[ax]; i++) {
                if (a < m->ndim) mc->by_rank[(size_t)a * (size_t)size + (size_t)ranks[i]] = g;
                else mc->back[ranks[i]] = g;
            }
        }
    }
    free(ranks);
    *out = mc;
    return HP_OK;
fail:
    free(ranks);
    hp_mesh_comm_destroy(mc);
    return st;
}

const hp_mesh *hp_mesh_comm_mesh(const hp_mesh_comm *mc) { return &mc->mesh; }

hp_comm_group *hp_mesh_comm_group(const hp_mesh_comm *mc, int axis, int rank) {
    if (axis < 0 || axis >= mc->mesh.ndim || rank < 0 || rank >= mc->nranks) return NULL;
    return mc->by_rank[(size_t)axis * (size_t)mc->nranks + (size_t)rank];
}

hp_comm_group *hp_mesh_comm_group_back(const hp_mesh_comm *mc, int axis, int rank) {
    if (!mc->back || axis != mc->back_axis || rank < 0 || rank >= mc->nranks) return NULL;
    return mc->back[rank];
}
