/* Config files: entries with their lines, quoting and comments, and errors
 * of the form FILE:LINE: problem. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/config.h"
#include "io/fsutil.h"
#include "testutil.h"

static void test_parse(void) {
    const char *txt = "# a comment\n"
                      "\n"
                      "model = gpt2-small   # trailing comment\n"
                      "  lr=6e-4\n"
                      "steps = 1000\n"
                      "name = \"run #1 \\\"x\\\"\"  # comment\n"
                      "data.path = /tmp/a_b-c.bin\n"
                      "flag = on\r\n"
                      "empty = \"\"";
    hp_config *c;
    CHECK_OK(hp_config_parse(&c, txt, strlen(txt), "cfg.txt"));
    if (!c) return;
    CHECK(c->n == 7);
    const hp_config_entry *e = hp_config_find(c, "model");
    CHECK(e && !strcmp(e->value, "gpt2-small") && e->line == 3 && !e->quoted && !strcmp(e->file, "cfg.txt"));
    e = hp_config_find(c, "lr");
    double lr = 0;
    CHECK(e && e->line == 4);
    if (e) CHECK_OK(hp_config_double(&lr, e));
    CHECK(lr == 6e-4);
    int64_t steps = 0;
    e = hp_config_find(c, "steps");
    if (e) CHECK_OK(hp_config_int(&steps, e));
    CHECK(steps == 1000);
    e = hp_config_find(c, "name");
    CHECK(e && e->quoted && !strcmp(e->value, "run #1 \"x\""));
    e = hp_config_find(c, "data.path");
    CHECK(e && !strcmp(e->value, "/tmp/a_b-c.bin"));
    int flag = 0;
    e = hp_config_find(c, "flag");
    CHECK(e && !strcmp(e->value, "on"));
    if (e) CHECK_OK(hp_config_bool(&flag, e));
    CHECK(flag == 1);
    e = hp_config_find(c, "empty");
    CHECK(e && e->quoted && e->value[0] == 0 && e->line == 9);
    CHECK(hp_config_find(c, "nope") == NULL);
    CHECK(!strcmp(c->entries[0].key, "model") && !strcmp(c->entries[6].key, "empty")); /* file order */

    /* typed errors name file, line and key */
    e = hp_config_find(c, "model");
    CHECK_ERR(hp_config_double(&lr, e), "cfg.txt:3: key 'model': expected a number, got 'gpt2-small'");
    CHECK_ERR(hp_config_int(&steps, hp_config_find(c, "lr")), "cfg.txt:4: key 'lr': expected an integer, got '6e-4'");
    CHECK_ERR(hp_config_bool(&flag, e), "cfg.txt:3: key 'model': expected true or false");
    hp_config_free(c);

    const char *bad = "lr = abc\n";
    CHECK_OK(hp_config_parse(&c, bad, strlen(bad), "cfg.txt"));
    CHECK_ERR(hp_config_double(&lr, &c->entries[0]), "cfg.txt:1: key 'lr': expected a number, got 'abc'");
    hp_config_free(c);
    const char *big = "n = 99999999999999999999\nx = 1e999\n";
    CHECK_OK(hp_config_parse(&c, big, strlen(big), "big.cfg"));
    CHECK_ERR(hp_config_int(&steps, &c->entries[0]), "big.cfg:1: key 'n': integer '99999999999999999999' is out of range");
    CHECK_ERR(hp_config_double(&lr, &c->entries[1]), "big.cfg:2: key 'x': number '1e999' is out of range");
    hp_config_free(c);
}

static void expect_error(const char *txt, const char *needle) {
    hp_config *c = (hp_config *)1;
    CHECK_ERR(hp_config_parse(&c, txt, strlen(txt), "f.cfg"), needle);
    CHECK(c == NULL);
}

static void test_errors(void) {
    expect_error("a = 1\nb 2\n", "f.cfg:2: expected 'key = value', got 'b 2'");
    expect_error("a = 1\n\n = 2\n", "f.cfg:3: missing key before '='");
    expect_error("lr: 3\n", "f.cfg:1: invalid character ':' in key 'lr'");
    expect_error("a b = 3\n", "f.cfg:1: expected 'key = value'");
    expect_error("k$ = 3\n", "f.cfg:1: invalid character '$' in key 'k'");
    expect_error("x = \n", "f.cfg:1: key 'x': missing value");
    expect_error("x = # nothing\n", "f.cfg:1: key 'x': missing value");
    expect_error("x = \"abc\n", "f.cfg:1: key 'x': unterminated quoted value");
    expect_error("x = \"a\" b\n", "f.cfg:1: key 'x': unexpected text after the closing quote");
    expect_error("x = \"a\\q\"\n", "f.cfg:1: key 'x': unknown escape '\\q'");
    expect_error("a = 1\n# c\na = 2\n", "f.cfg:3: key 'a' given twice (first on line 1)");
    expect_error("=\n", "f.cfg:1: missing key");
}

static void test_load(void) {
    char dir[] = "/tmp/hp_io_cfg_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *p = hp_fs_join(dir, "train.cfg");
    const char *txt = "batch = 8\nseq=64\n";
    CHECK_OK(hp_fs_write_atomic(p, txt, strlen(txt)));
    hp_config *c;
    CHECK_OK(hp_config_load(&c, p));
    if (c) {
        CHECK(c->n == 2 && !strcmp(c->entries[1].key, "seq") && !strcmp(c->entries[1].value, "64"));
        CHECK(!strcmp(c->entries[1].file, p));
        hp_config_free(c);
    }
    const char *bad = "batch = 8\nseq 64\n";
    CHECK_OK(hp_fs_write_atomic(p, bad, strlen(bad)));
    char want[256];
    snprintf(want, sizeof want, "%s:2: expected 'key = value'", p);
    CHECK_ERR(hp_config_load(&c, p), want);
    char *missing = hp_fs_join(dir, "missing.cfg");
    CHECK_ERR(hp_config_load(&c, missing), "missing.cfg: cannot open: No such file");
    free(missing);
    free(p);
    CHECK_OK(hp_fs_remove_tree(dir));
}

int main(void) {
    test_parse();
    test_errors();
    test_load();
    return hp_test_finish("test_io_config");
}
