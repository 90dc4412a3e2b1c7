/* tests/api/test_api_outputs: a run's outputs through <hyperpar/hyperpar.h>
 * alone (issue 11, defects 6, 7 and 12): a metrics file on a full disk
 * (/dev/full) fails the run naming it, or with on_write_error
 * HP_ON_WRITE_ERROR_WARN gives one HP_EVENT_WARNING and the run finishes;
 * keep_last keeps the K newest checkpoints; a second trainer writing into a
 * ckpt_dir in use is refused naming this process's pid; a ckpt_dir with a
 * crashed save's leftovers is cleaned up before the first step, told in an
 * HP_EVENT_NOTE; a resume drops the metrics lines written after its step. */
#include <dirent.h>
#include <hyperpar/hyperpar.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_check.h"

#define TEXT "/usr/share/common-licenses/GPL-3"

static char tmp[128];

typedef struct {
    int steps, warnings, notes;
    char warning[512], note[512];
} record;

static void on_event(void *ctx, const hp_event *e) {
    record *r = ctx;
    if (e->kind == HP_EVENT_STEP) r->steps++;
    if (e->kind == HP_EVENT_WARNING) r->warnings++, snprintf(r->warning, sizeof r->warning, "%s", e->message);
    if (e->kind == HP_EVENT_NOTE) r->notes++, snprintf(r->note, sizeof r->note, "%s", e->message);
}

static const hp_model_config tiny = {.layers = 1, .heads = 2, .channels = 32, .vocab = 256, .max_seq = 16};

static void config(hp_train_config *c, const hp_model *m, record *r) {
    hp_train_config_default(c, m);
    c->threads = 1;
    c->data = TEXT;
    c->steps = 4;
    c->warmup_steps = 1;
    c->val_steps = 0;
    c->on_event = on_event, c->event_ctx = r;
}

/* The entries of dir, sorted, space-separated. */
static void entries(char *out, size_t cap, const char *dir) {
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, ".."))
            snprintf(out + strlen(out), cap - strlen(out), "%s ", list[i]->d_name);
        free(list[i]);
    }
    if (n >= 0) free(list);
}

static int lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void test_write_errors(const hp_model *m) {
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL;
    config(&c, m, &r);
    c.metrics = "/dev/full";
    if (OK(hp_train_create(&t, &c))) ERR(hp_train_run(t), "/dev/full: cannot write the metrics: No space left on device");
    hp_train_free(t);
    CHECK(r.warnings == 0);
    memset(&r, 0, sizeof r);
    c.on_write_error = HP_ON_WRITE_ERROR_WARN;
    if (OK(hp_train_create(&t, &c))) OK(hp_train_run(t));
    hp_train_free(t);
    CHECK(r.steps == 4 && r.warnings == 1);
    CHECK(strstr(r.warning, "/dev/full: cannot write the metrics: No space left on device; no more metrics") != NULL);
    c.on_write_error = 7;
    ERR(hp_train_create(&t, &c), "on_write_error must be 0 (fail) or 1 (warn), got 7");
}

static void test_ckpt_dir(const hp_model *m) {
    char ck[256], got[512], mp[300];
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    snprintf(mp, sizeof mp, "%s/m.jsonl", tmp);
    record r = {0};
    hp_train_config c;
    hp_train *t = NULL, *t2 = NULL;
    config(&c, m, &r);
    c.ckpt_dir = ck, c.ckpt_every = 1, c.keep_last = 2, c.metrics = mp;
    c.stop_at = 3;
    if (OK(hp_train_create(&t, &c))) {
        /* the directory is this trainer's until it is freed */
        char needle[128];
        snprintf(needle, sizeof needle, "another run (pid %ld, this process) is writing checkpoints", (long)getpid());
        record r2 = {0};
        hp_train_config c2 = c;
        c2.event_ctx = &r2;
        ERR(hp_train_create(&t2, &c2), needle);
        OK(hp_train_run(t));
    }
    hp_train_free(t);
    entries(got, sizeof got, ck);
    CHECK(!strcmp(got, "latest step_000002 step_000003 "));
    c.keep_last = -1;
    ERR(hp_train_create(&t, &c), "keep_last must be >= 0, got -1");
    c.keep_last = 1, c.ckpt_dir = NULL, c.ckpt_every = 0;
    ERR(hp_train_create(&t, &c), "keep_last needs ckpt_dir");

    /* a crashed save's leftovers and a metrics line of a step after the checkpoint */
    char p[400];
    snprintf(p, sizeof p, "%s/step_000004.tmp-AbCdEf", ck);
    CHECK(mkdir(p, 0755) == 0);
    FILE *f = fopen(mp, "a");
    if (f) fputs("{\"step\": 4, \"loss\": 1}\n", f), fclose(f);
    CHECK(lines(mp) == 4);
    memset(&r, 0, sizeof r);
    config(&c, m, &r);
    c.ckpt_dir = ck, c.keep_last = 2, c.metrics = mp, c.resume = ck;
    if (OK(hp_train_create(&t, &c))) {
        CHECK(r.notes == 2); /* the metrics line dropped, the directory recovered */
        OK(hp_train_run(t));
    }
    hp_train_free(t);
    CHECK(strstr(r.note, "recovered from an interrupted save: 0 checkpoints moved back, 1 temporary removed") ||
          strstr(r.note, "dropped 1 line written after step 3"));
    CHECK(r.steps == 1);
    CHECK(lines(mp) == 4); /* steps 1..4, each once */
    entries(got, sizeof got, ck);
    CHECK(!strcmp(got, "latest step_000003 step_000004 "));
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/hp_api_outputs_%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    if (system(cmd) != 0) return 1;
    hp_model *m = NULL;
    if (OK(hp_model_gpt2(&m, &tiny, 2, 16))) {
        test_write_errors(m);
        test_ckpt_dir(m);
    }
    hp_model_free(m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) failures++;
    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
