/* JSON: the writer's exact text, doubles that round-trip, the parser's tree,
 * and parse errors that name the offset. */
#include <float.h>
#include <stdint.h>

#include "io/json.h"
#include "testutil.h"

static char *build_sample(void) {
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_object_begin(&w);
    hp_jw_key(&w, "step");
    hp_jw_int(&w, 42);
    hp_jw_key(&w, "lr");
    hp_jw_double(&w, 0.1);
    hp_jw_key(&w, "name");
    hp_jw_string(&w, "a\"b\\c\n\x01");
    hp_jw_key(&w, "list");
    hp_jw_array_begin(&w);
    hp_jw_int(&w, -1);
    hp_jw_bool(&w, 1);
    hp_jw_null(&w);
    hp_jw_array_begin(&w);
    hp_jw_array_end(&w);
    hp_jw_object_begin(&w);
    hp_jw_object_end(&w);
    hp_jw_array_end(&w);
    hp_jw_key(&w, "nan");
    hp_jw_double(&w, NAN);
    hp_jw_object_end(&w);
    char *s;
    size_t n;
    CHECK_OK(hp_jw_finish(&s, &n, &w));
    CHECK(s && n == strlen(s));
    return s;
}

static void test_writer(void) {
    char *s = build_sample();
    CHECK(!strcmp(s, "{\"step\":42,\"lr\":0.1,\"name\":\"a\\\"b\\\\c\\n\\u0001\",\"list\":[-1,true,null,[],{}],"
                     "\"nan\":null}"));
    hp_json *j;
    CHECK_OK(hp_json_parse(&j, s, strlen(s)));
    int64_t step = 0;
    CHECK_OK(hp_json_get_int(&step, j, "step"));
    CHECK(step == 42);
    const char *name = NULL;
    CHECK_OK(hp_json_get_string(&name, j, "name"));
    CHECK(name && !strcmp(name, "a\"b\\c\n\x01"));
    const hp_json *list = hp_json_get(j, "list");
    CHECK(list && list->type == HP_JSON_ARRAY && list->n == 5);
    if (list && list->n == 5) {
        CHECK(list->items[0].is_int && list->items[0].ival == -1);
        CHECK(list->items[1].type == HP_JSON_BOOL && list->items[1].boolean == 1);
        CHECK(list->items[2].type == HP_JSON_NULL);
        CHECK(list->items[3].type == HP_JSON_ARRAY && list->items[3].n == 0);
        CHECK(list->items[4].type == HP_JSON_OBJECT && list->items[4].n == 0);
    }
    CHECK(hp_json_get(j, "missing") == NULL);
    CHECK_ERR(hp_json_get_int(&step, j, "lr"), "key 'lr': expected an integer");
    CHECK_ERR(hp_json_get_int(&step, j, "nope"), "missing key 'nope'");
    CHECK_ERR(hp_json_get_string(&name, j, "step"), "key 'step': expected a string, got a number");
    hp_json_free(j);
    free(s);

    /* an incomplete value is reported, not returned */
    hp_jw w;
    hp_jw_init(&w);
    hp_jw_array_begin(&w);
    hp_jw_int(&w, 1);
    char *t;
    CHECK_ERR(hp_jw_finish(&t, NULL, &w), "incomplete");
    CHECK(t == NULL);
}

static void test_doubles_round_trip(void) {
    double vals[] = {0.0, -0.0, 0.1, 1.0 / 3.0, 1e-300, 5e-324, DBL_MAX, -123456789.125, 6e23, 2.5e-7, 1e21};
    hp_test_rng r = {12345};
    for (int k = 0; k < 1000 + (int)(sizeof vals / sizeof vals[0]); k++) {
        double v;
        if (k < (int)(sizeof vals / sizeof vals[0]))
            v = vals[k];
        else
            v = hp_test_normal(&r) * pow(10.0, (double)((int)(hp_test_uniform(&r) * 60) - 30));
        hp_jw w;
        hp_jw_init(&w);
        hp_jw_double(&w, v);
        char *s;
        CHECK_OK(hp_jw_finish(&s, NULL, &w));
        hp_json *j;
        CHECK_OK(hp_json_parse(&j, s, strlen(s)));
        CHECK(j->type == HP_JSON_NUMBER && memcmp(&j->number, &v, sizeof v) == 0);
        if (!(j->type == HP_JSON_NUMBER && memcmp(&j->number, &v, sizeof v) == 0))
            fprintf(stderr, "  value %.17g written as %s\n", v, s);
        hp_json_free(j);
        free(s);
    }
}

static void test_parser(void) {
    const char *txt = " { \"a\" : [1, 2.5e3, -0, \"x\\u00e9\\ud83d\\ude00\\/\"], \"b\": {\"c\": false},"
                      " \"big\": 12345678901234567890, \"i\": -9007199254740993 } \n";
    hp_json *j;
    CHECK_OK(hp_json_parse(&j, txt, strlen(txt)));
    const hp_json *a = hp_json_get(j, "a");
    CHECK(a && a->n == 4);
    if (a && a->n == 4) {
        CHECK(a->items[0].is_int && a->items[0].ival == 1);
        CHECK(!a->items[1].is_int && a->items[1].number == 2500.0);
        CHECK(a->items[3].type == HP_JSON_STRING && a->items[3].len == 8 &&
              !memcmp(a->items[3].str, "x\xc3\xa9\xf0\x9f\x98\x80/", 8));
    }
    const hp_json *c = hp_json_get(hp_json_get(j, "b"), "c");
    CHECK(c && c->type == HP_JSON_BOOL && c->boolean == 0);
    const hp_json *big = hp_json_get(j, "big");
    CHECK(big && !big->is_int && big->number > 1.2e19);
    int64_t i;
    CHECK_OK(hp_json_get_int(&i, j, "i"));
    CHECK(i == -9007199254740993LL); /* exact, beyond double precision */
    CHECK(j->keys && !strcmp(j->keys[0], "a") && !strcmp(j->keys[3], "i"));
    hp_json_free(j);

    /* a string holding NUL via \u0000 keeps its length */
    CHECK_OK(hp_json_parse(&j, "\"a\\u0000b\"", 10));
    CHECK(j->len == 3 && j->str[1] == 0 && j->str[2] == 'b');
    hp_json_free(j);
}

static void expect_error(const char *txt, const char *needle) {
    hp_json *j = (hp_json *)1;
    CHECK_ERR(hp_json_parse(&j, txt, strlen(txt)), needle);
    CHECK(j == NULL);
}

static void test_errors(void) {
    expect_error("{\"a\":1,}", "offset 7: expected a string key");
    expect_error("[1 2]", "offset 3: expected ',' or ']'");
    expect_error("{\"a\" 1}", "offset 5: expected ':'");
    expect_error("\"abc", "offset 0: unterminated string");
    expect_error("{\"a\":1,\"a\":2}", "offset 7: duplicate key \"a\"");
    expect_error("[1] x", "offset 4: unexpected text after the value");
    expect_error("", "offset 0: expected a value");
    expect_error("tru", "offset 0: expected a value");
    expect_error("01", "offset 1: unexpected text");
    expect_error("1.", "offset 2: expected a digit after '.'");
    expect_error("-", "offset 1: expected a digit");
    expect_error("1e999", "out of range");
    expect_error("\"\\x\"", "offset 2: invalid escape");
    expect_error("\"\\ud800\"", "lone high surrogate");
    expect_error("\"a\tb\"", "offset 2: control character");
    char deep[600];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    deep[599] = 0; /* unbalanced as well as deep: the depth limit comes first */
    expect_error(deep, "nesting too deep");
}

int main(void) {
    test_writer();
    test_doubles_round_trip();
    test_parser();
    test_errors();
    return hp_test_finish("test_io_json");
}
