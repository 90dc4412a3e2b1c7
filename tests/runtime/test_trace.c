/* runtime/trace: two ranks' traces with overlapping collectives, written and
 * read back with the project's JSON reader (every event's fields, the
 * metadata, collective spans to the nanosecond), the collective track
 * allocator, overflow that counts dropped events and stays inside the
 * capacity, write errors that name the file, and recording that allocates
 * nothing (the linker routes malloc and friends through the counters below,
 * tests/runtime/tests.cmake). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/timing.h"
#include "io/fsutil.h"
#include "io/io_testutil.h"
#include "io/json.h"
#include "runtime/trace.h"
#include "testutil.h"

#include "alloc_count.h"

/* An event as the file should hold it: start and end in whole nanoseconds
 * after the origin. */
typedef struct {
    const char *name, *cat;
    int tid;
    int64_t start_ns, end_ns, bytes;
} want_ev;

static const double ORIGIN = 1000.0; /* hp_now()-like seconds */
static double at(int64_t ns) { return ORIGIN + (double)ns * 1e-9; }

/* snprintf that the test checks did not truncate. */
static void fmt(char *out, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t n, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int k = vsnprintf(out, n, f, ap);
    va_end(ap);
    CHECK(k >= 0 && (size_t)k < n);
}

static char *rank_path(const char *prefix, int rank) {
    static char buf[512];
    fmt(buf, sizeof buf, "%s.rank%d.json", prefix, rank);
    return buf;
}

static hp_json *read_json(const char *path) {
    char *text = NULL;
    size_t n = 0;
    hp_json *j = NULL;
    CHECK_OK(hp_fs_read_all(&text, &n, path));
    if (text) CHECK_OK(hp_json_parse(&j, text, n));
    free(text);
    return j;
}

static const char *str_at(const hp_json *o, const char *key) {
    const hp_json *v = hp_json_get(o, key);
    return v && v->type == HP_JSON_STRING ? v->str : NULL;
}
static int64_t int_at(const hp_json *o, const char *key, int64_t missing) {
    const hp_json *v = hp_json_get(o, key);
    return v && v->type == HP_JSON_NUMBER && v->is_int ? v->ival : missing;
}
/* A microsecond field written with 3 decimals, back in nanoseconds. */
static int64_t ns_at(const hp_json *o, const char *key) {
    const hp_json *v = hp_json_get(o, key);
    if (!v || v->type != HP_JSON_NUMBER) return INT64_MIN;
    return (int64_t)llround(v->number * 1000.0);
}
static int same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* The metadata events of a file: the process name, the sort indexes and
 * the track names; returns how many there were (they come first). */
static int check_metadata(const hp_json *evs, int rank, int comm_tracks, uint64_t dropped) {
    int nm = 0, saw_proc = 0, saw_labels = 0, saw_track[HP_TRACE_MAX_COMM_TRACKS + 1] = {0};
    while (nm < evs->n && same(str_at(&evs->items[nm], "ph"), "M")) {
        const hp_json *e = &evs->items[nm++];
        const char *what = str_at(e, "name");
        const hp_json *args = hp_json_get(e, "args");
        CHECK(args && args->type == HP_JSON_OBJECT && args->n == 1);
        CHECK(int_at(e, "pid", -1) == rank);
        int tid = (int)int_at(e, "tid", -1);
        if (same(what, "process_name")) {
            char want[32];
            snprintf(want, sizeof want, "rank %d", rank);
            CHECKF(same(str_at(args, "name"), want), "process name '%s'", str_at(args, "name"));
            CHECK(tid == 0);
            saw_proc++;
        } else if (same(what, "thread_name")) {
            CHECK(tid >= 0 && tid <= comm_tracks);
            if (tid < 0 || tid > comm_tracks) continue;
            char want[32];
            if (tid == 0)
                snprintf(want, sizeof want, "compute");
            else
                snprintf(want, sizeof want, "comm %d", tid - 1);
            CHECKF(same(str_at(args, "name"), want), "track %d named '%s'", tid, str_at(args, "name"));
            saw_track[tid]++;
        } else if (same(what, "process_labels")) {
            char want[64];
            snprintf(want, sizeof want, "dropped %" PRIu64 " events", dropped);
            const char *labels = str_at(args, "labels");
            CHECKF(labels && strstr(labels, want), "labels '%s'", labels);
            saw_labels++;
        } else if (same(what, "process_sort_index")) {
            CHECK(int_at(args, "sort_index", -1) == rank);
        } else if (same(what, "thread_sort_index")) {
            CHECK(int_at(args, "sort_index", -1) == tid);
        } else {
            CHECKF(0, "unexpected metadata event '%s'", what);
        }
    }
    CHECK(saw_proc == 1);
    CHECK(saw_labels == (dropped ? 1 : 0));
    for (int k = 0; k <= comm_tracks; k++) CHECKF(saw_track[k] == 1, "track %d named %d times", k, saw_track[k]);
    return nm;
}

/* Reads PREFIX.rankN.json and checks it holds exactly `want` after the
 * metadata, and the top-level fields. */
static void check_file(const char *prefix, int rank, int comm_tracks, const want_ev *want, int nwant,
                       uint64_t dropped, size_t capacity) {
    hp_json *j = read_json(rank_path(prefix, rank));
    if (!j) return;
    CHECK(same(str_at(j, "displayTimeUnit"), "ms"));
    const hp_json *od = hp_json_get(j, "otherData");
    CHECK(od && int_at(od, "rank", -1) == rank);
    CHECK(od && int_at(od, "events", -1) == nwant);
    CHECK(od && int_at(od, "dropped_events", -1) == (int64_t)dropped);
    CHECK(od && int_at(od, "capacity_events", -1) == (int64_t)capacity);
    const hp_json *evs = hp_json_get(j, "traceEvents");
    CHECK(evs && evs->type == HP_JSON_ARRAY);
    if (!evs || evs->type != HP_JSON_ARRAY) {
        hp_json_free(j);
        return;
    }
    int nm = check_metadata(evs, rank, comm_tracks, dropped);
    CHECKF(evs->n - nm == nwant, "rank %d: %d events, expected %d", rank, evs->n - nm, nwant);
    for (int i = 0; i < nwant && nm + i < evs->n; i++) {
        const hp_json *e = &evs->items[nm + i];
        const want_ev *w = &want[i];
        CHECKF(same(str_at(e, "name"), w->name), "event %d name '%s'", i, str_at(e, "name"));
        CHECKF(same(str_at(e, "cat"), w->cat), "event %d cat '%s'", i, str_at(e, "cat"));
        CHECK(same(str_at(e, "ph"), "X"));
        CHECK(int_at(e, "pid", -1) == rank);
        CHECKF(int_at(e, "tid", -1) == w->tid, "event %d tid %" PRId64, i, int_at(e, "tid", -1));
        int64_t ts = ns_at(e, "ts"), dur = ns_at(e, "dur");
        CHECKF(ts == w->start_ns, "event %d ts %" PRId64 " ns, expected %" PRId64, i, ts, w->start_ns);
        CHECKF(dur == w->end_ns - w->start_ns, "event %d dur %" PRId64 " ns, expected %" PRId64, i, dur,
               w->end_ns - w->start_ns);
        CHECK(ts + dur == w->end_ns); /* spans exactly start to end */
        const hp_json *args = hp_json_get(e, "args");
        if (w->bytes) {
            CHECK(args && args->type == HP_JSON_OBJECT && args->n == 1);
            CHECKF(int_at(args, "bytes", -1) == w->bytes, "event %d bytes %" PRId64, i, int_at(args, "bytes", -1));
        } else {
            CHECKF(args == NULL, "event %d has args without bytes", i);
        }
        CHECK(e->n == 6 + (w->cat != NULL) + (w->bytes != 0)); /* nothing else */
    }
    hp_json_free(j);
}

/* Ranks 0 and 1: compute, two overlapping collectives on distinct tracks, a
 * third one reusing the first free track, an event without a phase. */
static void test_two_ranks(const char *dir) {
    char prefix[512];
    fmt(prefix, sizeof prefix, "%s/step", dir);
    enum { K = 2 };
    want_ev want[2][8];
    int nwant[2] = {0, 0};
    hp_trace *tr[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) CHECK_OK(hp_trace_create(&tr[r], r, K, 16));
    if (!tr[0] || !tr[1]) goto out;
    for (int r = 0; r < 2; r++) {
        hp_trace *t = tr[r];
        hp_trace_set_origin(t, ORIGIN);
        CHECK(hp_trace_origin(t) == ORIGIN);
        int64_t off = 5000 * r; /* rank 1 a little later */
        want_ev *w = want[r];
        int *n = &nwant[r];
#define REC(nm, cat, tid, s, e, b)                                 \
    do {                                                           \
        hp_trace_event(t, nm, cat, tid, at(s), at(e), b);          \
        w[(*n)++] = (want_ev){nm, cat, tid, s, e, b};              \
    } while (0)
        REC("h.0.attn.qkv", "fwd", HP_TRACE_COMPUTE, off + 10000, off + 30250, 0);
        int a = hp_trace_comm_track_begin(t);
        int b = hp_trace_comm_track_begin(t);
        CHECK(a == 1 && b == 2);
        CHECK(hp_trace_get_counts(t).comm_in_flight == 2);
        /* the collectives overlap: [30.250, 80.001] and [40, 60.5] us */
        REC("h.1.all_reduce", "bwd", a, off + 30250, off + 80001, 4096);
        REC("h.0.all_gather", "bwd", b, off + 40000, off + 60500, 1024 + r);
        hp_trace_comm_track_end(t, a);
        int c = hp_trace_comm_track_begin(t);
        CHECK(c == 1); /* the lowest free track again */
        REC("wte.reduce_scatter", "bwd", c, off + 90000, off + 100000, (int64_t)1 << 40);
        hp_trace_comm_track_end(t, b);
        hp_trace_comm_track_end(t, c);
        CHECK(hp_trace_get_counts(t).comm_in_flight == 0);
        REC("adamw", "opt", HP_TRACE_COMPUTE, off + 100000, off + 150123, 0);
        REC("no phase", NULL, HP_TRACE_COMPUTE, off + 150123, off + 150123, 0); /* zero length */
#undef REC
        hp_trace_counts cn = hp_trace_get_counts(t);
        CHECK(cn.recorded == (size_t)*n && cn.dropped == 0 && cn.capacity == 16 && cn.comm_tracks == K);
    }
    for (int r = 0; r < 2; r++) CHECK_OK(hp_trace_write(tr[r], prefix));
    CHECK(count_entries(dir) == 2); /* step.rank0.json, step.rank1.json, no temporaries */
    for (int r = 0; r < 2; r++) check_file(prefix, r, K, want[r], nwant[r], 0, 16);

    /* The two collectives of each rank overlap in time yet sit on distinct
     * tracks (read back from the file, not from the table). */
    for (int r = 0; r < 2; r++) {
        hp_json *j = read_json(rank_path(prefix, r));
        const hp_json *evs = j ? hp_json_get(j, "traceEvents") : NULL;
        int ncomm = 0;
        for (int i = 0; evs && i < evs->n; i++) {
            const hp_json *e = &evs->items[i];
            if (!same(str_at(e, "ph"), "X") || int_at(e, "tid", -1) == 0) continue;
            for (int k = i + 1; k < evs->n; k++) {
                const hp_json *f = &evs->items[k];
                if (!same(str_at(f, "ph"), "X") || int_at(f, "tid", -1) == 0) continue;
                int64_t s0 = ns_at(e, "ts"), e0 = s0 + ns_at(e, "dur");
                int64_t s1 = ns_at(f, "ts"), e1 = s1 + ns_at(f, "dur");
                if (s0 < e1 && s1 < e0) CHECK(int_at(e, "tid", -1) != int_at(f, "tid", -1));
            }
            ncomm++;
        }
        CHECK(ncomm == 3);
        hp_json_free(j);
    }

    /* Rewriting after a clear replaces the file (atomically) with the new,
     * smaller step. */
    hp_trace_clear(tr[0]);
    CHECK(hp_trace_get_counts(tr[0]).recorded == 0);
    hp_trace_event(tr[0], "step 2", "fwd", 0, at(1), at(2), 0);
    CHECK_OK(hp_trace_write(tr[0], prefix));
    want_ev w2 = {"step 2", "fwd", 0, 1, 2, 0};
    check_file(prefix, 0, K, &w2, 1, 0, 16);
    CHECK(count_entries(dir) == 2);
out:
    for (int r = 0; r < 2; r++) hp_trace_destroy(tr[r]);
}

/* A collective timed with the real clock: the file's span is the measured
 * start and end, rounded to the nanosecond from the origin. */
static void test_real_clock(const char *dir) {
    char prefix[512];
    fmt(prefix, sizeof prefix, "%s/clock", dir);
    hp_trace *t = NULL;
    CHECK_OK(hp_trace_create(&t, 3, 1, 4));
    if (!t) return;
    double origin = hp_trace_origin(t);
    CHECK(origin <= hp_now());
    int track = hp_trace_comm_track_begin(t);
    double t0 = hp_now();
    volatile double x = 0;
    for (int i = 0; i < 100000; i++) x += i;
    double t1 = hp_now();
    hp_trace_event(t, "all_reduce", "bwd", track, t0, t1, 8);
    hp_trace_comm_track_end(t, track);
    CHECK_OK(hp_trace_write(t, prefix));
    want_ev w = {"all_reduce", "bwd", 1, (int64_t)llround((t0 - origin) * 1e9), (int64_t)llround((t1 - origin) * 1e9),
                 8};
    check_file(prefix, 3, 1, &w, 1, 0, 4);
    hp_trace_destroy(t);
}

/* More events than the capacity: the first `capacity` are kept, the rest
 * counted, nothing written past the array (ASan watches the build-san run),
 * and the file reports the count. */
static void test_overflow(const char *dir) {
    char prefix[512];
    fmt(prefix, sizeof prefix, "%s/full", dir);
    enum { CAP = 4, N = 11 };
    hp_trace *t = NULL;
    CHECK_OK(hp_trace_create(&t, 0, 1, CAP));
    if (!t) return;
    hp_trace_set_origin(t, ORIGIN);
    static const char *names[N] = {"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"};
    want_ev want[CAP];
    for (int i = 0; i < N; i++) {
        hp_trace_event(t, names[i], "fwd", 0, at(1000 * i), at(1000 * i + 500), 0);
        if (i < CAP) want[i] = (want_ev){names[i], "fwd", 0, 1000 * i, 1000 * i + 500, 0};
        hp_trace_counts c = hp_trace_get_counts(t);
        CHECK(c.recorded == (size_t)(i < CAP ? i + 1 : CAP));
        CHECK(c.dropped == (uint64_t)(i < CAP ? 0 : i + 1 - CAP));
    }
    CHECK_OK(hp_trace_write(t, prefix));
    check_file(prefix, 0, 1, want, CAP, N - CAP, CAP);
    hp_trace_clear(t);
    hp_trace_counts c = hp_trace_get_counts(t);
    CHECK(c.recorded == 0 && c.dropped == 0 && c.capacity == CAP);
    hp_trace_destroy(t);
}

/* Every track in flight: begin says -1, events on -1 are dropped, ending
 * -1 does nothing; the most tracks a trace may have all work. */
static void test_tracks(void) {
    hp_trace *t = NULL;
    CHECK_OK(hp_trace_create(&t, 0, 2, 8));
    if (t) {
        CHECK(hp_trace_comm_track_begin(t) == 1);
        CHECK(hp_trace_comm_track_begin(t) == 2);
        CHECK(hp_trace_comm_track_begin(t) == -1);
        hp_trace_event(t, "untracked", "bwd", -1, 1.0, 2.0, 64);
        hp_trace_comm_track_end(t, -1);
        hp_trace_counts c = hp_trace_get_counts(t);
        CHECK(c.recorded == 0 && c.dropped == 1 && c.comm_in_flight == 2);
        hp_trace_comm_track_end(t, 2);
        CHECK(hp_trace_comm_track_begin(t) == 2);
        hp_trace_clear(t); /* keeps the tracks in flight */
        CHECK(hp_trace_get_counts(t).comm_in_flight == 2);
        hp_trace_destroy(t);
    }
    t = NULL;
    CHECK_OK(hp_trace_create(&t, 0, HP_TRACE_MAX_COMM_TRACKS, 1));
    if (t) {
        for (int k = 1; k <= HP_TRACE_MAX_COMM_TRACKS; k++) CHECK(hp_trace_comm_track_begin(t) == k);
        CHECK(hp_trace_comm_track_begin(t) == -1);
        hp_trace_comm_track_end(t, HP_TRACE_MAX_COMM_TRACKS);
        CHECK(hp_trace_comm_track_begin(t) == HP_TRACE_MAX_COMM_TRACKS);
        hp_trace_destroy(t);
    }
}

static void test_create_errors(void) {
    hp_trace *t = (hp_trace *)1;
    CHECK_ERR(hp_trace_create(&t, 0, 0, 8), "0 collective tracks");
    CHECK(t == NULL);
    CHECK_ERR(hp_trace_create(&t, 0, HP_TRACE_MAX_COMM_TRACKS + 1, 8), "65 collective tracks");
    CHECK_ERR(hp_trace_create(&t, 0, 1, 0), "capacity of 0 events");
    CHECK_ERR(hp_trace_create(&t, -1, 1, 8), "rank -1");
    CHECK_ERR(hp_trace_create(&t, 0, 1, SIZE_MAX), "too large");
}

static void check_one_line_naming(hp_status s, const char *path) {
    CHECK(s != HP_OK);
    if (!s) return;
    const char *m = hp_status_msg(s);
    CHECKF(strstr(m, path) != NULL, "'%s' does not name %s", m, path);
    CHECKF(strchr(m, '\n') == NULL, "'%s' is not one line", m);
    hp_status_free(s);
}

/* A directory that does not exist, and a target that is a directory: one-line
 * errors that name the file, and nothing left behind. */
static void test_write_errors(const char *dir) {
    hp_trace *t = NULL;
    CHECK_OK(hp_trace_create(&t, 1, 1, 4));
    if (!t) return;
    hp_trace_event(t, "x", "fwd", 0, 1.0, 2.0, 0);
    char prefix[512], target[600];
    fmt(prefix, sizeof prefix, "%s/missing/sub/t", dir);
    fmt(target, sizeof target, "%s.rank1.json", prefix);
    check_one_line_naming(hp_trace_write(t, prefix), target);

    char sub[512];
    fmt(sub, sizeof sub, "%s/blocked", dir);
    CHECK(mkdir(sub, 0755) == 0);
    fmt(prefix, sizeof prefix, "%s/t", sub);
    fmt(target, sizeof target, "%s.rank1.json", prefix);
    CHECK(mkdir(target, 0755) == 0); /* the file's name is taken by a directory */
    check_one_line_naming(hp_trace_write(t, prefix), target);
    CHECK(count_entries(sub) == 1); /* just the directory: no temporary file */
    hp_trace_destroy(t);
}

/* Recording, the track allocator, counts and clearing make no allocation. */
static void test_noalloc(void) {
    long before = allocs();
    void *volatile probe = malloc(16);
    free(probe);
    CHECK(allocs() == before + 1); /* the counter works */

    hp_trace *t = NULL;
    CHECK_OK(hp_trace_create(&t, 0, 4, 100));
    if (!t) return;
    long a0 = allocs();
    uint64_t sum = 0;
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < 150; i++) { /* past the capacity: 50 dropped */
            int tr = i % 3 ? HP_TRACE_COMPUTE : hp_trace_comm_track_begin(t);
            double now = hp_now();
            hp_trace_event(t, "op", "fwd", tr, now, now + 1e-6, tr ? 128 : 0);
            if (tr) hp_trace_comm_track_end(t, tr);
        }
        hp_trace_counts c = hp_trace_get_counts(t);
        CHECK(c.recorded == 100 && c.dropped == 50);
        sum += c.dropped;
        hp_trace_clear(t);
    }
    long made = allocs() - a0;
    CHECKF(made == 0, "%ld allocations while recording", made);
    CHECK(sum == 150);
    hp_trace_destroy(t);
}

int main(void) {
    char dir[] = "/tmp/hp_trace_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_create_errors();
    test_tracks();
    test_noalloc();
    test_two_ranks(dir);
    char sub[600];
    fmt(sub, sizeof sub, "%s/other", dir);
    CHECK_OK(hp_fs_mkdir_p(sub));
    test_real_clock(sub);
    test_overflow(sub);
    test_write_errors(sub);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_trace");
}
