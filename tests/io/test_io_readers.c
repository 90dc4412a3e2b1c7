/* The settings, JSON and llm.c readers against what is not a plain file of
 * their format (issue 22, items 1 and 8): a FIFO and /dev/zero are refused
 * without waiting or reading (the FIFO has no writer: a blocking open would
 * hang here), a settings file over the limit is refused by its size, a UTF-8
 * byte order mark is named, a stray byte in a key is shown as "byte 0x..",
 * and a settings file's repeated key or a JSON object's repeated key is
 * found through an index across its growth. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/config.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/plan_file.h"
#include "io/llmc.h"
#include "layout/plan.h"
#include "testutil.h"

static void test_not_files(void) {
    char dir[] = "/tmp/hp_io_readers_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *fifo = hp_fs_join(dir, "fifo"), *big = hp_fs_join(dir, "big.cfg");
    CHECK(mkfifo(fifo, 0600) == 0);
    hp_config *c = NULL;
    hp_llmc_header h;
    float *w = NULL;
    hp_plan p;
    CHECK_ERR(hp_config_load(&c, fifo), "fifo: not a regular file (a FIFO)");
    CHECK_ERR(hp_config_load(&c, "/dev/zero"), "/dev/zero: not a regular file (a device)");
    CHECK_ERR(hp_llmc_read_header(&h, fifo), "fifo: not a regular file (a FIFO)");
    CHECK_ERR(hp_llmc_read(&h, &w, fifo), "fifo: not a regular file (a FIFO)");
    CHECK_ERR(hp_llmc_read(&h, &w, "/dev/zero"), "/dev/zero: not a regular file (a device)");
    CHECK(w == NULL);
    CHECK_ERR(hp_plan_load(&p, fifo), "fifo: not a regular file (a FIFO)");
    CHECK_ERR(hp_plan_load(&p, "/dev/zero"), "/dev/zero: not a regular file (a device)");
    CHECK_ERR(hp_plan_load(&p, dir), "not a regular file (a directory)");
    /* a sparse file one byte over the limit: refused by its size */
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)HP_CONFIG_MAX_BYTES + 1) == 0);
    if (fd >= 0) close(fd);
    CHECK_ERR(hp_config_load(&c, big), "big.cfg: 16777217 bytes, above the limit of 16777216");
    CHECK(c == NULL);
    free(fifo), free(big);
    CHECK_OK(hp_fs_remove_tree(dir));
}

static void test_bytes(void) {
    hp_config *c = NULL;
    const char *bom = "\xEF\xBB\xBFlr = 1\n";
    CHECK_ERR(hp_config_parse(&c, bom, strlen(bom), "b.cfg"),
              "b.cfg:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF)");
    const char *mid = "lr = 1\nl\xC3\xA9r = 2\n";
    CHECK_ERR(hp_config_parse(&c, mid, strlen(mid), "b.cfg"), "b.cfg:2: invalid byte 0xc3 in key 'l'");
    const char *lead = "\xC3\xA9 = 2\n";
    CHECK_ERR(hp_config_parse(&c, lead, strlen(lead), "b.cfg"), "b.cfg:1: invalid byte 0xc3 in key (keys use");
    const char *quoted = "name = \"caf\xC3\xA9\"  # UTF-8 in a value is a value\n";
    CHECK_OK(hp_config_parse(&c, quoted, strlen(quoted), "b.cfg"));
    if (c) CHECK(c->n == 1 && !strcmp(c->entries[0].value, "caf\xC3\xA9"));
    hp_config_free(c);
    hp_json *j = NULL;
    const char *jb = "\xEF\xBB\xBF{\"a\": 1}";
    CHECK_ERR(hp_json_parse(&j, jb, strlen(jb)), "json: offset 0: the text starts with a UTF-8 byte order mark");
    CHECK(j == NULL);
}

static void test_key_index(void) {
    const int sizes[] = {1, 31, 32, 33, 64, 65, 1000, 5000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        size_t cap = 64 + (size_t)n * 24;
        char *t = malloc(cap);
        size_t k = 0;
        for (int i = 0; i < n; i++) k += (size_t)snprintf(t + k, cap - k, "k%d = %d\n", i, i);
        hp_config *c = NULL;
        CHECK_OK(hp_config_parse(&c, t, k, "f.cfg"));
        if (c) {
            CHECK(c->n == n);
            for (int i = 0; i < n; i += 1 + n / 50) {
                char key[32];
                snprintf(key, sizeof key, "k%d", i);
                const hp_config_entry *e = hp_config_find(c, key);
                CHECKF(e && e->line == i + 1, "n=%d key %s", n, key);
            }
        }
        hp_config_free(c);
        const int at[] = {0, n / 2, n - 1};
        for (int r = 0; r < 3; r++) {
            size_t m = k + (size_t)snprintf(t + k, cap - k, "k%d = again\n", at[r]);
            char want[96];
            snprintf(want, sizeof want, "f.cfg:%d: key 'k%d' given twice (first on line %d)", n + 1, at[r], at[r] + 1);
            CHECK_ERR(hp_config_parse(&c, t, m, "f.cfg"), want);
        }
        free(t);
    }
}

/* JSON objects: the duplicate-key check goes through an index past 16 keys;
 * across its growth every duplicate is found at its offset, and a tree
 * without duplicates keeps every key in order (an inner object indexed apart). */
static void test_json_keys(void) {
    const int sizes[] = {1, 15, 16, 17, 63, 64, 65, 1000, 5000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        size_t cap = 64 + (size_t)n * 40;
        char *t = malloc(cap);
        size_t k = (size_t)snprintf(t, cap, "{");
        for (int i = 0; i < n; i++) k += (size_t)snprintf(t + k, cap - k, "%s\"k%d\": {\"k%d\": %d}", i ? ", " : "", i, i, i);
        hp_json *j = NULL;
        snprintf(t + k, cap - k, "}");
        CHECK_OK(hp_json_parse(&j, t, k + 1));
        if (j) {
            CHECK(j->type == HP_JSON_OBJECT && j->n == n);
            for (int i = 0; i < j->n; i++) {
                char key[32];
                snprintf(key, sizeof key, "k%d", i);
                const hp_json *in = hp_json_get(j, key);
                CHECKF(!strcmp(j->keys[i], key) && in && hp_json_get(in, key) &&
                           hp_json_get(in, key)->number == i,
                       "n=%d key %s", n, key);
            }
        }
        hp_json_free(j);
        const int at[] = {0, n / 2, n - 1};
        for (int r = 0; r < 3; r++) {
            size_t m = k + (size_t)snprintf(t + k, cap - k, ", \"k%d\": 0}", at[r]);
            char want[96];
            snprintf(want, sizeof want, "json: offset %zu: duplicate key \"k%d\"", k + 2, at[r]);
            CHECK_ERR(hp_json_parse(&j, t, m), want);
        }
        free(t);
    }
}

int main(void) {
    test_not_files();
    test_bytes();
    test_key_index();
    test_json_keys();
    return hp_test_finish("test_io_readers");
}
