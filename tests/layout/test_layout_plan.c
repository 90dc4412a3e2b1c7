/* Sharding plans: parsing (comments, blanks, first match wins, unmatched
 * names Replicate), print / parse round trips, loading from a file, the C API,
 * every error message, and the built-in GPT-2 DP x TP plan. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout/plan.h"
#include "io/plan_file.h"
#include "models/gpt2_plan.h"
#include "testutil.h"

/* The layout of `name` printed in text form ("" on error). */
static const char *layout_of(char *buf, size_t n, const hp_plan *p, const char *name, int is_input, int ndim) {
    hp_layout l;
    hp_status st = hp_plan_layout_of(&l, p, name, is_input, ndim);
    if (st) {
        fprintf(stderr, "layout_of(%s): %s\n", name, hp_status_msg(st));
        hp_status_free(st);
        buf[0] = 0;
        return buf;
    }
    return hp_layout_str(buf, n, &l, &p->mesh);
}

static int same_plan(const hp_plan *a, const hp_plan *b) {
    if (a->mesh.ndim != b->mesh.ndim || a->nparams != b->nparams || a->ninputs != b->ninputs) return 0;
    for (int i = 0; i < a->mesh.ndim; i++)
        if (a->mesh.size[i] != b->mesh.size[i] || strcmp(a->mesh.name[i], b->mesh.name[i])) return 0;
    for (int i = 0; i < a->nparams; i++)
        if (strcmp(a->params[i].pattern, b->params[i].pattern) || !hp_layout_eq(&a->params[i].layout, &b->params[i].layout))
            return 0;
    for (int i = 0; i < a->ninputs; i++)
        if (strcmp(a->inputs[i].pattern, b->inputs[i].pattern) || !hp_layout_eq(&a->inputs[i].layout, &b->inputs[i].layout))
            return 0;
    return 1;
}

/* Prints p, parses it back, and checks both agree. */
static void round_trip(const hp_plan *p) {
    size_t n = hp_plan_str_size(p);
    char *text = malloc(n);
    hp_plan_str(text, n, p);
    CHECK(strlen(text) + 1 == n);
    hp_plan q;
    CHECK_OK(hp_plan_parse(&q, text, "printed"));
    CHECK(same_plan(p, &q));
    char *again = malloc(n);
    hp_plan_str(again, n, &q);
    CHECK(!strcmp(text, again));
    free(again);
    free(text);
    hp_plan_free(&q);
}

static const char *const PLAN =
    "# a test plan\n"
    "\n"
    "mesh: dp=2, tp=2   # two axes\n"
    "input tokens: S(0)@dp\n"
    "  input  targets :S(0)@dp,R@tp\r\n"
    "param h.*.attn.qkv.weight: S(1)@tp\n"
    "param h.0.*: P(sum)@dp\n"       /* never reached for qkv.weight: the rule above wins */
    "param h.*.mlp.fc.*: S(0)@tp\n"
    "param wte: R\n";

static void test_parse(void) {
    hp_plan p;
    char b[128];
    CHECK_OK(hp_plan_parse(&p, PLAN, "test.plan"));
    CHECK(p.mesh.ndim == 2 && p.nparams == 4 && p.ninputs == 2);
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "tokens", 1, 2), "S(0)@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "targets", 1, 2), "S(0)@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.0.attn.qkv.weight", 0, 3), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.11.attn.qkv.weight", 0, 3), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.0.attn.proj.weight", 0, 2), "P(sum)@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.1.attn.proj.weight", 0, 2), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.1.mlp.fc.bias", 0, 1), "R@dp,S(0)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "wte", 0, 2), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "lnf.weight", 0, 1), "R@dp,R@tp"));
    /* params and inputs are separate namespaces */
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "tokens", 0, 2), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "wte", 1, 2), "R@dp,R@tp"));
    round_trip(&p);
    size_t n = hp_plan_str_size(&p);
    char *text = malloc(n);
    CHECK(!strcmp(hp_plan_str(text, n, &p),
                  "mesh: dp=2,tp=2\n"
                  "input tokens: S(0)@dp,R@tp\n"
                  "input targets: S(0)@dp,R@tp\n"
                  "param h.*.attn.qkv.weight: R@dp,S(1)@tp\n"
                  "param h.0.*: P(sum)@dp,R@tp\n"
                  "param h.*.mlp.fc.*: R@dp,S(0)@tp\n"
                  "param wte: R@dp,R@tp\n"));
    /* a short buffer is cut, never overrun */
    char small[20];
    memset(small, 'x', sizeof small);
    hp_plan_str(small, 10, &p);
    CHECK(strlen(small) == 9 && small[10] == 'x');
    free(text);
    /* a rank mismatch names the rule, the layout and the tensor */
    hp_plan q;
    CHECK_OK(hp_plan_parse(&q, "mesh: dp=2\nparam h.*.mlp.fc.weight: S(3)@dp\n", "bad.plan"));
    hp_layout l;
    CHECK_ERR(hp_plan_layout_of(&l, &q, "h.0.mlp.fc.weight", 0, 2),
              "bad.plan:2: param 'h.*.mlp.fc.weight': layout 'S(3)@dp': tensor 'h.0.mlp.fc.weight' has 2 dims");
    CHECK_OK(hp_plan_layout_of(&l, &q, "h.0.mlp.fc.bias", 0, 1));
    hp_plan_free(&q);
    hp_plan_free(&p);
    hp_plan_free(&p); /* freeing twice is harmless */
}

static void test_errors(void) {
    hp_plan p;
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam x: S(0)@dp\nfoo bar: R\n", "t.plan"),
              "t.plan:3: unknown entry 'foo bar: R' (expected 'mesh:', 'param', 'input', 'fsdp:', 'unit', 'remat:' or "
              "'pipeline:')");
    CHECK_ERR(hp_plan_parse(&p, "# nothing\nparam x: R\n", "t.plan"), "t.plan:2: 'param' before the 'mesh:' line");
    CHECK_ERR(hp_plan_parse(&p, "# only comments\n\n", "t.plan"), "t.plan: no 'mesh:' line");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nmesh: dp=2\n", "t.plan"), "t.plan:2: mesh given twice");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=0\n", "t.plan"), "t.plan:1: mesh 'dp=0': axis 'dp' size must be >= 1");
    CHECK_ERR(hp_plan_parse(&p, "mesh dp=2\n", "t.plan"), "t.plan:1: 'mesh' entry has no ':'");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\n\nparam x: S(0)@pp\n", "t.plan"),
              "t.plan:3: param 'x': layout 'S(0)@pp': unknown axis 'pp' (mesh dp=2)");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\ninput tokens: Q@dp\n", "t.plan"),
              "t.plan:2: input 'tokens': layout 'Q@dp': bad placement 'Q'");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam : R\n", "t.plan"), "t.plan:2: 'param' entry has no name pattern");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam wte:\n", "t.plan"), "t.plan:2: param 'wte' has no layout");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam a b: R\n", "t.plan"), "t.plan:2: param pattern 'a b' contains ' '");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam w: S(5)@dp\n", "t.plan"),
              "t.plan:2: param 'w': layout 'S(5)@dp': shard dim 5 is out of range (tensors have at most 4 dims)");
    CHECK_ERR(hp_plan_parse(&p, "mesh: dp=2\nparam wte: R\nparam wte: S(0)@dp\n", "t.plan"),
              "t.plan:3: param 'wte' repeats the rule at t.plan:2");
    CHECK_ERR(hp_plan_load(&p, "/nonexistent/dir/x.plan"), "/nonexistent/dir/x.plan: cannot open");
    /* a line has no length limit (a plan printed with every axis named parses back); a pattern has one */
    {
        char text[4200], pat[1100];
        memset(pat, 'x', 1020), pat[1020] = 0;
        snprintf(text, sizeof text, "mesh: dp=2,tp=2,pp=2\nparam %s:R\n", pat);
        CHECK_OK(hp_plan_parse(&p, text, "t.plan"));
        char printed[4200];
        hp_plan_str(printed, sizeof printed, &p);
        CHECK(strlen(printed) > strlen(text)); /* "R@dp,R@tp,R@pp" */
        hp_plan q;
        CHECK_OK(hp_plan_parse(&q, printed, "printed"));
        CHECK(q.nparams == 1 && !strcmp(q.params[0].pattern, pat));
        hp_plan_free(&q), hp_plan_free(&p);
        memset(pat, 'x', 1024), pat[1024] = 0;
        snprintf(text, sizeof text, "mesh: dp=2\nparam %s: R\n", pat);
        CHECK_ERR(hp_plan_parse(&p, text, "t.plan"), "t.plan:2: param pattern 'xxxxxxxx");
        CHECK_ERR(hp_plan_parse(&p, text, "t.plan"), "...' is longer than 1023 characters");
    }
    /* the C API */
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "dp=2"));
    hp_plan_init(&p, &m);
    CHECK_ERR(hp_plan_add_param_str(&p, "x", "S(0)@tp"), "plan: param 'x': layout 'S(0)@tp': unknown axis 'tp'");
    CHECK_ERR(hp_plan_add_param_str(&p, "", "R"), "empty pattern");
    hp_mesh m2;
    CHECK_OK(hp_mesh_parse(&m2, "dp=2,tp=2"));
    hp_layout l2 = hp_layout_replicated(&m2);
    CHECK_ERR(hp_plan_add_input(&p, "tokens", &l2), "layout has 2 placements but mesh 'dp=2' has 1 axes");
    CHECK(p.nparams == 0 && p.ninputs == 0);
    hp_plan_free(&p);
}

static void test_api_and_load(void) {
    hp_mesh m;
    CHECK_OK(hp_mesh_parse(&m, "node=2,die=4"));
    hp_plan p;
    hp_plan_init(&p, &m);
    hp_layout l;
    CHECK_OK(hp_layout_parse(&l, "S(0)@node,S(0)@die", &m));
    CHECK_OK(hp_plan_add_param(&p, "*.weight", &l));
    CHECK_OK(hp_plan_add_param_str(&p, "*", "P(avg)@die"));
    CHECK_OK(hp_plan_add_input_str(&p, "tok?ns", "S(1)@node"));
    char b[128];
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "a.weight", 0, 2), "S(0)@node,S(0)@die"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "a.bias", 0, 1), "R@node,P(avg)@die"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "tokens", 1, 2), "S(1)@node,R@die"));
    CHECK(!strcmp(p.params[0].where, "api"));
    round_trip(&p);
    /* through a file */
    char path[] = "/tmp/hp_test_plan_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        size_t n = hp_plan_str_size(&p);
        char *text = malloc(n);
        hp_plan_str(text, n, &p);
        CHECK(write(fd, text, n - 1) == (ssize_t)(n - 1));
        close(fd);
        hp_plan q;
        CHECK_OK(hp_plan_load(&q, path));
        CHECK(same_plan(&p, &q));
        if (q.nparams == 2) CHECK(!strncmp(q.params[1].where, path, strlen(path)) && strstr(q.params[1].where, ":4"));
        hp_plan_free(&q);
        /* an error in a loaded file names the path and line */
        FILE *f = fopen(path, "w");
        fputs("mesh: dp=2\n# comment\nparam w: S(0)@tp\n", f);
        fclose(f);
        hp_status st = hp_plan_load(&q, path);
        CHECK(st && !strncmp(hp_status_msg(st), path, strlen(path)) && strstr(hp_status_msg(st), ":3: param 'w'"));
        hp_status_free(st);
        free(text);
        unlink(path);
    }
    hp_plan_free(&p);
}

static void test_gpt2(void) {
    hp_plan p;
    char b[128];
    CHECK_OK(hp_plan_gpt2_dp_tp(&p, 2, 2));
    CHECK(!strcmp(hp_mesh_str(b, sizeof b, &p.mesh), "dp=2,tp=2"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "tokens", 1, 2), "S(0)@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "targets", 1, 2), "S(0)@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.3.attn.qkv.weight", 0, 3), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.0.attn.qkv.bias", 0, 2), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.0.attn.proj.weight", 0, 2), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.0.attn.proj.bias", 0, 1), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.1.mlp.fc.weight", 0, 2), "R@dp,S(0)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.1.mlp.fc.bias", 0, 1), "R@dp,S(0)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.11.mlp.proj.weight", 0, 2), "R@dp,S(1)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.11.mlp.proj.bias", 0, 1), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "wte", 0, 2), "R@dp,S(0)@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "wpe", 0, 2), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "h.2.ln1.weight", 0, 1), "R@dp,R@tp"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "lnf.bias", 0, 1), "R@dp,R@tp"));
    round_trip(&p);
    hp_plan_free(&p);
    CHECK_OK(hp_plan_gpt2_dp_tp(&p, 4, 1)); /* a size-1 axis stays */
    CHECK(!strcmp(hp_mesh_str(b, sizeof b, &p.mesh), "dp=4,tp=1"));
    CHECK(!strcmp(layout_of(b, sizeof b, &p, "wte", 0, 2), "R@dp,S(0)@tp"));
    hp_plan_free(&p);
    /* the example in src/layout/README.md is this plan */
    static const char *const readme =
        "    # GPT-2 on 2 x 2: data x Megatron tensor parallel\n"
        "    mesh: dp=2,tp=2\n"
        "    input tokens: S(0)@dp\n"
        "    input targets: S(0)@dp\n"
        "    param h.*.attn.qkv.weight: S(1)@tp     # [3, C, C]: split the heads\n"
        "    param h.*.attn.qkv.bias: S(1)@tp       # [3, C]\n"
        "    param h.*.attn.proj.weight: S(1)@tp    # [C, C]: row parallel (its bias stays R)\n"
        "    param h.*.mlp.fc.weight: S(0)@tp       # [4C, C]: column parallel\n"
        "    param h.*.mlp.fc.bias: S(0)@tp\n"
        "    param h.*.mlp.proj.weight: S(1)@tp     # [C, 4C]: row parallel\n"
        "    param wte: S(0)@tp                     # [Vp, C]: vocabulary-parallel embedding and LM head\n";
    hp_plan doc;
    CHECK_OK(hp_plan_parse(&doc, readme, "README.md"));
    CHECK_OK(hp_plan_gpt2_dp_tp(&p, 2, 2));
    CHECK(same_plan(&doc, &p));
    hp_plan_free(&doc);
    hp_plan_free(&p);
    CHECK_ERR(hp_plan_gpt2_dp_tp(&p, 0, 2), "gpt2 plan: dp must be >= 1 (got 0)");
    CHECK_ERR(hp_plan_gpt2_dp_tp(&p, 2, -1), "gpt2 plan: tp must be >= 1 (got -1)");
}

int main(void) {
    test_parse();
    test_errors();
    test_api_and_load();
    test_gpt2();
    return hp_test_finish("test_layout_plan");
}
