/* runtime/trace_hook: a program's steps as trace events (see the header). */
#include "runtime/trace_hook.h"

#include "core/opdef.h"

static const char *const phase_names[HP_NPHASES] = {"fwd", "bwd", "opt"};

static void on_step(void *ctx, const hp_node *n, double t0, double t1) {
    hp_trace_hook *h = ctx;
    const char *ph = phase_names[n->phase];
    int64_t bytes = n->op->bytes ? (int64_t)n->op->bytes(h->g, n) : 0;
    hp_coll_desc d;
    /* a slot-paired start and wait span one event on a comm track; the other collectives their own call */
    int slot = hp_coll_describe(&d, h->g, n) && d.pair == HP_COLL_PAIR_SLOT ? (int)d.role : -1;
    if (slot == HP_COLL_START) {
        int s = d.pair_key % HP_TRACE_HOOK_SLOTS;
        h->start[s] = t0;
        h->track[s] = hp_trace_comm_track_begin(h->trace);
        hp_trace_event(h->trace, n->name, ph, HP_TRACE_COMPUTE, t0, t1, 0);
    } else if (slot == HP_COLL_WAIT) {
        int s = d.pair_key % HP_TRACE_HOOK_SLOTS;
        /* the wait's bytes are its start's */
        hp_trace_event(h->trace, n->name, ph, h->track[s], h->start[s], t1, (int64_t)d.bytes);
        hp_trace_comm_track_end(h->trace, h->track[s]);
    } else if (n->op->communicates) {
        int tr = hp_trace_comm_track_begin(h->trace);
        hp_trace_event(h->trace, n->name, ph, tr, t0, t1, bytes);
        hp_trace_comm_track_end(h->trace, tr);
    } else {
        hp_trace_event(h->trace, n->name, ph, HP_TRACE_COMPUTE, t0, t1, 0);
    }
}

void hp_trace_hook_attach(hp_trace_hook *h, hp_program *p, const hp_graph *g, hp_trace *t) {
    h->trace = t;
    h->g = g;
    hp_program_set_hook(p, on_step, h);
}

void hp_trace_hook_detach(hp_program *p) { hp_program_set_hook(p, NULL, NULL); }
