/* tools/dist_session: a GPT-2 model distributed by a plan — the global graph
 * (built and differentiated), the plan's layouts, the comm world (one
 * supernode per process, the mesh's ranks spread evenly over the processes)
 * and the compiled per-rank programs. Used by train, bench and plan. */
#ifndef HP_TOOLS_DIST_SESSION_H
#define HP_TOOLS_DIST_SESSION_H

#include "layout/plan.h"
#include "models/gpt2.h"
#include "runtime/dist.h"

typedef struct {
    hp_gpt2_config m;
    hp_graph *g;
    hp_gpt2_io io;
    hp_plan plan;
    int have_plan;
    hp_layout *layouts;
    unsigned char *fixed;
    hp_comm_world *world;
    hp_dist *d;
} hp_dist_session;

/* Takes over *plan (freed by destroy, also on error). threads: the process's
 * compute threads, shared out among its ranks. */
hp_status hp_dist_session_create(hp_dist_session *s, const hp_gpt2_config *m, hp_plan *plan, int B, int T,
                                 int threads, double comm_timeout);
/* GPT-2 initialisation from seed, or the weights of an llm.c file (init_path
 * non-empty), scattered to every rank's pieces. */
hp_status hp_dist_session_init_params(hp_dist_session *s, uint64_t seed, const char *init_path);
/* 1 when this process hosts global rank 0 (it prints and writes metrics). */
int hp_dist_session_lead(const hp_dist_session *s);
void hp_dist_session_destroy(hp_dist_session *s);

#endif
