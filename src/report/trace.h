/* report/trace: a rank's Chrome trace file (runtime/trace's format) read
 * back for the report — the compute track's kernels (fwd, bwd, opt) and
 * every collective track's events as intervals, cut into training steps (a
 * step starts at the first forward kernel after an optimizer kernel) — and
 * what the report computes over a range of traced steps: per step and in
 * all, compute, optimizer, communication, the communication hidden behind
 * compute (overlapping a kernel) and the rest. */
#ifndef HP_REPORT_TRACE_H
#define HP_REPORT_TRACE_H

#include <stdint.h>

#include "core/status.h"

enum { HP_REP_FWD = 0, HP_REP_BWD = 1, HP_REP_OPT = 2, HP_REP_COMM = 3 };

typedef struct {
    double t0, t1; /* microseconds after the file's origin */
    int kind;      /* HP_REP_FWD.. HP_REP_COMM */
    int step;      /* 0-based traced step */
} hp_rep_event;

typedef struct {
    int rank;
    hp_rep_event *ev; /* compute events first (by start), then collectives (by start) */
    int n, ncompute;
    int nsteps;
    int64_t dropped;  /* events the trace had no room for */
} hp_rep_trace;

/* Event times beyond this are refused (1e15 us: 31 years). */
#define HP_REP_MAX_US 1e15

/* Reads PATH; errors name the file (and its line for JSON errors) and the
 * field: an event's ts outside +-HP_REP_MAX_US or dur outside
 * 0..HP_REP_MAX_US, a rank or a dropped count that is not a whole number
 * in range. */
hp_status hp_rep_trace_load(hp_rep_trace *out, const char *path);
void hp_rep_trace_free(hp_rep_trace *t);

typedef struct {
    double span;      /* first event's start to last event's end, summed per step (us) */
    double compute;   /* forward and backward kernels (union, us) */
    double optimizer; /* optimizer-phase kernels */
    double comm;      /* collectives (union over tracks) */
    double hidden;    /* of comm, the time a kernel ran too */
    double other;     /* span minus the union of kernels and collectives */
} hp_rep_split;

/* Over traced steps [from, to] (0-based, inclusive; clipped to the trace). */
hp_status hp_rep_trace_split(hp_rep_split *out, const hp_rep_trace *t, int from, int to);
/* The time range of traced steps [from, to]: [*t0, *t1] (us); 0 if empty. */
int hp_rep_trace_range(double *t0, double *t1, const hp_rep_trace *t, int from, int to);

#endif
