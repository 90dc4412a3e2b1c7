/* The thread pool runs every thread once per call and splits work exactly. */
#include "core/pool.h"
#include "testutil.h"

typedef struct {
    long sums[8];
    int calls[8];
} ctx_t;

static void task(void *c_, int tid, int n) {
    ctx_t *c = c_;
    long b, e;
    hp_pool_split(&b, &e, 1000, 16, tid, n);
    long s = 0;
    for (long i = b; i < e; i++) s += i;
    c->sums[tid] = s;
    c->calls[tid]++;
}

int main(void) {
    for (int n = 1; n <= 4; n++) {
        hp_pool *p;
        CHECK_OK(hp_pool_create(&p, n));
        CHECK(hp_pool_size(p) == n);
        ctx_t c = {0};
        for (int rep = 0; rep < 50; rep++) {
            hp_pool_run(p, task, &c);
            long total = 0;
            for (int t = 0; t < n; t++) total += c.sums[t];
            CHECK(total == 999L * 1000 / 2);
        }
        for (int t = 0; t < n; t++) CHECK(c.calls[t] == 50);
        hp_pool_destroy(p);
    }
    /* split: blocks are aligned and cover [0, n) without overlap */
    long prev = 0;
    for (int t = 0; t < 3; t++) {
        long b, e;
        hp_pool_split(&b, &e, 100, 8, t, 3);
        CHECK(b == prev);
        CHECK(b % 8 == 0);
        prev = e;
    }
    CHECK(prev == 100);
    hp_pool *bad;
    CHECK_ERR(hp_pool_create(&bad, 0), "thread count");
    return hp_test_finish("test_pool");
}
