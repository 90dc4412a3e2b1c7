/* The metrics records (runtime/metrics, issue 22 item 3): a record built
 * field by field is valid JSON whatever its figures — NaN, +Inf and -Inf are
 * written as null and the record ends with "nonfinite": true (printf wrote
 * "-nan", which no JSON reader takes); finite figures keep their format; a
 * record with no null has no flag; a record that does not fit is an error,
 * not a cut line. Each line written is parsed back here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "runtime/metrics.h"
#include "testutil.h"

int main(void) {
    char dir[] = "/tmp/hp_metrics_rec_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *p = hp_fs_join(dir, "m.jsonl");
    hp_metrics *m = NULL;
    CHECK_OK(hp_metrics_open(&m, NULL, p, -1));

    hp_metrics_rec r;
    hp_metrics_rec_begin(&r, 3);
    hp_metrics_rec_num(&r, "loss", NAN, HP_METRICS_G);
    hp_metrics_rec_num(&r, "lr", INFINITY, HP_METRICS_G);
    hp_metrics_rec_num(&r, "grad_norm", -INFINITY, HP_METRICS_G);
    hp_metrics_rec_num(&r, "tokens_per_s", 5.25, 1);
    hp_metrics_rec_num(&r, "step_ms", 2, 3);
    hp_metrics_rec_num(&r, "mfu", -NAN, 5);
    hp_metrics_rec_flag(&r, "skipped");
    CHECK(r.nonfinite && !r.overflow);
    CHECK_OK(hp_metrics_write_rec(m, &r));
    hp_metrics_rec_begin(&r, 4); /* all finite: no flag */
    hp_metrics_rec_num(&r, "loss", 5.55219507, HP_METRICS_G);
    hp_metrics_rec_num(&r, "lr", 1e30, HP_METRICS_G);
    CHECK_OK(hp_metrics_write_rec(m, &r));
    hp_metrics_rec_begin(&r, 4); /* a validation record of a NaN loss */
    hp_metrics_rec_num(&r, "val_loss", -NAN, HP_METRICS_G);
    CHECK_OK(hp_metrics_write_rec(m, &r));
    hp_metrics_rec_begin(&r, 5); /* too long for a record: an error, nothing written */
    for (int i = 0; i < 100; i++) hp_metrics_rec_num(&r, "a_rather_long_field_name", i, 3);
    CHECK(r.overflow);
    CHECK_ERR(hp_metrics_write_rec(m, &r), "a metrics record longer than");
    CHECK_OK(hp_metrics_close(m));

    char *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, p));
    const char *want = "{\"step\": 3, \"loss\": null, \"lr\": null, \"grad_norm\": null, \"tokens_per_s\": 5.2, "
                       "\"step_ms\": 2.000, \"mfu\": null, \"skipped\": true, \"nonfinite\": true}\n"
                       "{\"step\": 4, \"loss\": 5.55219507, \"lr\": 1e+30}\n"
                       "{\"step\": 4, \"val_loss\": null, \"nonfinite\": true}\n";
    CHECKF(text && !strcmp(text, want), "wrote\n%s", text ? text : "(nothing)");
    /* every line is JSON */
    int lines = 0;
    for (char *s = text, *nl; s && (nl = strchr(s, '\n')); s = nl + 1, lines++) {
        hp_json *j = NULL;
        hp_status st = hp_json_parse(&j, s, (size_t)(nl - s));
        CHECKF(!st, "line %d: %s", lines + 1, st ? hp_status_msg(st) : "");
        hp_status_free(st);
        hp_json_free(j);
    }
    CHECK(lines == 3);
    free(text);
    unlink(p);
    rmdir(dir);
    free(p);
    return hp_test_finish("test_metrics_rec");
}
