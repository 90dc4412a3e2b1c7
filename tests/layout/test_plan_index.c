/* Plan files of many rules (issue 22, item 8): the check for a repeated rule
 * goes through an index built while the file is parsed. Across the index's
 * growth (64 slots, doubling) every repeat is found and names both lines,
 * params and inputs are indexed apart, a plan without repeats keeps every
 * rule in file order, and a byte order mark is named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/plan.h"
#include "testutil.h"

/* "mesh: dp=2", then n param rules p0..p{n-1} (and input rules of the same
 * names when inputs), then, when repeat >= 0, p{repeat} once more. */
static char *plan_text(int n, int inputs, int repeat) {
    size_t cap = 64 + (size_t)n * 48;
    char *t = malloc(cap);
    size_t k = (size_t)snprintf(t, cap, "mesh: dp=2\n");
    for (int i = 0; i < n; i++) {
        k += (size_t)snprintf(t + k, cap - k, "param p%d: S(0)@dp\n", i);
        if (inputs) k += (size_t)snprintf(t + k, cap - k, "input p%d: R\n", i);
    }
    if (repeat >= 0) snprintf(t + k, cap - k, "param p%d: R\n", repeat);
    return t;
}

static void test_repeats(void) {
    const int sizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 1000, 4097};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        const int at[] = {0, n / 2, n - 1};
        for (int r = 0; r < 3; r++) {
            char *t = plan_text(n, 0, at[r]), want[128];
            snprintf(want, sizeof want, "t.plan:%d: param 'p%d' repeats the rule at t.plan:%d", n + 2, at[r],
                     at[r] + 2);
            hp_plan p;
            CHECK_ERR(hp_plan_parse(&p, t, "t.plan"), want);
            free(t);
        }
        char *t = plan_text(n, 1, -1);
        hp_plan p;
        CHECK_OK(hp_plan_parse(&p, t, "t.plan"));
        CHECKF(p.nparams == n && p.ninputs == n, "n=%d: %d params, %d inputs", n, p.nparams, p.ninputs);
        for (int i = 0; i < p.nparams && i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "p%d", i);
            CHECKF(!strcmp(p.params[i].pattern, name) && !strcmp(p.inputs[i].pattern, name), "n=%d: rule %d", n, i);
        }
        hp_plan_free(&p);
        free(t);
    }
    /* the C API's rules are still compared (no index there) */
    hp_plan p;
    CHECK_OK(hp_plan_parse(&p, "mesh: dp=2\nparam a: R\n", "t.plan"));
    CHECK_ERR(hp_plan_add_param_str(&p, "a", "S(0)@dp"), "param 'a' repeats the rule at t.plan:2");
    hp_plan_free(&p);
}

static void test_bom(void) {
    hp_plan p;
    CHECK_ERR(hp_plan_parse(&p, "\xEF\xBB\xBFmesh: dp=2\n", "b.plan"),
              "b.plan:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF)");
    /* elsewhere (a comment) UTF-8 is text like any other */
    CHECK_OK(hp_plan_parse(&p, "mesh: dp=2 # caf\xC3\xA9 \xEF\xBB\xBF\nparam a: R\n", "b.plan"));
    CHECK(p.nparams == 1);
    hp_plan_free(&p);
}

int main(void) {
    test_repeats();
    test_bom();
    return hp_test_finish("test_plan_index");
}
