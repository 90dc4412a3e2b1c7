/* The metrics file (runtime/metrics, issue 11 defects 6 and 12): a resume
 * cuts off what a crashed run wrote after the resumed step (records of later
 * steps, a torn last line) so no step is recorded twice; a fresh run
 * truncates; every write is checked (a full disk, /dev/full, is an error
 * naming the file). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/fsutil.h"
#include "runtime/metrics.h"
#include "testutil.h"

static char *slurp(const char *path) {
    char *x = NULL;
    size_t n;
    CHECK_OK(hp_fs_read_all(&x, &n, path));
    return x;
}

static void put(const char *path, const char *text) { CHECK_OK(hp_fs_write_atomic(path, text, strlen(text))); }

int main(void) {
    char dir[] = "/tmp/hp_metrics_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *p = hp_fs_join(dir, "m.jsonl");
    hp_metrics *m = NULL;
    long dropped = -1;

    /* a fresh run: the file is truncated, records are lines */
    put(p, "old\n");
    CHECK_OK(hp_metrics_open(&m, &dropped, p, -1));
    CHECK(dropped == 0);
    CHECK_OK(hp_metrics_write(m, "{\"step\": %d, \"loss\": 1}", 1));
    CHECK_OK(hp_metrics_write(m, "{\"step\": %d, \"loss\": 2}", 2));
    char *x = slurp(p); /* flushed at once */
    CHECK(x && !strcmp(x, "{\"step\": 1, \"loss\": 1}\n{\"step\": 2, \"loss\": 2}\n"));
    free(x);
    CHECK(!strcmp(hp_metrics_path(m), p));
    CHECK_OK(hp_metrics_close(m));
    CHECK_OK(hp_metrics_close(NULL));

    /* a crashed run wrote steps 3..5 and half a line after its checkpoint at 2 */
    const char *crashed = "{\"step\": 1, \"loss\": 1}\n"
                          "{\"step\": 2, \"loss\": 2}\n"
                          "{\"step\": 2, \"val_loss\": 9}\n"
                          "{\"step\": 3, \"loss\": 3}\n"
                          "{\"step\": 3, \"val_loss\": 9}\n"
                          "{\"step\": 4, \"loss\": 4}\n"
                          "{\"step\": 5, \"lo";
    put(p, crashed);
    CHECK_OK(hp_metrics_open(&m, &dropped, p, 2));
    CHECKF(dropped == 4, "dropped %ld", dropped);
    CHECK_OK(hp_metrics_write(m, "{\"step\": %d, \"loss\": 3}", 3));
    CHECK_OK(hp_metrics_close(m));
    x = slurp(p);
    CHECK(x && !strcmp(x, "{\"step\": 1, \"loss\": 1}\n{\"step\": 2, \"loss\": 2}\n{\"step\": 2, \"val_loss\": 9}\n"
                          "{\"step\": 3, \"loss\": 3}\n"));
    free(x);

    /* only a torn last line */
    put(p, "{\"step\": 1, \"loss\": 1}\n{\"st");
    CHECK_OK(hp_metrics_open(&m, &dropped, p, 7));
    CHECK(dropped == 1);
    CHECK_OK(hp_metrics_close(m));
    x = slurp(p);
    CHECK(x && !strcmp(x, "{\"step\": 1, \"loss\": 1}\n"));
    free(x);

    /* lines that are not records are kept; nothing to cut leaves the file as it was */
    put(p, "# a note\n{\"step\": 1}\n[1, 2]\n");
    CHECK_OK(hp_metrics_open(&m, &dropped, p, 1));
    CHECK(dropped == 0);
    CHECK_OK(hp_metrics_close(m));
    x = slurp(p);
    CHECK(x && !strcmp(x, "# a note\n{\"step\": 1}\n[1, 2]\n"));
    free(x);

    /* resuming into a file that is not there yet creates it */
    CHECK_OK(hp_fs_remove_tree(p));
    CHECK_OK(hp_metrics_open(&m, &dropped, p, 5));
    CHECK(dropped == 0);
    CHECK_OK(hp_metrics_close(m));
    CHECK(hp_fs_exists(p));

    /* a full disk: the write is an error naming the file; a device is not cut on resume */
    if (access("/dev/full", W_OK) == 0) {
        CHECK_OK(hp_metrics_open(&m, &dropped, "/dev/full", 3));
        if (m) {
            CHECK_ERR(hp_metrics_write(m, "{\"step\": %d}", 4), "/dev/full: cannot write the metrics: No space left on device");
            hp_status_free(hp_metrics_close(m));
        }
    } else {
        printf("test_metrics: /dev/full is not writable here; the full-disk check is skipped\n");
    }
    char *missing = hp_fs_join(dir, "no/such/m.jsonl");
    CHECK_ERR(hp_metrics_open(&m, &dropped, missing, -1), "no/such/m.jsonl: cannot open the metrics file for writing");
    free(missing);

    free(p);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_metrics");
}
