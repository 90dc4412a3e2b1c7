/* tests/report: the report room's computations on values worked out by hand —
 * decimation keeps every pixel column's first, lowest, highest and last
 * point; a resumed run's repeated steps keep the last; Pearson and max
 * |delta| over common steps; metrics files (values, one-line errors with file
 * and line, a cut-short last line); a trace's steps and its split into
 * compute, optimizer, communication, hidden and other; the page's curves;
 * figures rounded with their units; TensorBoard's debiased EMA; numbers
 * range-checked before they become integers (a trace's rank and times, a
 * metrics step, a JSON field read as a whole number). */
#include <unistd.h>

#include "io/fsutil.h"
#include "report/fmt.h"
#include "report/jsonfile.h"
#include "report/metrics.h"
#include "report/pages.h"
#include "report/series.h"
#include "report/trace.h"
#include "testutil.h"

static void test_decimate(void) {
    hp_series s = {0};
    for (int i = 0; i < 10000; i++) CHECK_OK(hp_series_push(&s, i, (i == 5003) ? 100.0 : (i == 7001) ? -50.0 : 1.0));
    int *keep = malloc(sizeof(int) * 10000);
    int m = hp_series_decimate(keep, &s, 0, 9999, 100);
    CHECKF(m <= 400 && m >= 200, "kept %d of 10000 in 100 columns", m);
    int spike = 0, dip = 0, first = keep[0] == 0, last = keep[m - 1] == 9999;
    for (int k = 0; k < m; k++) {
        spike |= keep[k] == 5003, dip |= keep[k] == 7001;
        if (k) CHECK(keep[k] > keep[k - 1]);
    }
    CHECK(spike && dip && first && last);
    /* few points: all kept */
    hp_series f = {0};
    for (int i = 0; i < 50; i++) CHECK_OK(hp_series_push(&f, i, i));
    CHECK(hp_series_decimate(keep, &f, 0, 49, 100) == 50);
    free(keep);
    hp_series_free(&s), hp_series_free(&f);
}

static void test_dedupe_compare(void) {
    hp_series a = {0}, b = {0};
    /* a resumed run: steps 1..4, then 3..5 again (the later values win) */
    double ax[] = {1, 2, 3, 4, 3, 4, 5}, ay[] = {9, 8, 70, 60, 7, 6, 5};
    for (int i = 0; i < 7; i++) CHECK_OK(hp_series_push(&a, ax[i], ay[i]));
    hp_series_dedupe(&a);
    CHECK(a.n == 5);
    for (int i = 0; i < a.n; i++) CHECKF(a.x[i] == i + 1 && a.y[i] == 9 - i, "point %d: %g %g", i, a.x[i], a.y[i]);
    /* b on steps 2..6: common 2..5, a = 8 7 6 5, b = 1 3 2 5 */
    double bx[] = {2, 3, 4, 5, 6}, by[] = {1, 3, 2, 5, 100};
    for (int i = 0; i < 5; i++) CHECK_OK(hp_series_push(&b, bx[i], by[i]));
    hp_series_cmp c;
    hp_series_compare(&c, &a, &b);
    /* means 6.5 and 2.75; deviations (1.5, .5, -.5, -1.5) and (-1.75, .25, -.75, 2.25): cov -5.5, 5 and 8.75 */
    CHECK(c.n == 4);
    CHECK_NEAR(c.pearson, -5.5 / sqrt(5 * 8.75), 1e-15);
    CHECK(c.max_abs_delta == 7); /* step 2: 8 - 1 */
    hp_series_compare(&c, &a, &a);
    CHECK(c.n == 5 && c.pearson == 1 && c.max_abs_delta == 0);
    hp_series_free(&a), hp_series_free(&b);
}

static const char *write_file(const char *name, const char *text) {
    CHECK_OK(hp_fs_write_atomic(name, text, strlen(text)));
    return name;
}

static void test_metrics(void) {
    hp_rep_metrics m;
    const char *p = write_file("report_m1.jsonl",
                               "{\"step\": 1, \"loss\": 5.5, \"lr\": 0.001, \"grad_norm\": 2, \"note\": \"x\"}\n"
                               "{\"step\": 1, \"val_loss\": 5.6}\n"
                               "\n"
                               "{\"step\": 2, \"loss\": null, \"lr\": 0.002, \"nonfinite\": true, \"mine\": 7}\n"
                               "{\"step\": 3, \"loss\": 4.5, \"lr\": 0.003}\n");
    CHECK_OK(hp_rep_metrics_load(&m, p));
    const hp_series *loss = hp_rep_metrics_get(&m, "loss"), *lr = hp_rep_metrics_get(&m, "lr"), *mine = hp_rep_metrics_get(&m, "mine");
    CHECK(loss && loss->n == 2 && loss->x[0] == 1 && loss->y[1] == 4.5);
    CHECK(lr && lr->n == 3 && lr->y[2] == 0.003);
    CHECK(mine && mine->n == 1 && mine->y[0] == 7);
    CHECK(hp_rep_metrics_get(&m, "val_loss")->n == 1 && !hp_rep_metrics_get(&m, "note"));
    CHECK(m.lines == 4 && m.nonfinite == 1 && !m.truncated);
    hp_rep_metrics_free(&m);
    /* a cut-short last line: noted */
    p = write_file("report_m2.jsonl", "{\"step\": 1, \"loss\": 5.5}\n{\"step\": 2, \"loss\": 5.4}\n{\"step\": 3, \"lo");
    CHECK_OK(hp_rep_metrics_load(&m, p));
    CHECK(m.truncated && hp_rep_metrics_get(&m, "loss")->n == 2 && strstr(m.note, "report_m2.jsonl:3: the last line is cut short"));
    hp_rep_metrics_free(&m);
    /* errors name the file and the line */
    p = write_file("report_m3.jsonl", "{\"step\": 1, \"loss\": 5.5}\n{\"step\": 2, \"lo\n{\"step\": 3, \"loss\": 5}\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_m3.jsonl:2: not valid JSON");
    p = write_file("report_m4.jsonl", "{\"step\": 1, \"loss\": {\"a\": 1}}\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_m4.jsonl:1: field 'loss': an object is not a metrics value");
    p = write_file("report_m5.jsonl", "{\"step\": 1.5, \"loss\": 1}\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_m5.jsonl:1: field 'step': expected a non-negative integer");
    p = write_file("report_m6.jsonl", "[1, 2]\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_m6.jsonl:1: expected a JSON object, got an array");
    p = write_file("report_m7.jsonl", "{\"step\": 1, \"grad_norm\": true}\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_m7.jsonl:1: field 'grad_norm': expected a number or null");
    CHECK_ERR(hp_rep_metrics_load(&m, "report_missing.jsonl"), "report_missing.jsonl");
    for (int i = 1; i <= 7; i++) {
        char n[32];
        snprintf(n, sizeof n, "report_m%d.jsonl", i);
        unlink(n);
    }
}

/* Two steps on a rank: fwd [0,10] bwd [10,30] opt [35,40], a collective [20,34];
 * then fwd [100,110] opt [110,112], a collective [111,120]. */
static void test_trace(void) {
    const char *p = write_file(
        "report_t.rank0.json",
        "{\"otherData\": {\"rank\": 3, \"dropped_events\": 2}, \"traceEvents\": [\n"
        "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 3, \"tid\": 0, \"args\": {\"name\": \"rank 3\"}},\n"
        "{\"name\": \"a\", \"cat\": \"fwd\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": 0, \"dur\": 10},\n"
        "{\"name\": \"b\", \"cat\": \"bwd\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": 10, \"dur\": 20},\n"
        "{\"name\": \"r\", \"cat\": \"bwd\", \"ph\": \"X\", \"pid\": 3, \"tid\": 1, \"ts\": 20, \"dur\": 14},\n"
        "{\"name\": \"o\", \"cat\": \"opt\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": 35, \"dur\": 5},\n"
        "{\"name\": \"a\", \"cat\": \"fwd\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": 100, \"dur\": 10},\n"
        "{\"name\": \"o\", \"cat\": \"opt\", \"ph\": \"X\", \"pid\": 3, \"tid\": 0, \"ts\": 110, \"dur\": 2},\n"
        "{\"name\": \"s\", \"cat\": \"opt\", \"ph\": \"X\", \"pid\": 3, \"tid\": 2, \"ts\": 111, \"dur\": 9}]}\n");
    hp_rep_trace t;
    CHECK_OK(hp_rep_trace_load(&t, p));
    CHECK(t.rank == 3 && t.dropped == 2 && t.n == 7 && t.ncompute == 5 && t.nsteps == 2);
    hp_rep_split s;
    CHECK_OK(hp_rep_trace_split(&s, &t, 0, 0));
    /* kernels [0,30] u [35,40]; comm [20,34]: hidden 10; union [0,34] u [35,40] = 39 of a 40 span */
    CHECK(s.compute == 30 && s.optimizer == 5 && s.comm == 14 && s.hidden == 10 && s.span == 40 && s.other == 1);
    CHECK_OK(hp_rep_trace_split(&s, &t, 1, 1));
    /* kernels [100,112]; comm [111,120]: hidden 1; span 20, nothing else */
    CHECK(s.compute == 10 && s.optimizer == 2 && s.comm == 9 && s.hidden == 1 && s.span == 20 && s.other == 0);
    CHECK_OK(hp_rep_trace_split(&s, &t, 0, 5)); /* clipped to the trace */
    CHECK(s.comm == 23 && s.hidden == 11 && s.span == 60);
    double a, b;
    CHECK(hp_rep_trace_range(&a, &b, &t, 1, 1) && a == 100 && b == 120);
    hp_rep_trace_free(&t);
    write_file("report_t.rank0.json", "{\"traceEvents\": [{\"ph\": \"X\", \"tid\": 0, \"ts\": \"x\", \"dur\": 1}]}");
    CHECK_ERR(hp_rep_trace_load(&t, p), "report_t.rank0.json: traceEvents[0]: an \"X\" event needs numbers");
    write_file("report_t.rank0.json", "{\"traceEvents\": [\n{\"ph\": \"X\",\n \"tid\" 0}]}");
    CHECK_ERR(hp_rep_trace_load(&t, p), "report_t.rank0.json:3: json: offset");
    unlink(p);
}

/* The page of a metrics file: one curve per field with its points. */
static void test_page(void) {
    hp_sbuf b;
    hp_sb_init(&b);
    for (int i = 1; i <= 3000; i++) hp_sb_printf(&b, "{\"step\": %d, \"loss\": %g, \"lr\": 0.001}\n", i, 5.0 / i);
    char *text;
    size_t n;
    CHECK_OK(hp_sb_finish(&text, &n, &b));
    CHECK_OK(hp_fs_write_atomic("report_p.jsonl", text, n));
    free(text);
    hp_rep_run r;
    CHECK_OK(hp_rep_run_load(&r, "report_p.jsonl", 1));
    hp_rep_summary sum;
    hp_rep_opts o = {.width = 400};
    char *html = NULL;
    CHECK_OK(hp_rep_run_page(&html, &n, &sum, &r, 1, &o));
    CHECK(sum.steps == 3000 && !sum.truncated && sum.ntraces == 0 && sum.hidden_share == -1);
    CHECK(html && !strncmp(html, "<!DOCTYPE html>", 15) && !strstr(html, "http"));
    /* the loss curve decimated to the 314 columns of a 400 px plot: at most 4 a column */
    const char *loss = html ? strstr(html, "id=\"plot-loss\"") : NULL;
    const char *dn = loss ? strstr(loss, "data-n=\"") : NULL;
    int pts = dn ? atoi(dn + 8) : -1;
    CHECKF(pts > 300 && pts <= 4 * 314, "loss curve has %d points", pts);
    free(html);
    hp_rep_run_free(&r);
    unlink("report_p.jsonl");
}

static void test_fmt(void) {
    char b[64];
    struct {
        double v;
        const char *unit, *want;
    } c[] = {{71.44921875, "MB", "71.4 MB"}, {58.9174, "MB", "58.9 MB"}, {3, "ms", "3 ms"},
             {0.0123456, "ms", "0.0123 ms"}, {123456.7, NULL, "123457"}, {1.23456, "", "1.23"},
             {-2.5, "s", "-2.50 s"}, {NAN, "ms", "n/a"}, {1e20, "B", "1e+20 B"}, {2e-7, "s", "2e-07 s"}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        hp_rep_fmt(b, sizeof b, c[i].v, c[i].unit);
        CHECKF(!strcmp(b, c[i].want), "%g %s: '%s', expected '%s'", c[i].v, c[i].unit ? c[i].unit : "", b, c[i].want);
    }
    hp_rep_fmt_bytes(b, sizeof b, 551380);
    CHECKF(!strcmp(b, "551 kB"), "%s", b);
    hp_rep_fmt_bytes(b, sizeof b, 1.5e9);
    CHECKF(!strcmp(b, "1.50 GB"), "%s", b);
    hp_rep_fmt_bytes(b, sizeof b, 512);
    CHECKF(!strcmp(b, "512 B"), "%s", b);
    double div;
    CHECK(!strcmp(hp_rep_bytes_unit(&div, 58.9e6), "MB") && div == 1e6);
    CHECK(!strcmp(hp_rep_field_unit("tokens_per_s"), "tokens/s") && !strcmp(hp_rep_field_unit("step_ms"), "ms"));
    CHECK(!strcmp(hp_rep_field_unit("busbw_GBps"), "GB/s") && !strcmp(hp_rep_field_unit("peak_rss_mb"), "MB"));
    CHECK(!strcmp(hp_rep_field_unit("config"), ""));
}

/* TensorBoard's smoothing by hand: w = 0.5 over 1, 2, 3: last 0.5, 1.25,
 * 2.125 over 1 - 0.5^k = 0.5, 0.75, 0.875; a NaN passes and is not counted. */
static void test_ema(void) {
    hp_series s = {0};
    for (int i = 1; i <= 3; i++) CHECK_OK(hp_series_push(&s, i, i));
    double o[3];
    hp_series_ema(o, &s, 0.5);
    CHECK_NEAR(o[0], 1, 1e-15);
    CHECK_NEAR(o[1], 1.25 / 0.75, 1e-15);
    CHECK_NEAR(o[2], 2.125 / 0.875, 1e-15);
    hp_series_ema(o, &s, 0);
    CHECK(o[0] == 1 && o[1] == 2 && o[2] == 3);
    s.y[1] = NAN;
    hp_series_ema(o, &s, 0.5);
    CHECK(o[0] == 1 && isnan(o[1]));
    CHECK_NEAR(o[2], (0.25 + 1.5) / 0.75, 1e-15);
    hp_series_free(&s);
}

static void test_json_int(void) {
    hp_json *j = NULL;
    const char *t = "{\"a\": 1e60, \"b\": 7, \"c\": 2.5, \"d\": \"x\", \"e\": null, \"f\": -3}";
    CHECK_OK(hp_json_parse(&j, t, strlen(t)));
    long v = -1;
    CHECK_OK(hp_rep_json_int(&v, j, "b", 1, 10, 0, "f.json", ""));
    CHECK(v == 7);
    CHECK_OK(hp_rep_json_int(&v, j, "e", 1, 10, 4, "f.json", ""));
    CHECK(v == 4);
    CHECK_OK(hp_rep_json_int(&v, j, "none", 1, 10, 5, "f.json", ""));
    CHECK(v == 5);
    CHECK_ERR(hp_rep_json_int(&v, j, "a", 1, 10, 0, "f.json", ""), "f.json: field 'a': expected a whole number in 1..10, got 1e+60");
    CHECK_ERR(hp_rep_json_int(&v, j, "c", 1, 10, 0, "f.json", "x[2]"), "f.json: field 'x[2].c': expected a whole number in 1..10, got 2.5");
    CHECK_ERR(hp_rep_json_int(&v, j, "d", 1, 10, 0, "f.json", ""), "field 'd': expected a whole number in 1..10, got a string");
    CHECK_ERR(hp_rep_json_int(&v, j, "f", 0, 10, 0, "f.json", ""), "got -3");
    CHECK(hp_rep_json_long(j, "a", 0, 10, 9) == 9 && hp_rep_json_long(j, "b", 0, 10, 9) == 7);
    CHECK(hp_rep_json_long(j, "c", 0, 10, 9) == 9 && hp_rep_json_long(j, "d", 0, 10, 9) == 9);
    hp_json_free(j);
}

/* Numbers out of range in a trace or a metrics file: errors naming the field. */
static void test_ranges(void) {
    static const struct {
        const char *text, *needle;
    } c[] = {
        {"{\"traceEvents\": [{\"ph\": \"X\", \"tid\": 0, \"ts\": 1e308, \"dur\": 1}]}",
         "traceEvents[0]: field 'ts': expected microseconds in -1e15..1e15, got 1e+308"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"tid\": 0, \"ts\": 1, \"dur\": 1e308}]}",
         "traceEvents[0]: field 'dur': expected microseconds in 0..1e15, got 1e+308"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"tid\": 0, \"ts\": 1, \"dur\": -1}]}", "field 'dur'"},
        {"{\"otherData\": {\"rank\": 1e60}, \"traceEvents\": []}", "field 'otherData.rank': expected a whole number"},
        {"{\"otherData\": {\"dropped_events\": -2}, \"traceEvents\": []}", "field 'otherData.dropped_events'"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const char *p = write_file("report_r.rank0.json", c[i].text);
        hp_rep_trace t;
        CHECK_ERR(hp_rep_trace_load(&t, p), c[i].needle);
    }
    unlink("report_r.rank0.json");
    hp_rep_metrics m;
    const char *p = write_file("report_r.jsonl", "{\"step\": 9007199254740993, \"loss\": 1}\n");
    CHECK_ERR(hp_rep_metrics_load(&m, p), "report_r.jsonl:1: field 'step': 9007199254740993 is more than 2^53");
    unlink(p);
}

int main(void) {
    test_fmt();
    test_ema();
    test_json_int();
    test_ranges();
    test_decimate();
    test_dedupe_compare();
    test_metrics();
    test_trace();
    test_page();
    return hp_test_finish("test_report");
}
