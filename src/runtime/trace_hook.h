/* runtime/trace_hook: records a program's steps into a per-rank trace
 * (runtime/trace) through the program's step hook: every kernel a complete
 * event on the compute track, every blocking collective an event on a
 * collective track, and a collective split by the schedule into start and
 * wait one event from its start to the end of its wait (on its own track, so
 * overlapping collectives show side by side), with its bytes. Phases become
 * the events' categories ("fwd", "bwd", "opt"). Off (hp_trace_hook_detach),
 * the program reads no clock. */
#ifndef HP_RUNTIME_TRACE_HOOK_H
#define HP_RUNTIME_TRACE_HOOK_H

#include "runtime/program.h"
#include "runtime/trace.h"

#define HP_TRACE_HOOK_SLOTS 64

typedef struct {
    hp_trace *trace;
    const hp_graph *g;
    double start[HP_TRACE_HOOK_SLOTS]; /* per collective slot: when its start ran */
    int track[HP_TRACE_HOOK_SLOTS];
} hp_trace_hook;

/* Starts recording p's steps (g: p's graph) into t. */
void hp_trace_hook_attach(hp_trace_hook *h, hp_program *p, const hp_graph *g, hp_trace *t);
void hp_trace_hook_detach(hp_program *p);

#endif
