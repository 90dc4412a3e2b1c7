/* api/world: hp_world, the collective layer's world (comm/comm). */
#include <stdlib.h>

#include "api/api.h"
#include "comm/launch.h"

void hp_world_options_default(hp_world_options *o) {
    hp_comm_opts c;
    hp_comm_opts_default(&c);
    *o = (hp_world_options){c.ranks_per_supernode, c.supernodes, c.mpi, c.timeout_s, c.inter_bw_gbps,
                            c.inter_latency_us, c.a2a_fuse_bytes};
}

hp_status hp_world_create(hp_world **out, const hp_world_options *o) {
    *out = NULL;
    hp_comm_opts c;
    hp_comm_opts_default(&c);
    if (o) {
        c.ranks_per_supernode = o->ranks_per_supernode, c.supernodes = o->supernodes, c.mpi = o->mpi;
        c.timeout_s = o->timeout_s, c.inter_bw_gbps = o->inter_bw_gbps, c.inter_latency_us = o->inter_latency_us;
        c.a2a_fuse_bytes = o->a2a_fuse_bytes;
    }
    hp_world *w = calloc(1, sizeof *w);
    if (!w) return hp_errorf("hp_world_create: out of memory");
    hp_status st = hp_comm_world_create(&w->w, &c);
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return HP_OK;
}

void hp_world_free(hp_world *w) {
    if (!w) return;
    hp_comm_world_destroy(w->w);
    free(w);
}

int hp_world_size(const hp_world *w) { return hp_comm_world_size(w->w); }
int hp_world_supernodes(const hp_world *w) { return hp_comm_supernodes(w->w); }
int hp_world_uses_mpi(const hp_world *w) { return hp_comm_uses_mpi(w->w); }
void hp_world_hosted_ranks(const hp_world *w, int *first, int *count) { hp_comm_hosted_ranks(w->w, first, count); }

int hp_world_launched_processes(void) { return hp_launch_mpi_processes(); }
int hp_world_under_launcher(void) { return hp_launch_under_launcher(); }
