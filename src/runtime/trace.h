/* runtime/trace: a per-rank timeline of what the rank did (compute steps,
 * collectives), written as Chrome/Perfetto trace-event JSON
 * (chrome://tracing, ui.perfetto.dev). One file per rank, PREFIX.rankN.json:
 * complete events (ph "X", ts and dur in microseconds, pid = rank,
 * tid = track) and metadata events (ph "M") naming the process "rank N" and
 * its tracks: track 0 "compute", tracks 1..K "comm 0".."comm K-1", one per
 * collective that may be in flight at once.
 *
 * All memory is allocated by hp_trace_create; recording an event is a few
 * stores into a preallocated array and never allocates. When the array is
 * full, further events are counted as dropped (the file reports the count).
 * Writing builds the text in memory and allocates; do it outside the timed
 * steps.
 *
 * Names and phases are not copied: hp_trace_event keeps the pointers, so the
 * strings must stay valid until the trace is cleared, written for the last
 * time or destroyed (graph node names and string literals do).
 *
 * Threads: one trace per rank, used by that rank's thread only; nothing here
 * locks. Different ranks' traces may be used by different threads at once. */
#ifndef HP_RUNTIME_TRACE_H
#define HP_RUNTIME_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct hp_trace hp_trace;

/* The most collective tracks a trace may have. */
#define HP_TRACE_MAX_COMM_TRACKS 64
/* The compute track. Collective tracks are 1..comm_tracks. */
#define HP_TRACE_COMPUTE 0

/* A trace for `rank` with room for capacity_events events and comm_tracks
 * (1..HP_TRACE_MAX_COMM_TRACKS) collective tracks. The time origin is
 * hp_now() at creation. */
hp_status hp_trace_create(hp_trace **out, int rank, int comm_tracks, size_t capacity_events);
void hp_trace_destroy(hp_trace *t);

/* The time origin, in hp_now() seconds: the file's ts are microseconds after
 * it. Setting it (before writing) lets all ranks of a process share one
 * origin, so their files line up; it applies to events already recorded. */
void hp_trace_set_origin(hp_trace *t, double origin);
double hp_trace_origin(const hp_trace *t);

/* Records one complete event on `track` from t0 to t1 (hp_now() seconds,
 * t0 <= t1): name (required) and phase (the category, "fwd", "bwd", "opt";
 * NULL for none) are kept as pointers (see above); bytes is what a
 * collective moved (0 for compute; written as args.bytes when nonzero).
 * Never allocates. When the trace is full, or track is -1 (no collective
 * track was free, see hp_trace_comm_track_begin), the event is counted as
 * dropped. Any other track outside 0..comm_tracks, or t1 < t0, is a bug. */
void hp_trace_event(hp_trace *t, const char *name, const char *phase, int track, double t0, double t1,
                    int64_t bytes);

/* Collective tracks, so that overlapping collectives land on distinct
 * tracks: begin takes the lowest free track (1..comm_tracks) and returns it,
 * or -1 when all are in flight (events on -1 are dropped, ending -1 does
 * nothing); end frees it again. Ending a track that is not in flight is a bug.
 * A collective's event may be recorded before or after its track is ended. */
int hp_trace_comm_track_begin(hp_trace *t);
void hp_trace_comm_track_end(hp_trace *t, int track);

/* Forgets the recorded events and the dropped count (reuse between steps).
 * The origin and the collective tracks in flight are kept. */
void hp_trace_clear(hp_trace *t);

/* Counts: events held (at most the capacity), events dropped since the last
 * clear, the capacity, and collective tracks now in flight. */
typedef struct {
    size_t recorded;
    uint64_t dropped;
    size_t capacity;
    int comm_tracks;
    int comm_in_flight;
} hp_trace_counts;
hp_trace_counts hp_trace_get_counts(const hp_trace *t);

/* Writes PREFIX.rankN.json atomically (temporary name, fsync, rename): the
 * metadata events, then the recorded events in recording order, under
 * "traceEvents", with "displayTimeUnit": "ms" and "otherData" holding the
 * rank, the counts and the capacity; dropped events are also reported by a
 * "process_labels" metadata event. ts and dur are microseconds written with
 * 3 decimals (whole nanoseconds): start and end are each rounded to the
 * nanosecond after the origin and dur is their difference, so ts + dur is
 * the event's end to the nanosecond. Allocates (the text is built in memory).
 * Errors are one line and name the file. */
hp_status hp_trace_write(const hp_trace *t, const char *path_prefix);

#endif
