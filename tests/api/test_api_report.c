/* tests/api/test_api_report: run directories and reports through the public
 * header alone — a run with run_dir writes run.json (done, the last step),
 * config.json (the caller's settings and sources), plan.json and machine.json
 * and its metrics there; hp_report_write of it (a page, the steps), of it
 * against itself (Pearson 1, max |delta| 0) and of benchmark rows; the
 * config's one-line errors. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_check.h"

static long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static int contains(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

int main(void) {
    char dir[] = "/tmp/hp-api-report-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char run[200], p[300];
    snprintf(run, sizeof run, "%s/run1", dir);
    hp_model_config mc = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};
    hp_model *m = NULL;
    hp_train *t = NULL;
    hp_run_setting set[2] = {{"steps", "6", "flag"}, {"lr", "0.001", "default"}};
    if (OK(hp_model_gpt2(&m, &mc, 2, 16))) {
        hp_train_config tc;
        hp_train_config_default(&tc, m);
        tc.data = "/usr/share/common-licenses/GPL-3";
        tc.steps = 6, tc.val_every = 3, tc.val_steps = 1, tc.threads = 1;
        tc.run_dir = run, tc.run_nsettings = 2, tc.run_settings = set, tc.run_command = "test_api_report";
        if (OK(hp_train_create(&t, &tc))) OK(hp_train_run(t));
    }
    hp_train_free(t);
    hp_model_free(m);
    const char *files[] = {"run.json", "config.json", "plan.json", "machine.json", "metrics.jsonl"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", run, files[i]);
        CHECK(file_size(p) > 0);
    }
    snprintf(p, sizeof p, "%s/run.json", run);
    CHECK(contains(p, "\"status\":\"done\"") && contains(p, "\"last_step\":6") && contains(p, "\"command\":\"test_api_report\""));
    snprintf(p, sizeof p, "%s/config.json", run);
    CHECK(contains(p, "{\"key\":\"steps\",\"value\":\"6\",\"source\":\"flag\"}"));
    snprintf(p, sizeof p, "%s/plan.json", run);
    CHECK(contains(p, "\"mesh\":\"1 rank (no plan)\"") && contains(p, "\"layout\":\"R@dp,R@tp\""));

    hp_report_config rc;
    memset(&rc, 0, sizeof rc);
    rc.run_dir = run;
    hp_report_summary s;
    if (OK(hp_report_write(&s, &rc))) {
        snprintf(p, sizeof p, "%s/report.html", run);
        CHECK(!strcmp(s.out, p) && file_size(p) == s.bytes && s.bytes > 1000);
        CHECK(s.steps == 6 && s.finished && !s.truncated && s.ncompare == 0 && s.traced_ranks == 0 && s.hidden_share == -1);
        CHECK(contains(p, "id=\"plot-loss\"") && !contains(p, "http"));
    }
    const char *self[] = {run};
    rc.compare = self, rc.ncompare = 1;
    snprintf(p, sizeof p, "%s/self.html", dir);
    rc.out = p;
    if (OK(hp_report_write(&s, &rc)))
        CHECK(s.ncompare == 1 && s.compare[0].steps == 6 && s.compare[0].pearson == 1 && s.compare[0].max_abs_delta == 0);

    snprintf(p, sizeof p, "%s/b.json", dir);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("[{\"config\": \"a\", \"tokens_per_s\": 10}, {\"config\": \"b\", \"tokens_per_s\": 20}]\n", f);
        fclose(f);
    }
    const char *bench[] = {p};
    hp_report_config bc;
    memset(&bc, 0, sizeof bc);
    bc.bench = bench, bc.nbench = 1;
    char html[300];
    snprintf(html, sizeof html, "%s/b.html", dir);
    if (OK(hp_report_write(&s, &bc))) CHECK(!strcmp(s.out, html) && file_size(html) == s.bytes);

    /* errors */
    hp_report_config e;
    memset(&e, 0, sizeof e);
    ERR(hp_report_write(NULL, &e), "give run_dir or bench files");
    e.run_dir = run, e.width = 50;
    ERR(hp_report_write(NULL, &e), "width must be 0 or 200..10000");
    e.width = 0, e.trace_from = 3, e.trace_to = 2;
    ERR(hp_report_write(NULL, &e), "trace steps 3..2");
    snprintf(p, sizeof p, "%s/none", dir);
    e.run_dir = p, e.trace_from = 0, e.trace_to = 0;
    ERR(hp_report_write(NULL, &e), "none: no such run directory");
    char name[64];
    OK(hp_run_dir_default(name, (int)sizeof name, "x"));
    CHECK(!strncmp(name, "x/20", 4) && strlen(name) == strlen("x/YYYYmmdd-HHMMSS"));
    ERR(hp_run_dir_default(name, 8, "x"), "too small");

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) failures++;
    if (failures) fprintf(stderr, "test_api_report: %d check(s) failed\n", failures);
    else printf("test_api_report: all checks passed\n");
    return failures != 0;
}
