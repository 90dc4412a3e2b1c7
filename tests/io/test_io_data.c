/* Token data: batches hold the right tokens across shard boundaries, are
 * deterministic for a seed, resume exactly from a saved state, split train
 * and validation without overlap, and bad input gives errors naming the
 * file. Token values equal their position in the stream, so every batch can
 * be checked exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/data.h"
#include "io/fsutil.h"
#include "testutil.h"

enum { B = 2, T = 8, BT = B * T, NTOK = 3000 };

/* A shard holding tokens first, first+1, ..., first+n-1; header count `count`
 * (normally n). */
static void write_shard(const char *dir, const char *name, int first, int n, int count, int magic) {
    int32_t h[256] = {0};
    h[0] = magic;
    h[1] = 1;
    h[2] = count;
    size_t bytes = sizeof h + (size_t)n * 2;
    char *buf = malloc(bytes);
    memcpy(buf, h, sizeof h);
    uint16_t *t = (uint16_t *)(void *)(buf + sizeof h);
    for (int i = 0; i < n; i++) t[i] = (uint16_t)(first + i);
    char *p = hp_fs_join(dir, name);
    CHECK_OK(hp_fs_write_atomic(p, buf, bytes));
    free(p);
    free(buf);
}

static hp_data_config base_cfg(const char *path) {
    hp_data_config c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.kind = HP_DATA_AUTO;
    c.vocab = 65536;
    c.B = B;
    c.T = T;
    return c;
}

/* inputs are consecutive values starting at the returned one, targets the
 * same shifted by one; -1 if not. */
static int batch_start(const int32_t *in, const int32_t *tg) {
    for (int k = 0; k < BT; k++)
        if (in[k] != in[0] + k || tg[k] != in[0] + k + 1) return -1;
    return in[0];
}

static void test_sequential(const char *glob) {
    hp_data_config c = base_cfg(glob);
    hp_data *d;
    CHECK_OK(hp_data_open(&d, &c));
    if (!d) return;
    CHECK(hp_data_num_tokens(d) == NTOK);
    int32_t in[BT], tg[BT];
    int64_t spe = hp_data_steps_per_epoch(d);
    CHECK(spe == (NTOK - 1) / BT);
    int ok = 1;
    for (int64_t s = 0; s < spe; s++) {
        CHECK_OK(hp_data_next(d, in, tg));
        if (batch_start(in, tg) != s * BT) ok = 0; /* includes batches across shard ends (992..1008) */
    }
    CHECK(ok);
    hp_data_state st;
    hp_data_get_state(d, &st);
    CHECK(st.epoch == 1 && st.position == 0 && st.n_tokens == NTOK);
    CHECK_OK(hp_data_next(d, in, tg));
    CHECK(batch_start(in, tg) == 0);
    hp_data_rewind(d);
    hp_data_get_state(d, &st);
    CHECK(st.epoch == 0 && st.position == 0);
    hp_data_close(d);

    /* a seed moves the first batch to a seeded offset; still consecutive */
    c.seed = 1234;
    CHECK_OK(hp_data_open(&d, &c));
    CHECK_OK(hp_data_next(d, in, tg));
    int s0 = batch_start(in, tg);
    CHECK(s0 > 0 && s0 < NTOK - BT);
    CHECK_OK(hp_data_next(d, in, tg));
    CHECK(batch_start(in, tg) == s0 + BT);
    hp_data_close(d);
}

static void test_shuffle(const char *glob) {
    hp_data_config c = base_cfg(glob);
    c.order = HP_DATA_SHUFFLE;
    c.seed = 99;
    hp_data *d, *e;
    CHECK_OK(hp_data_open(&d, &c));
    CHECK_OK(hp_data_open(&e, &c));
    if (!d || !e) return;
    int64_t W = (NTOK - 1) / BT;
    CHECK(hp_data_steps_per_epoch(d) == W);
    char *seen = calloc((size_t)W, 1);
    int32_t in[BT], tg[BT], in2[BT], tg2[BT];
    int ok = 1, same = 1, first_epoch0 = -1, differs_across_epochs = 0;
    int *order0 = calloc((size_t)W, sizeof *order0);
    for (int epoch = 0; epoch < 2; epoch++) {
        memset(seen, 0, (size_t)W);
        for (int64_t s = 0; s < W; s++) {
            CHECK_OK(hp_data_next(d, in, tg));
            CHECK_OK(hp_data_next(e, in2, tg2));
            if (memcmp(in, in2, sizeof in) || memcmp(tg, tg2, sizeof tg)) same = 0;
            int st = batch_start(in, tg);
            if (st < 0 || st % BT || st / BT >= W || seen[st / BT]) {
                ok = 0;
                continue;
            }
            seen[st / BT] = 1;
            if (epoch == 0) order0[s] = st;
            else if (order0[s] != st) differs_across_epochs = 1;
            if (first_epoch0 < 0) first_epoch0 = st;
        }
    }
    CHECK(ok);   /* each window exactly once per epoch */
    CHECK(same); /* same seed, same batches */
    CHECK(differs_across_epochs);
    hp_data_close(e);
    /* another seed gives another order */
    c.seed = 100;
    CHECK_OK(hp_data_open(&e, &c));
    int differ = 0;
    hp_data_rewind(d);
    for (int s = 0; s < 10; s++) {
        CHECK_OK(hp_data_next(d, in, tg));
        CHECK_OK(hp_data_next(e, in2, tg2));
        if (memcmp(in, in2, sizeof in)) differ = 1;
    }
    CHECK(differ);
    hp_data_rewind(d);
    CHECK_OK(hp_data_next(d, in, tg));
    CHECK(in[0] == first_epoch0);
    hp_data_close(d);
    hp_data_close(e);
    free(order0);
    free(seen);
}

static void test_resume(const char *glob, hp_data_order order) {
    hp_data_config c = base_cfg(glob);
    c.order = order;
    c.seed = 5;
    hp_data *a, *b;
    CHECK_OK(hp_data_open(&a, &c));
    if (!a) return;
    int32_t in[BT], tg[BT], in2[BT], tg2[BT];
    for (int s = 0; s < 150; s++) CHECK_OK(hp_data_next(a, in, tg));
    hp_data_state st, st2;
    hp_data_get_state(a, &st);
    /* through JSON, as a checkpoint would carry it */
    hp_jw w;
    hp_jw_init(&w);
    hp_data_state_to_json(&w, &st);
    char *txt;
    CHECK_OK(hp_jw_finish(&txt, NULL, &w));
    hp_json *j = NULL;
    CHECK_OK(hp_json_parse(&j, txt, strlen(txt)));
    CHECK_OK(hp_data_state_from_json(&st2, j));
    CHECK(st2.position == st.position && st2.epoch == st.epoch && st2.rng == st.rng && st2.n_tokens == st.n_tokens);
    hp_json_free(j);
    free(txt);

    CHECK_OK(hp_data_open(&b, &c));
    CHECK_OK(hp_data_set_state(b, &st2));
    int same = 1;
    for (int s = 0; s < 300; s++) { /* crosses an epoch boundary */
        CHECK_OK(hp_data_next(a, in, tg));
        CHECK_OK(hp_data_next(b, in2, tg2));
        if (memcmp(in, in2, sizeof in) || memcmp(tg, tg2, sizeof tg)) same = 0;
    }
    CHECK(same);
    hp_data_get_state(a, &st);
    CHECK(st.epoch >= 1);

    /* states that cannot belong to this reader */
    hp_data_state bad = st;
    bad.n_tokens++;
    CHECK_ERR(hp_data_set_state(b, &bad), "saved data state is for 3001 tokens, this stream has 3000");
    bad = st;
    bad.rng ^= 1;
    CHECK_ERR(hp_data_set_state(b, &bad), "does not match this reader's seed 5");
    bad = st;
    bad.position = 1 << 20;
    CHECK_ERR(hp_data_set_state(b, &bad), "saved data position 1048576 is outside");
    hp_data_close(a);
    hp_data_close(b);
}

static void test_world(const char *glob) {
    hp_data_config c = base_cfg(glob);
    c.world = 2;
    hp_data *r0, *r1;
    c.rank = 0;
    CHECK_OK(hp_data_open(&r0, &c));
    c.rank = 1;
    CHECK_OK(hp_data_open(&r1, &c));
    if (!r0 || !r1) return;
    int32_t in[BT], tg[BT];
    for (int s = 0; s < 3; s++) {
        CHECK_OK(hp_data_next(r0, in, tg));
        CHECK(batch_start(in, tg) == 2 * s * BT);
        CHECK_OK(hp_data_next(r1, in, tg));
        CHECK(batch_start(in, tg) == (2 * s + 1) * BT);
    }
    hp_data_close(r0);
    hp_data_close(r1);
    c.rank = 2;
    CHECK_ERR(hp_data_open(&r0, &c), "reader rank 2 is not in [0, world = 2)");
}

/* every token a reader hands out lies in [lo, hi) */
static int tokens_within(hp_data *d, int steps, int lo, int hi) {
    int32_t in[BT], tg[BT];
    int ok = 1;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(hp_data_next(d, in, tg));
        for (int k = 0; k < BT; k++)
            if (in[k] < lo || in[k] >= hi || tg[k] < lo || tg[k] >= hi) ok = 0;
    }
    return ok;
}

static void test_split(const char *glob) {
    hp_data_config c = base_cfg(glob);
    c.split = HP_DATA_TRAIN;
    c.val_fraction = 0.1;
    c.order = HP_DATA_SHUFFLE;
    hp_data *tr, *va;
    CHECK_OK(hp_data_open(&tr, &c));
    c.split = HP_DATA_VAL;
    c.order = HP_DATA_SEQUENTIAL;
    CHECK_OK(hp_data_open(&va, &c));
    if (!tr || !va) return;
    CHECK(hp_data_num_tokens(tr) == 2700 && hp_data_num_tokens(va) == 300);
    CHECK(tokens_within(tr, 400, 0, 2700));
    CHECK(tokens_within(va, 40, 2700, 3000));
    /* validation: rewind gives the same batches */
    int32_t a[BT], t1[BT], b[BT], t2[BT];
    hp_data_rewind(va);
    CHECK_OK(hp_data_next(va, a, t1));
    CHECK(batch_start(a, t1) == 2700);
    hp_data_rewind(va);
    CHECK_OK(hp_data_next(va, b, t2));
    CHECK(!memcmp(a, b, sizeof a) && !memcmp(t1, t2, sizeof t1));
    hp_data_close(tr);
    hp_data_close(va);

    c.val_fraction = 0.004; /* 12 tokens: less than a batch */
    CHECK_ERR(hp_data_open(&va, &c), "the validation split has 12 tokens, fewer than one batch (B*T+1 = 17 tokens)");
    c.val_fraction = 1.5;
    CHECK_ERR(hp_data_open(&va, &c), "val_fraction = 1.5 must be in (0, 1)");
}

static void test_text(const char *dir) {
    char *p = hp_fs_join(dir, "text.txt");
    char txt[200];
    for (int i = 0; i < 200; i++) txt[i] = (char)(i < 100 ? 'a' + i % 26 : 0x80 + i - 100);
    CHECK_OK(hp_fs_write_atomic(p, txt, sizeof txt));
    hp_data_config c = base_cfg(p);
    c.vocab = 256;
    hp_data *d;
    CHECK_OK(hp_data_open(&d, &c));
    if (d) {
        int32_t in[BT], tg[BT];
        CHECK(hp_data_num_tokens(d) == 200);
        int ok = 1;
        for (int s = 0; s < 12; s++) {
            CHECK_OK(hp_data_next(d, in, tg));
            for (int k = 0; k < BT; k++)
                if (in[k] != (unsigned char)txt[s * BT + k] || tg[k] != (unsigned char)txt[s * BT + k + 1]) ok = 0;
        }
        CHECK(ok);
        hp_data_close(d);
    }
    c.vocab = 128; /* AUTO: text only at vocabulary 256 */
    CHECK_ERR(hp_data_open(&d, &c), "text.txt: not an llm.c token shard (no magic 20240520) and the vocabulary is 128");
    c.kind = HP_DATA_TEXT;
    CHECK_ERR(hp_data_open(&d, &c), "text.txt: byte 128 at position 100 is >= the vocabulary size V = 128");
    c.vocab = 256;
    c.kind = HP_DATA_TOKENS; /* a text file is not a shard */
    CHECK_ERR(hp_data_open(&d, &c), "text.txt: file is 200 bytes, shorter than the 1024-byte token shard header");
    CHECK_OK(hp_fs_write_atomic(p, txt, 10));
    c.kind = HP_DATA_TEXT;
    CHECK_ERR(hp_data_open(&d, &c), "text.txt: the data has 10 tokens, fewer than one batch (B*T+1 = 17 tokens)");
    free(p);
}

static void test_errors(const char *dir, const char *glob) {
    hp_data_config c = base_cfg(glob);
    hp_data *d = (hp_data *)1;
    c.vocab = 2500;
    CHECK_ERR(hp_data_open(&d, &c), "shard_03.bin: token 2500 at position 300 is >= the vocabulary size V = 2500");
    CHECK(d == NULL);

    char *p = hp_fs_join(dir, "bad.bin");
    c = base_cfg(p);
    write_shard(dir, "bad.bin", 0, 50, 100, 20240520);
    CHECK_ERR(hp_data_open(&d, &c), "bad.bin: header says 100 tokens (200 bytes) but the file holds 100 bytes");
    write_shard(dir, "bad.bin", 0, 50, 50, 20240520);
    CHECK_OK(hp_data_open(&d, &c));
    hp_data_close(d);
    write_shard(dir, "bad.bin", 0, 10, 10, 20240520);
    CHECK_ERR(hp_data_open(&d, &c), "bad.bin: the data has 10 tokens, fewer than one batch");
    write_shard(dir, "bad.bin", 0, 50, 50, 20240521);
    c.kind = HP_DATA_TOKENS;
    CHECK_ERR(hp_data_open(&d, &c), "bad.bin: bad magic 20240521 (0x0134d889; expected 20240520");
    /* AUTO: a .bin without the magic is an error at any vocabulary, never text */
    c.kind = HP_DATA_AUTO;
    CHECK_ERR(hp_data_open(&d, &c), "bad.bin: bad magic 20240521 (0x0134d889) where an llm.c token shard starts with");
    c.vocab = 256;
    CHECK_ERR(hp_data_open(&d, &c), "bad.bin: bad magic 20240521");
    c.kind = HP_DATA_TEXT; /* asked for: read as bytes */
    CHECK_OK(hp_data_open(&d, &c));
    if (d) CHECK(hp_data_kind_of(d) == HP_DATA_TEXT && hp_data_num_tokens(d) == 1024 + 100);
    hp_data_close(d);
    free(p);
    /* AUTO per file: a glob of shards and text is refused */
    write_shard(dir, "mix_0.bin", 0, 50, 50, 20240520);
    p = hp_fs_join(dir, "mix_1.txt");
    CHECK_OK(hp_fs_write_atomic(p, "some text, not a shard", 22));
    free(p);
    p = hp_fs_join(dir, "mix_*");
    c = base_cfg(p);
    c.vocab = 256;
    CHECK_ERR(hp_data_open(&d, &c), "mix_1.txt: is text but");
    free(p);
    /* a FIFO is refused before it is opened (opening it for reading would wait for a writer) */
    p = hp_fs_join(dir, "fifo");
    CHECK(mkfifo(p, 0600) == 0);
    c = base_cfg(p);
    CHECK_ERR(hp_data_open(&d, &c), "fifo: not a regular file (a FIFO)");
    c = base_cfg(dir);
    CHECK_ERR(hp_data_open(&d, &c), "not a regular file (a directory)");
    free(p);

    p = hp_fs_join(dir, "missing.bin");
    c = base_cfg(p);
    CHECK_ERR(hp_data_open(&d, &c), "missing.bin: cannot open: No such file");
    free(p);
    p = hp_fs_join(dir, "nomatch_*.bin");
    c = base_cfg(p);
    CHECK_ERR(hp_data_open(&d, &c), "nomatch_*.bin: no files match this pattern");
    free(p);
    c = base_cfg(glob);
    c.B = 0;
    CHECK_ERR(hp_data_open(&d, &c), "shard_*.bin: batch size B = 0");
}

int main(void) {
    char dir[] = "/tmp/hp_io_data_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    /* 3000 tokens over four shards (one empty), written out of order */
    write_shard(dir, "shard_03.bin", 2200, 800, 800, 20240520);
    write_shard(dir, "shard_00.bin", 0, 1000, 1000, 20240520);
    write_shard(dir, "shard_02.bin", 1000, 1200, 1200, 20240520);
    write_shard(dir, "shard_01.bin", 0, 0, 0, 20240520);
    char *glob = hp_fs_join(dir, "shard_*.bin");
    test_sequential(glob);
    test_shuffle(glob);
    test_resume(glob, HP_DATA_SEQUENTIAL);
    test_resume(glob, HP_DATA_SHUFFLE);
    test_world(glob);
    test_split(glob);
    test_text(dir);
    test_errors(dir, glob);
    free(glob);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_io_data");
}
