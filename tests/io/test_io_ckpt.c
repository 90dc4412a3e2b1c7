/* Checkpoint directories: a bit-exact round trip, safe replacement of an
 * older checkpoint (no temporaries left behind), the `latest` pointer, and
 * errors naming the missing or bad file. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/fsutil.h"
#include "io_testutil.h"
#include "testutil.h"

enum { NW = 24, NM = 10 };

static void fill(float *w, float *m, int32_t *step, unsigned long long seed) {
    hp_test_rng r = {seed};
    for (int i = 0; i < NW; i++) w[i] = (float)hp_test_normal(&r);
    for (int i = 0; i < NM; i++) m[i] = (float)hp_test_normal(&r);
    *step = (int32_t)seed;
}

static void save(const char *dir, const float *w, const float *m, const int32_t *step, const char *state) {
    hp_named_tensor weights[] = {{"wte", HP_F32, hp_shape2(4, 5), w}, {"lnfw", HP_F32, hp_shape1(4), w + 20}};
    hp_named_tensor opt[] = {{"wte.m", HP_F32, hp_shape2(2, 5), m}, {"t", HP_I32, hp_shape1(1), step}};
    CHECK_OK(hp_ckpt_save(dir, weights, 2, opt, 2, state));
}

static void check_load(const char *dir, const float *w, const float *m, const int32_t *step, int64_t want_step) {
    hp_ckpt ck;
    CHECK_OK(hp_ckpt_open(&ck, dir));
    if (!ck.model) return;
    float w2[NW], m2[NM];
    int32_t s2 = 0;
    hp_shape a = hp_shape2(4, 5), b = hp_shape1(4), c = hp_shape2(2, 5), d = hp_shape1(1);
    CHECK_OK(hp_safetensors_read_into(ck.model, "wte", HP_F32, &a, w2));
    CHECK_OK(hp_safetensors_read_into(ck.model, "lnfw", HP_F32, &b, w2 + 20));
    CHECK_OK(hp_safetensors_read_into(ck.optim, "wte.m", HP_F32, &c, m2));
    CHECK_OK(hp_safetensors_read_into(ck.optim, "t", HP_I32, &d, &s2));
    CHECK(!memcmp(w, w2, sizeof w2) && !memcmp(m, m2, sizeof m2) && s2 == *step);
    int64_t st = -1;
    CHECK_OK(hp_json_get_int(&st, ck.state, "step"));
    CHECK(st == want_step);
    hp_ckpt_close(&ck);
}

int main(void) {
    char run[] = "/tmp/hp_io_ckpt_XXXXXX";
    CHECK(mkdtemp(run) != NULL);
    float w[NW], m[NM];
    int32_t step;
    char *c1 = hp_fs_join(run, "step_000100");
    char *c2 = hp_fs_join(run, "step_000200");

    fill(w, m, &step, 100);
    save(c1, w, m, &step, "{\"step\":100,\"data\":{\"position\":7}}");
    check_load(c1, w, m, &step, 100);
    CHECK(count_entries(c1) == 3);
    CHECK(count_entries(run) == 1);

    /* model.safetensors holds exactly what a direct write would */
    char *direct = hp_fs_join(run, "direct.safetensors");
    hp_named_tensor weights[] = {{"wte", HP_F32, hp_shape2(4, 5), w}, {"lnfw", HP_F32, hp_shape1(4), w + 20}};
    CHECK_OK(hp_safetensors_write(direct, weights, 2, NULL));
    char *mp = hp_fs_join(c1, HP_CKPT_MODEL);
    char *x, *y;
    size_t nx, ny;
    CHECK_OK(hp_fs_read_all(&x, &nx, direct));
    CHECK_OK(hp_fs_read_all(&y, &ny, mp));
    CHECK(nx == ny && !memcmp(x, y, nx));
    free(x);
    free(y);
    CHECK_OK(hp_fs_remove_tree(direct));

    /* replacing a checkpoint of the same name: the new contents, nothing left aside */
    fill(w, m, &step, 101);
    save(c1, w, m, &step, "{\"step\":101}");
    check_load(c1, w, m, &step, 101);
    CHECK(count_entries(run) == 1);

    /* latest pointer */
    CHECK_OK(hp_ckpt_set_latest(c1));
    char *got = NULL;
    CHECK_OK(hp_ckpt_get_latest(&got, run));
    CHECK(got && !strcmp(got, c1));
    free(got);
    fill(w, m, &step, 200);
    save(c2, w, m, &step, "{\"step\":200}");
    char *c2slash = hp_fs_join(c2, ""); /* trailing slash is fine */
    CHECK_OK(hp_ckpt_set_latest(c2slash));
    free(c2slash);
    CHECK_OK(hp_ckpt_get_latest(&got, run));
    CHECK(got && !strcmp(got, c2));
    if (got) check_load(got, w, m, &step, 200);
    free(got);
    char *latest = hp_fs_join(run, HP_CKPT_LATEST);
    CHECK_OK(hp_fs_read_all(&x, &nx, latest));
    CHECK(!strcmp(x, "step_000200\n"));
    free(x);
    CHECK(count_entries(run) == 3);

    /* refusals and errors */
    char *c3 = hp_fs_join(run, "step_000300");
    CHECK_ERR(hp_ckpt_save(c3, NULL, 0, NULL, 0, "{\"step\":"), "step_000300/state.json: state is not valid JSON");
    CHECK_ERR(hp_ckpt_save(c3, NULL, 0, NULL, 0, "[1]"), "step_000300/state.json: state must be a JSON object");
    CHECK(!hp_fs_exists(c3));
    hp_named_tensor dup[] = {{"a", HP_F32, hp_shape1(1), w}, {"a", HP_F32, hp_shape1(1), w}};
    CHECK_ERR(hp_ckpt_save(c3, dup, 2, NULL, 0, "{}"), "model.safetensors: tensor name 'a' used twice");
    CHECK(!hp_fs_exists(c3));
    CHECK(count_entries(run) == 3); /* the failed save left no temporary */
    hp_ckpt ck;
    CHECK_ERR(hp_ckpt_open(&ck, c3), "step_000300: cannot open checkpoint: No such file");
    CHECK(ck.model == NULL);

    char *sp = hp_fs_join(c2, HP_CKPT_STATE);
    CHECK_OK(hp_fs_write_atomic(sp, "{\"step\": 1,", 11));
    CHECK_ERR(hp_ckpt_open(&ck, c2), "step_000200/state.json: json: offset 11");
    CHECK_OK(hp_fs_write_atomic(sp, "7", 1));
    CHECK_ERR(hp_ckpt_open(&ck, c2), "step_000200/state.json: expected a JSON object");
    CHECK_OK(hp_fs_remove_tree(sp));
    CHECK_ERR(hp_ckpt_open(&ck, c2), "step_000200/state.json: cannot open: No such file");
    char *op = hp_fs_join(c2, HP_CKPT_OPTIM);
    CHECK_OK(hp_fs_write_atomic(op, "garbage!", 8));
    CHECK_ERR(hp_ckpt_open(&ck, c2), "step_000200/optim.safetensors: header length");
    char *mp2 = hp_fs_join(c2, HP_CKPT_MODEL);
    CHECK_OK(hp_fs_remove_tree(mp2));
    CHECK_ERR(hp_ckpt_open(&ck, c2), "step_000200/model.safetensors: cannot open: No such file");

    CHECK_OK(hp_fs_write_atomic(latest, "../etc\n", 7));
    CHECK_ERR(hp_ckpt_get_latest(&got, run), "latest: expected one checkpoint directory name on one line");
    CHECK_OK(hp_fs_write_atomic(latest, "step_999\n", 9));
    CHECK_ERR(hp_ckpt_get_latest(&got, run), "latest: names 'step_999', but");
    CHECK_OK(hp_fs_remove_tree(latest));
    CHECK_ERR(hp_ckpt_get_latest(&got, run), "latest: cannot open: No such file");

    /* a plain file where the checkpoint should go is not replaced */
    CHECK_OK(hp_fs_write_atomic(c3, "x", 1));
    CHECK_ERR(hp_ckpt_save(c3, NULL, 0, NULL, 0, "{}"), "step_000300: exists and is not a checkpoint directory");
    CHECK_OK(hp_fs_read_all(&x, &nx, c3));
    CHECK(nx == 1 && x[0] == 'x');
    free(x);

    /* the parent is created when missing */
    char *nested = hp_fs_join(run, "sub/run2/ck");
    CHECK_OK(hp_ckpt_save(nested, NULL, 0, NULL, 0, "{\"step\":0}"));
    CHECK_OK(hp_ckpt_open(&ck, nested));
    if (ck.model) {
        CHECK(hp_safetensors_count(ck.model) == 0 && hp_safetensors_count(ck.optim) == 0);
        CHECK(!strcmp(ck.state_text, "{\"step\":0}"));
        hp_ckpt_close(&ck);
    }

    free(nested);
    free(mp2);
    free(op);
    free(sp);
    free(c3);
    free(latest);
    free(mp);
    free(direct);
    free(c1);
    free(c2);
    CHECK_OK(hp_fs_remove_tree(run));
    return hp_test_finish("test_io_ckpt");
}
