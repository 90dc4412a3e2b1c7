/* llm.c token shards written by io/shard_write: shards of at most
 * shard_tokens tokens, named PREFIX_SPLIT_NNNNNN.bin, with the header io/data
 * reads (magic, version, count) and the tokens as uint16; nothing temporary
 * stays behind; ids that do not fit uint16 are refused. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/data.h"
#include "io/fsutil.h"
#include "io/shard_write.h"
#include "io_testutil.h"
#include "testutil.h"

/* Shard `index` holds the header and tokens want[0..n). */
static void check_shard(const char *dir, int index, const int32_t *want, int n) {
    char *p = hp_shard_name(dir, "x", "train", index);
    char *data;
    size_t len;
    CHECK_OK(hp_fs_read_all(&data, &len, p));
    size_t hb = HP_DATA_HEADER_INTS * sizeof(int32_t);
    CHECKF(len == hb + 2 * (size_t)n, "%s: %zu bytes", p, len);
    if (len == hb + 2 * (size_t)n) {
        int32_t h[3];
        memcpy(h, data, sizeof h);
        CHECK(h[0] == HP_DATA_MAGIC && h[1] == HP_DATA_VERSION && h[2] == n);
        for (int i = 0; i < n; i++) {
            uint16_t t;
            memcpy(&t, data + hb + 2 * (size_t)i, 2);
            CHECKF(t == want[i], "%s: token %d is %u, want %d", p, i, t, want[i]);
        }
    }
    free(data);
    free(p);
}

int main(void) {
    char dir[] = "/tmp/hp_io_shardw_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *name = hp_shard_name(dir, "x", "train", 12);
    CHECK(strstr(name, "/x_train_000012.bin") != NULL);
    free(name);

    const int32_t ids[7] = {50256, 0, 1, 65535, 7, 8, 9};
    hp_shard_writer w;
    CHECK_OK(hp_shard_writer_open(&w, dir, "x", "train", 3));
    CHECK(count_entries(dir) == 0); /* nothing before the first token */
    CHECK_OK(hp_shard_writer_put(&w, ids, 2));
    CHECK_OK(hp_shard_writer_put(&w, ids + 2, 5));
    CHECK(w.total == 7 && w.shards == 2);
    CHECK_OK(hp_shard_writer_close(&w));
    CHECK(count_entries(dir) == 3);
    check_shard(dir, 0, ids, 3);
    check_shard(dir, 1, ids + 3, 3);
    check_shard(dir, 2, ids + 6, 1);

    /* a full last shard leaves no empty one after it; an empty writer writes nothing */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/two", dir);
    CHECK_OK(hp_fs_mkdir_p(sub));
    CHECK_OK(hp_shard_writer_open(&w, sub, "x", "train", 3));
    CHECK_OK(hp_shard_writer_put(&w, ids, 6));
    CHECK_OK(hp_shard_writer_close(&w));
    CHECK(count_entries(sub) == 2);
    CHECK_OK(hp_shard_writer_open(&w, sub, "x", "val", 3));
    CHECK_OK(hp_shard_writer_close(&w));
    CHECK(count_entries(sub) == 2);

    /* errors: an id over 65535 (the open shard is removed by abort), a bad size */
    snprintf(sub, sizeof sub, "%s/bad", dir);
    CHECK_OK(hp_fs_mkdir_p(sub));
    CHECK_OK(hp_shard_writer_open(&w, sub, "x", "train", 100));
    const int32_t big[2] = {1, 65536};
    CHECK_ERR(hp_shard_writer_put(&w, big, 2), "token id 65536 does not fit");
    hp_shard_writer_abort(&w);
    CHECK(count_entries(sub) == 0);
    CHECK_ERR(hp_shard_writer_open(&w, sub, "x", "train", 0), "tokens per shard");

    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_io_shard_write");
}
