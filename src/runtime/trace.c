/* runtime/trace: per-rank trace events in a preallocated array, written as
 * Chrome/Perfetto trace-event JSON (see trace.h). */
#include "runtime/trace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/timing.h"
#include "io/fsutil.h"
#include "io/json.h"

typedef struct {
    const char *name;  /* borrowed */
    const char *phase; /* borrowed, may be NULL */
    double t0, t1;     /* hp_now() seconds */
    int64_t bytes;
    int track;
} trace_ev;

struct hp_trace {
    int rank;
    int comm_tracks;
    uint64_t busy; /* bit i: collective track i + 1 is in flight */
    double origin;
    size_t cap, n;
    uint64_t dropped;
    trace_ev *ev; /* [cap] */
};

hp_status hp_trace_create(hp_trace **out, int rank, int comm_tracks, size_t capacity_events) {
    *out = NULL;
    if (rank < 0) return hp_errorf("trace: rank %d is negative", rank);
    if (comm_tracks < 1 || comm_tracks > HP_TRACE_MAX_COMM_TRACKS)
        return hp_errorf("trace: %d collective tracks, expected 1..%d", comm_tracks, HP_TRACE_MAX_COMM_TRACKS);
    if (capacity_events < 1) return hp_errorf("trace: capacity of 0 events, expected at least 1");
    if (capacity_events > SIZE_MAX / sizeof(trace_ev))
        return hp_errorf("trace: capacity of %zu events is too large", capacity_events);
    hp_trace *t = calloc(1, sizeof *t);
    if (t) t->ev = malloc(capacity_events * sizeof *t->ev);
    if (!t || !t->ev) {
        free(t);
        return hp_errorf("trace: out of memory for %zu events", capacity_events);
    }
    t->rank = rank;
    t->comm_tracks = comm_tracks;
    t->cap = capacity_events;
    t->origin = hp_now();
    *out = t;
    return HP_OK;
}

void hp_trace_destroy(hp_trace *t) {
    if (!t) return;
    free(t->ev);
    free(t);
}

void hp_trace_set_origin(hp_trace *t, double origin) { t->origin = origin; }
double hp_trace_origin(const hp_trace *t) { return t->origin; }

void hp_trace_event(hp_trace *t, const char *name, const char *phase, int track, double t0, double t1,
                    int64_t bytes) {
    HP_ASSERT(name && track >= -1 && track <= t->comm_tracks && t0 <= t1);
    if (t->n == t->cap || track < 0) {
        t->dropped++;
        return;
    }
    t->ev[t->n++] = (trace_ev){name, phase, t0, t1, bytes, track};
}

int hp_trace_comm_track_begin(hp_trace *t) {
    uint64_t all = t->comm_tracks == 64 ? ~(uint64_t)0 : (((uint64_t)1 << t->comm_tracks) - 1);
    uint64_t free_bits = ~t->busy & all;
    if (!free_bits) return -1;
    int i = __builtin_ctzll(free_bits);
    t->busy |= (uint64_t)1 << i;
    return i + 1;
}

void hp_trace_comm_track_end(hp_trace *t, int track) {
    if (track == -1) return;
    HP_ASSERT(track >= 1 && track <= t->comm_tracks);
    uint64_t bit = (uint64_t)1 << (track - 1);
    HP_ASSERT(t->busy & bit);
    t->busy &= ~bit;
}

void hp_trace_clear(hp_trace *t) {
    t->n = 0;
    t->dropped = 0;
}

hp_trace_counts hp_trace_get_counts(const hp_trace *t) {
    return (hp_trace_counts){.recorded = t->n,
                             .dropped = t->dropped,
                             .capacity = t->cap,
                             .comm_tracks = t->comm_tracks,
                             .comm_in_flight = __builtin_popcountll(t->busy)};
}

/* ---- writing ---------------------------------------------------------- */

/* Whole nanoseconds after the origin. */
static int64_t ns_since(double origin, double t) { return (int64_t)llround((t - origin) * 1e9); }

/* A microsecond value given in nanoseconds, as exact decimal text. */
static void jw_us(hp_jw *w, const char *key, int64_t ns) {
    char buf[32];
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    int n = snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
    hp_jw_key(w, key);
    hp_jw_raw(w, buf, (size_t)n);
}

static void jw_meta(hp_jw *w, const char *what, int pid, int tid, const char *key, const char *sval, int64_t ival) {
    hp_jw_object_begin(w);
    hp_jw_key(w, "name");
    hp_jw_string(w, what);
    hp_jw_key(w, "ph");
    hp_jw_string(w, "M");
    hp_jw_key(w, "pid");
    hp_jw_int(w, pid);
    hp_jw_key(w, "tid");
    hp_jw_int(w, tid);
    hp_jw_key(w, "args");
    hp_jw_object_begin(w);
    hp_jw_key(w, key);
    if (sval)
        hp_jw_string(w, sval);
    else
        hp_jw_int(w, ival);
    hp_jw_object_end(w);
    hp_jw_object_end(w);
}

hp_status hp_trace_write(const hp_trace *t, const char *path_prefix) {
    size_t plen = snprintf(NULL, 0, "%s.rank%d.json", path_prefix, t->rank) + (size_t)1;
    char *path = malloc(plen);
    if (!path) return hp_errorf("%s.rank%d.json: out of memory for the trace file name", path_prefix, t->rank);
    snprintf(path, plen, "%s.rank%d.json", path_prefix, t->rank);

    hp_jw w;
    hp_jw_init(&w);
    char label[64];
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "displayTimeUnit");
    hp_jw_string(&w, "ms");
    hp_jw_key(&w, "otherData");
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "rank");
    hp_jw_int(&w, t->rank);
    hp_jw_key(&w, "events");
    hp_jw_int(&w, (int64_t)t->n);
    hp_jw_key(&w, "dropped_events");
    hp_jw_int(&w, (int64_t)t->dropped);
    hp_jw_key(&w, "capacity_events");
    hp_jw_int(&w, (int64_t)t->cap);
    hp_jw_object_end(&w);

    hp_jw_key(&w, "traceEvents");
    hp_jw_array_begin(&w);
    snprintf(label, sizeof label, "rank %d", t->rank);
    jw_meta(&w, "process_name", t->rank, 0, "name", label, 0);
    jw_meta(&w, "process_sort_index", t->rank, 0, "sort_index", NULL, t->rank);
    if (t->dropped) {
        snprintf(label, sizeof label, "dropped %" PRIu64 " events (capacity %zu)", t->dropped, t->cap);
        jw_meta(&w, "process_labels", t->rank, 0, "labels", label, 0);
    }
    for (int k = 0; k <= t->comm_tracks; k++) {
        if (k == 0)
            snprintf(label, sizeof label, "compute");
        else
            snprintf(label, sizeof label, "comm %d", k - 1);
        jw_meta(&w, "thread_name", t->rank, k, "name", label, 0);
        jw_meta(&w, "thread_sort_index", t->rank, k, "sort_index", NULL, k);
    }
    for (size_t i = 0; i < t->n; i++) {
        const trace_ev *e = &t->ev[i];
        int64_t start = ns_since(t->origin, e->t0), end = ns_since(t->origin, e->t1);
        hp_jw_object_begin(&w);
        hp_jw_key(&w, "name");
        hp_jw_string(&w, e->name);
        if (e->phase) {
            hp_jw_key(&w, "cat");
            hp_jw_string(&w, e->phase);
        }
        hp_jw_key(&w, "ph");
        hp_jw_string(&w, "X");
        hp_jw_key(&w, "pid");
        hp_jw_int(&w, t->rank);
        hp_jw_key(&w, "tid");
        hp_jw_int(&w, e->track);
        jw_us(&w, "ts", start);
        jw_us(&w, "dur", end - start);
        if (e->bytes) {
            hp_jw_key(&w, "args");
            hp_jw_object_begin(&w);
            hp_jw_key(&w, "bytes");
            hp_jw_int(&w, e->bytes);
            hp_jw_object_end(&w);
        }
        hp_jw_object_end(&w);
    }
    hp_jw_array_end(&w);
    hp_jw_object_end(&w);

    char *text;
    size_t len;
    hp_status st = hp_jw_finish(&text, &len, &w);
    if (st) {
        st = hp_error_wrap(st, "%s", path);
    } else {
        st = hp_fs_write_atomic(path, text, len);
        free(text);
    }
    free(path);
    return st;
}
