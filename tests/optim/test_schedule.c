/* LR schedules: values at the key steps of each kind, and name parsing. */
#include "optim/schedule.h"
#include "testutil.h"

int main(void) {
    hp_lr_schedule s = {HP_LR_CONSTANT, 0.01f, 10, 0.1f};
    CHECK(hp_lr_at(&s, 0, 100) == 0.01f);
    CHECK(hp_lr_at(&s, 99, 100) == 0.01f);

    CHECK_OK(hp_lr_kind_parse(&s, "cosine"));
    CHECK(s.kind == HP_LR_COSINE);
    CHECK_NEAR(hp_lr_at(&s, 0, 110), 0.001, 1e-9);  /* (0+1)/10 of lr */
    CHECK_NEAR(hp_lr_at(&s, 4, 110), 0.005, 1e-9);
    CHECK_NEAR(hp_lr_at(&s, 9, 110), 0.01, 1e-9);   /* end of warmup: peak */
    CHECK_NEAR(hp_lr_at(&s, 10, 110), 0.01, 1e-9);  /* decay starts at the peak */
    CHECK_NEAR(hp_lr_at(&s, 60, 110), 0.0055, 1e-8); /* halfway: (max + min) / 2 */
    CHECK_NEAR(hp_lr_at(&s, 35, 110), 0.001 + 0.009 * 0.5 * (1 + cos(M_PI * 0.25)), 1e-8);
    CHECK_NEAR(hp_lr_at(&s, 110, 110), 0.001, 1e-9);  /* the end: min_lr_frac * lr */
    CHECK_NEAR(hp_lr_at(&s, 500, 110), 0.001, 1e-9);  /* past the end: stays at min */
    /* decreasing after warmup */
    for (long t = 10; t < 110; t++) CHECK(hp_lr_at(&s, t + 1, 110) <= hp_lr_at(&s, t, 110));

    CHECK_OK(hp_lr_kind_parse(&s, "linear"));
    CHECK(s.kind == HP_LR_LINEAR);
    CHECK_NEAR(hp_lr_at(&s, 2, 110), 0.003, 1e-9);
    CHECK_NEAR(hp_lr_at(&s, 10, 110), 0.01, 1e-9);
    CHECK_NEAR(hp_lr_at(&s, 35, 110), 0.01 - 0.009 * 0.25, 1e-8);
    CHECK_NEAR(hp_lr_at(&s, 60, 110), 0.0055, 1e-8);
    CHECK_NEAR(hp_lr_at(&s, 110, 110), 0.001, 1e-9);

    /* no warmup; min 0 */
    hp_lr_schedule c = {HP_LR_COSINE, 1.0f, 0, 0.0f};
    CHECK_NEAR(hp_lr_at(&c, 0, 4), 1.0, 1e-7);
    CHECK_NEAR(hp_lr_at(&c, 2, 4), 0.5, 1e-7);
    CHECK_NEAR(hp_lr_at(&c, 4, 4), 0.0, 1e-7);
    /* a run shorter than its warmup never leaves the warmup ramp it reaches */
    hp_lr_schedule w = {HP_LR_LINEAR, 1.0f, 10, 0.5f};
    CHECK_NEAR(hp_lr_at(&w, 3, 5), 0.4, 1e-7);
    CHECK_NEAR(hp_lr_at(&w, 12, 5), 0.5, 1e-7);

    CHECK_ERR(hp_lr_kind_parse(&s, "cosin"), "lr_schedule: unknown schedule 'cosin'");
    CHECK_ERR(hp_lr_kind_parse(&s, NULL), "lr_schedule");
    CHECK(s.kind == HP_LR_LINEAR); /* unchanged by the failed parses */
    CHECK(!strcmp(hp_lr_kind_name(HP_LR_COSINE), "cosine"));
    hp_lr_schedule bad = {HP_LR_COSINE, 0.1f, -1, 0.1f};
    CHECK_ERR(hp_lr_schedule_check(&bad), "warmup_steps");
    bad.warmup_steps = 0;
    bad.min_lr_frac = 1.5f;
    CHECK_ERR(hp_lr_schedule_check(&bad), "min_lr_frac");
    bad.min_lr_frac = 0.0f;
    CHECK_OK(hp_lr_schedule_check(&bad));
    bad.lr = -1.0f;
    CHECK_ERR(hp_lr_schedule_check(&bad), "lr:");
    return hp_test_finish("test_schedule");
}
