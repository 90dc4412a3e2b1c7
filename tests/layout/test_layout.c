/* Meshes, placements and layouts: parse / print round trips, coordinates and
 * axis groups, the ceil-chunk rule and local pieces (nested and uneven), the
 * error messages; and the redistribution planner's choices, costs and text. */
#include <string.h>

#include "layout/layout.h"
#include "layout/redist.h"
#include "testutil.h"

#define CHECK_MSG(expr, want)                                                                     \
    do {                                                                                          \
        hp_status s2_ = (expr);                                                                   \
        CHECK(s2_ != HP_OK);                                                                      \
        if (s2_ && strcmp(hp_status_msg(s2_), want)) {                                            \
            fprintf(stderr, "%s:%d: error '%s', want '%s'\n", __FILE__, __LINE__, hp_status_msg(s2_), \
                    want);                                                                        \
            hp_test_failures++;                                                                   \
        }                                                                                         \
        hp_status_free(s2_);                                                                      \
    } while (0)

static void test_mesh(void) {
    hp_mesh m;
    char buf[128];
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=3"));
    CHECK(m.ndim == 2 && m.size[0] == 2 && m.size[1] == 3);
    CHECK(!strcmp(m.name[0], "dp") && !strcmp(m.name[1], "tp"));
    CHECK(hp_mesh_size(&m) == 6);
    CHECK(hp_mesh_axis(&m, "tp") == 1 && hp_mesh_axis(&m, "pp") == -1);
    CHECK(!strcmp(hp_mesh_str(buf, sizeof buf, &m), "dp=2,tp=3"));
    CHECK_OK(hp_mesh_parse(&m, " node = 2 , die=4 "));
    CHECK(!strcmp(hp_mesh_str(buf, sizeof buf, &m), "node=2,die=4"));
    CHECK_OK(hp_mesh_parse(&m, "a=1,b_2=2,c=1,d=3"));
    CHECK(!strcmp(hp_mesh_str(buf, sizeof buf, &m), "a=1,b_2=2,c=1,d=3") && hp_mesh_size(&m) == 6);
    /* coordinates: row-major, last axis fastest */
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=3"));
    int c[HP_MESH_MAX_DIMS];
    hp_mesh_coords(c, &m, 4);
    CHECK(c[0] == 1 && c[1] == 1);
    hp_mesh_coords(c, &m, 2);
    CHECK(c[0] == 0 && c[1] == 2);
    for (int r = 0; r < 6; r++) {
        hp_mesh_coords(c, &m, r);
        CHECK(hp_mesh_rank(&m, c) == r);
    }
    int ranks[8], idx = -1;
    hp_mesh_axis_group(ranks, &idx, &m, 0, 4);
    CHECK(ranks[0] == 1 && ranks[1] == 4 && idx == 1);
    hp_mesh_axis_group(ranks, &idx, &m, 1, 4);
    CHECK(ranks[0] == 3 && ranks[1] == 4 && ranks[2] == 5 && idx == 1);
    /* errors */
    CHECK_MSG(hp_mesh_parse(&m, "dp=0"), "mesh 'dp=0': axis 'dp' size must be >= 1");
    CHECK_MSG(hp_mesh_parse(&m, "dp=2,dp=2"), "mesh 'dp=2,dp=2': axis 'dp' appears twice");
    CHECK_ERR(hp_mesh_parse(&m, "dp"), "axis 'dp' has no '=size'");
    CHECK_ERR(hp_mesh_parse(&m, "dp=two"), "size 'two' is not an integer");
    CHECK_ERR(hp_mesh_parse(&m, "dp=2,"), "empty axis entry");
    CHECK_ERR(hp_mesh_parse(&m, ""), "empty axis entry");
    CHECK_ERR(hp_mesh_parse(&m, "=2"), "has no name");
    CHECK_ERR(hp_mesh_parse(&m, "2d=2"), "axis name '2d'");
    CHECK_ERR(hp_mesh_parse(&m, "a=1,b=1,c=1,d=1,e=1"), "more than 4 axes");
    CHECK_ERR(hp_mesh_parse(&m, "averyveryverylongname=2"), "longer than 15");
}

static void test_layout_text(void) {
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=2"));
    hp_layout l;
    char buf[128];
    CHECK_OK(hp_layout_parse(&l, "S(0)@dp", &m));
    CHECK(l.ndim == 2 && l.p[0].kind == HP_SHARD && l.p[0].dim == 0 && l.p[1].kind == HP_REPLICATE);
    CHECK(!strcmp(hp_layout_str(buf, sizeof buf, &l, &m), "S(0)@dp,R@tp"));
    CHECK_OK(hp_layout_parse(&l, "R", &m));
    CHECK(hp_layout_is_replicated(&l) && !hp_layout_has_partial(&l));
    hp_layout r = hp_layout_replicated(&m);
    CHECK(hp_layout_eq(&l, &r));
    CHECK_OK(hp_layout_parse(&l, " P(avg)@tp , S(1)@dp ", &m)); /* any order, blanks */
    CHECK(l.p[0].kind == HP_SHARD && l.p[0].dim == 1 && l.p[1].kind == HP_PARTIAL && l.p[1].op == HP_PARTIAL_AVG);
    CHECK(hp_layout_has_partial(&l) && !hp_layout_is_replicated(&l));
    CHECK(!hp_layout_eq(&l, &r));
    /* every combination prints and parses back */
    const char *pl[] = {"R", "S(0)", "S(1)", "S(3)", "P(sum)", "P(avg)", "P(max)"};
    int n = 0;
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++) {
            char text[64];
            snprintf(text, sizeof text, "%s@dp,%s@tp", pl[a], pl[b]);
            hp_layout x, y;
            CHECK_OK(hp_layout_parse(&x, text, &m));
            CHECK(!strcmp(hp_layout_str(buf, sizeof buf, &x, &m), text));
            CHECK_OK(hp_layout_parse(&y, buf, &m));
            CHECK(hp_layout_eq(&x, &y));
            n++;
        }
    CHECK(n == 49);
    CHECK(!strcmp(hp_placement_str(buf, sizeof buf, hp_partial(HP_PARTIAL_MAX)), "P(max)"));
    CHECK(!strcmp(hp_placement_str(buf, sizeof buf, hp_shard(2)), "S(2)"));
    CHECK(hp_placement_eq(hp_shard(1), hp_shard(1)) && !hp_placement_eq(hp_shard(1), hp_shard(0)));
    CHECK(!hp_placement_eq(hp_partial(HP_PARTIAL_SUM), hp_partial(HP_PARTIAL_AVG)));
    CHECK(!hp_placement_eq(hp_replicate(), hp_partial(HP_PARTIAL_SUM)));
    /* errors */
    CHECK_MSG(hp_layout_parse(&l, "S(0)@pp", &m), "layout 'S(0)@pp': unknown axis 'pp' (mesh dp=2,tp=2)");
    CHECK_MSG(hp_layout_parse(&l, "S(0)@dp,R@dp", &m), "layout 'S(0)@dp,R@dp': axis 'dp' is given twice");
    CHECK_ERR(hp_layout_parse(&l, "X@dp", &m), "layout 'X@dp': bad placement 'X'");
    CHECK_ERR(hp_layout_parse(&l, "S(-1)@dp", &m), "bad placement 'S(-1)'");
    CHECK_ERR(hp_layout_parse(&l, "S(0", &m), "names no mesh axis");
    CHECK_ERR(hp_layout_parse(&l, "P(min)@tp", &m), "bad placement 'P(min)'");
    CHECK_ERR(hp_layout_parse(&l, "", &m), "empty entry");
    CHECK_ERR(hp_layout_parse(&l, "S(0)@dp,", &m), "empty entry");
    /* checks against a tensor */
    hp_mesh m1;
    CHECK_OK(hp_mesh_parse(&m1, "dp=2"));
    CHECK_OK(hp_layout_parse(&l, "S(5)@dp", &m1));
    CHECK_MSG(hp_layout_check(&l, &m1, 2, "h.0.mlp.fc.weight"), "layout 'S(5)@dp': tensor 'h.0.mlp.fc.weight' has 2 dims");
    CHECK_OK(hp_layout_parse(&l, "S(1)@dp", &m1));
    CHECK_OK(hp_layout_check(&l, &m1, 2, "w"));
    CHECK_ERR(hp_layout_check(&l, &m, 2, "w"), "has 1 placements but mesh 'dp=2,tp=2' has 2 axes");
}

static void test_chunks(void) {
    int64_t b, e;
    hp_chunk(&b, &e, 5, 2, 0);
    CHECK(b == 0 && e == 3);
    hp_chunk(&b, &e, 5, 2, 1);
    CHECK(b == 3 && e == 5);
    hp_chunk(&b, &e, 5, 3, 2);
    CHECK(b == 4 && e == 5);
    hp_chunk(&b, &e, 2, 3, 2); /* trailing member empty */
    CHECK(b == 2 && e == 2);
    hp_chunk(&b, &e, 7, 4, 3);
    CHECK(b == 6 && e == 7);
    hp_chunk(&b, &e, 0, 2, 1);
    CHECK(b == 0 && e == 0);
    hp_chunk(&b, &e, 10, 4, 3); /* c = 3: [9, 10) */
    CHECK(b == 9 && e == 10);
    /* pieces tile the dim for many (n, k) */
    for (int n = 0; n < 12; n++)
        for (int k = 1; k < 6; k++) {
            int64_t at = 0;
            for (int i = 0; i < k; i++) {
                hp_chunk(&b, &e, n, k, i);
                CHECK(b == at && e >= b);
                at = e;
            }
            CHECK(at == n);
        }
}

static void test_local_shape(void) {
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=2"));
    hp_shape g = hp_shape2(5, 7), s;
    int64_t off[HP_MAX_DIMS];
    hp_layout l;
    /* both axes split dim 0: dp first (3 | 2), then tp inside (2 | 1, 1 | 1) */
    CHECK_OK(hp_layout_parse(&l, "S(0)@dp,S(0)@tp", &m));
    const int64_t rows[4] = {2, 1, 1, 1}, offs[4] = {0, 2, 3, 4};
    for (int r = 0; r < 4; r++) {
        hp_local_shape(&s, off, &g, &l, &m, r);
        CHECK(s.ndim == 2 && s.d[0] == rows[r] && s.d[1] == 7 && off[0] == offs[r] && off[1] == 0);
    }
    CHECK_OK(hp_layout_parse(&l, "S(1)@dp,S(0)@tp", &m));
    hp_local_shape(&s, off, &g, &l, &m, 3); /* dp 1: cols [4, 7); tp 1: rows [3, 5) */
    CHECK(s.d[0] == 2 && s.d[1] == 3 && off[0] == 3 && off[1] == 4);
    CHECK_OK(hp_layout_parse(&l, "P(sum)@dp,S(1)@tp", &m));
    hp_local_shape(&s, NULL, &g, &l, &m, 1);
    CHECK(s.d[0] == 5 && s.d[1] == 3);
    hp_mesh m3;
    CHECK_OK(hp_mesh_parse(&m3, "x=3"));
    hp_shape g2 = hp_shape2(2, 4);
    CHECK_OK(hp_layout_parse(&l, "S(0)@x", &m3));
    hp_local_shape(&s, off, &g2, &l, &m3, 2); /* empty piece */
    CHECK(s.d[0] == 0 && s.d[1] == 4 && off[0] == 2 && hp_shape_numel(&s) == 0);
}

/* A plan's steps chain from `from` to `to`, one axis at a time. */
static int chained(const hp_redist *p) {
    if (p->nsteps == 0) return hp_layout_eq(&p->from, &p->to);
    if (!hp_layout_eq(&p->step[0].before, &p->from)) return 0;
    if (!hp_layout_eq(&p->step[p->nsteps - 1].after, &p->to)) return 0;
    double total = 0;
    for (int i = 0; i < p->nsteps; i++) {
        if (i && !hp_layout_eq(&p->step[i - 1].after, &p->step[i].before)) return 0;
        int changed = 0;
        for (int a = 0; a < p->mesh.ndim; a++) changed += !hp_placement_eq(p->step[i].before.p[a], p->step[i].after.p[a]);
        if (changed != 1 || hp_placement_eq(p->step[i].before.p[p->step[i].axis], p->step[i].after.p[p->step[i].axis]))
            return 0;
        total += p->step[i].bytes;
    }
    return total == p->bytes;
}

static hp_shape scalar_shape(void) {
    hp_shape s;
    memset(&s, 0, sizeof s);
    return s;
}

static void plan_of(hp_redist *p, const char *mesh, hp_shape g, const char *from, const char *to) {
    hp_mesh m;
    hp_layout a, b;
    CHECK_OK(hp_mesh_parse(&m, mesh));
    CHECK_OK(hp_layout_parse(&a, from, &m));
    CHECK_OK(hp_layout_parse(&b, to, &m));
    CHECK_OK(hp_redist_plan(p, &g, &a, &b, &m));
    CHECK(chained(p));
    double c = -1;
    CHECK_OK(hp_redist_cost(&c, &g, &a, &b, &m));
    CHECK(c == p->bytes);
}

static void test_redist_plans(void) {
    hp_redist p;
    char buf[512];
    /* [8, 4] fp32 = 128 bytes on 4 ranks */
    hp_shape g = hp_shape2(8, 4);
    plan_of(&p, "dp=4", g, "S(0)@dp", "S(0)@dp");
    CHECK(p.nsteps == 0 && p.bytes == 0 && !strcmp(hp_redist_str(buf, sizeof buf, &p), "copy"));
    plan_of(&p, "dp=4", g, "S(0)@dp", "R");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_ALL_GATHER && p.step[0].dim == 0 && p.step[0].axis == 0);
    CHECK(p.bytes == 96); /* 3/4 of 128 */
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "all-gather(dp, dim 0) 96 B"));
    plan_of(&p, "dp=4", g, "P(sum)@dp", "S(1)@dp");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_REDUCE_SCATTER && p.step[0].dim == 1 && p.bytes == 96);
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "reduce-scatter(dp, dim 1, sum) 96 B"));
    plan_of(&p, "dp=4", g, "P(avg)@dp", "R");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_ALL_REDUCE && p.step[0].op == HP_PARTIAL_AVG && p.bytes == 192);
    plan_of(&p, "dp=4", g, "P(max)@dp", "R");
    /* max: reduce-scatter (all-to-all + local max) then all-gather beats gathering every term */
    CHECK(p.nsteps == 2 && p.step[0].kind == HP_RD_REDUCE_SCATTER && p.step[0].op == HP_PARTIAL_MAX);
    CHECK(p.step[1].kind == HP_RD_ALL_GATHER && p.bytes == 192);
    plan_of(&p, "dp=2", scalar_shape(), "P(max)@dp", "R"); /* a scalar cannot be split */
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_ALL_REDUCE && p.step[0].op == HP_PARTIAL_MAX && p.bytes == 4);
    plan_of(&p, "dp=4", g, "R", "S(1)@dp");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_SLICE && p.step[0].dim == 1 && p.bytes == 0);
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "slice(dp, dim 1)"));
    plan_of(&p, "dp=4", g, "S(0)@dp", "S(1)@dp");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_ALL_TO_ALL && p.step[0].dim == 0 && p.step[0].dim_to == 1);
    CHECK(p.bytes == 24); /* 3/4 of the 32-byte piece */
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "all-to-all(dp, dim 0 -> 1) 24 B"));
    plan_of(&p, "dp=4", g, "R", "P(sum)@dp");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_TO_PARTIAL && p.bytes == 0);
    plan_of(&p, "dp=4", g, "P(sum)@dp", "P(max)@dp"); /* through Replicate */
    CHECK(p.nsteps == 2 && p.step[0].kind == HP_RD_ALL_REDUCE && p.step[1].kind == HP_RD_TO_PARTIAL);
    plan_of(&p, "dp=4", g, "S(0)@dp", "P(sum)@dp");
    CHECK(p.nsteps == 2 && p.step[0].kind == HP_RD_ALL_GATHER && p.step[1].kind == HP_RD_TO_PARTIAL);
    /* P(sum) -> S is a reduce-scatter, cheaper than all-reduce then slice */
    plan_of(&p, "dp=2,tp=2", g, "P(sum)@dp,S(0)@tp", "S(1)@dp,S(0)@tp");
    CHECK(p.nsteps == 1 && p.step[0].kind == HP_RD_REDUCE_SCATTER && p.step[0].axis == 0);
    /* nested: tp splits dp's rows; gathering dp first would be wrong */
    plan_of(&p, "dp=2,tp=2", g, "S(0)@dp,S(0)@tp", "R");
    CHECK(p.nsteps == 2 && p.step[0].axis == 1 && p.step[1].axis == 0);
    CHECK(p.step[0].kind == HP_RD_ALL_GATHER && p.step[1].kind == HP_RD_ALL_GATHER);
    CHECK(p.bytes == 32 + 64);
    plan_of(&p, "dp=2,tp=2", g, "R", "S(0)@dp,S(0)@tp");
    CHECK(p.nsteps == 2 && p.step[0].axis == 0 && p.step[1].axis == 1 && p.bytes == 0);
    /* moving a shard from dp to tp never sends more than gathering it all */
    plan_of(&p, "dp=2,tp=2", g, "S(0)@dp", "S(0)@tp");
    CHECK(chained(&p) && p.bytes <= 64);
    plan_of(&p, "dp=2,tp=2", g, "S(0)@dp,S(0)@tp", "S(0)@tp,S(0)@dp");
    CHECK(chained(&p));
    /* MB formatting */
    hp_shape big = hp_shape2(1000, 1000);
    plan_of(&p, "dp=2", big, "S(0)@dp", "R");
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "all-gather(dp, dim 0) 2 MB"));
    hp_shape big2 = hp_shape2(1500, 1000);
    plan_of(&p, "dp=2", big2, "S(0)@dp", "R");
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "all-gather(dp, dim 0) 3 MB"));
    plan_of(&p, "dp=4", big2, "S(0)@dp", "R");
    CHECK(!strcmp(hp_redist_str(buf, sizeof buf, &p), "all-gather(dp, dim 0) 4.5 MB"));
    /* errors */
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "dp=2,tp=2"));
    hp_layout a, b;
    CHECK_OK(hp_layout_parse(&a, "S(2)@dp", &m));
    CHECK_OK(hp_layout_parse(&b, "R", &m));
    CHECK_ERR(hp_redist_plan(&p, &g, &a, &b, &m), "layout 'S(2)@dp,R@tp': tensor 'redistribute source' has 2 dims");
    CHECK_ERR(hp_redist_plan(&p, &g, &b, &a, &m), "tensor 'redistribute target' has 2 dims");
    CHECK_OK(hp_layout_parse(&a, "P(max)@dp,P(sum)@tp", &m));
    CHECK_ERR(hp_redist_plan(&p, &g, &a, &b, &m), "source layout 'P(max)@dp,P(sum)@tp' mixes P(max)");
    /* exhaustive on 2 x 2 x 2 with a 3-D tensor: every plan chains and its cost is the search's */
    hp_mesh m3;
    CHECK_OK(hp_mesh_parse(&m3, "a=2,b=2,c=2"));
    hp_shape g3 = hp_shape3(4, 3, 5);
    const hp_placement pl[] = {hp_replicate(), hp_shard(0), hp_shard(1), hp_shard(2), hp_partial(HP_PARTIAL_SUM)};
    int bad = 0, count = 0;
    for (int f = 0; f < 125; f++)
        for (int t = 0; t < 125; t += 7) {
            hp_layout lf = hp_layout_replicated(&m3), lt = hp_layout_replicated(&m3);
            for (int x = 0, ff = f, tt = t; x < 3; x++, ff /= 5, tt /= 5) {
                lf.p[x] = pl[ff % 5];
                lt.p[x] = pl[tt % 5];
            }
            hp_status st = hp_redist_plan(&p, &g3, &lf, &lt, &m3);
            if (st || !chained(&p)) bad++;
            hp_status_free(st);
            count++;
        }
    CHECK(bad == 0 && count == 125 * 18);
}

int main(void) {
    test_mesh();
    test_layout_text();
    test_chunks();
    test_local_shape();
    test_redist_plans();
    return hp_test_finish("test_layout");
}
