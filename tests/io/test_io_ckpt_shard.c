/* Sharded checkpoint files (io/ckpt_region, io/ckpt_index, io/ckpt_shard):
 * overlaps and copies between any two regions (boxes and flat ranges, 1-4
 * dimensions) against an element-by-element reference; a tensor saved as
 * flat ranges (FSDP's pieces) read back as boxes and the other way round, bit
 * for bit; a flat range of a box's own order (an FSDP shard of a
 * tensor-parallel piece) cut into boxes that hold exactly its elements, in
 * order; pieces.json written and read back field for field; and bad
 * metadata (a missing piece, overlapping pieces, a range out of bounds, an
 * unknown or wrong dtype, a truncated or missing data file, a piece beyond
 * its file, a bad format) refused with one line naming the file and field. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/ckpt_shard.h"
#include "io/fsutil.h"
#include "testutil.h"

static int64_t irand(hp_test_rng *r, int64_t n) { return (int64_t)(hp_test_uniform(r) * (double)n) % n; }

static hp_region random_region(hp_test_rng *r, const hp_shape *g) {
    int64_t n = hp_shape_numel(g);
    if (irand(r, 2)) {
        int64_t b = irand(r, n + 1), e = b + irand(r, n - b + 1);
        return hp_region_flat(b, e);
    }
    int64_t start[HP_MAX_DIMS];
    hp_shape ext = *g;
    for (int i = 0; i < g->ndim; i++) {
        start[i] = irand(r, g->d[i]);
        ext.d[i] = 1 + irand(r, g->d[i] - start[i]);
    }
    return hp_region_box(start, &ext);
}

/* 1 when global element gi is in region x (the reference). */
static int in_region(const hp_region *x, const hp_shape *g, int64_t gi) {
    if (x->kind == HP_REGION_FLAT) return gi >= x->begin && gi < x->end;
    for (int i = g->ndim - 1; i >= 0; i--) {
        int64_t m = gi % g->d[i];
        gi /= g->d[i];
        if (m < x->start[i] || m >= x->start[i] + x->extent[i]) return 0;
    }
    return 1;
}

/* x's elements, in its buffer order, as their global indices. */
static void region_indices(int64_t *out, const hp_region *x, const hp_shape *g) {
    int64_t k = 0;
    for (int64_t gi = 0; gi < hp_shape_numel(g); gi++)
        if (in_region(x, g, gi)) out[k++] = gi;
}

static void test_regions(void) {
    hp_test_rng r = {7};
    int bad = 0;
    for (int trial = 0; trial < 3000; trial++) {
        hp_shape g = {.ndim = 1 + (int)irand(&r, 4)};
        for (int i = 0; i < g.ndim; i++) g.d[i] = 1 + irand(&r, 6);
        int64_t n = hp_shape_numel(&g);
        hp_region a = random_region(&r, &g), b = random_region(&r, &g);
        char why[200];
        CHECK(!hp_region_invalid(why, sizeof why, &a, &g) && !hp_region_invalid(why, sizeof why, &b, &g));
        int64_t na = hp_region_numel(&a, &g), nb = hp_region_numel(&b, &g), both = 0;
        for (int64_t gi = 0; gi < n; gi++) both += in_region(&a, &g, gi) && in_region(&b, &g, gi);
        int64_t ia[1296], ib[1296];
        region_indices(ia, &a, &g);
        region_indices(ib, &b, &g);
        /* a's buffer holds global index + 1; copying into b's (zeroed) must put each common element in place */
        int32_t src[1296], dst[1296];
        for (int64_t k = 0; k < na; k++) src[k] = (int32_t)(ia[k] + 1);
        memset(dst, 0, sizeof dst);
        int64_t copied = hp_region_copy(dst, &b, src, &a, &g, sizeof(int32_t));
        for (int64_t k = 0; k < nb; k++)
            if (dst[k] != (in_region(&a, &g, ib[k]) ? ib[k] + 1 : 0)) bad++;
        if (copied != both || hp_region_overlap(&a, &b, &g) != both) bad++;
        if (hp_region_contains(&a, &b, &g) != (both == nb)) bad++;
    }
    CHECKF(bad == 0, "%d region overlaps or copies differ from the reference", bad);
    /* flat ranges of a box, as boxes */
    bad = 0;
    int most = 0;
    for (int trial = 0; trial < 3000; trial++) {
        hp_shape g = {.ndim = 1 + (int)irand(&r, 4)};
        for (int i = 0; i < g.ndim; i++) g.d[i] = 1 + irand(&r, 6);
        hp_region box;
        do box = random_region(&r, &g);
        while (box.kind != HP_REGION_BOX);
        int64_t nb = hp_region_numel(&box, &g), lb = irand(&r, nb + 1), le = lb + irand(&r, nb - lb + 1);
        int64_t want[1296], got[1296], k = 0;
        region_indices(want, &box, &g);
        hp_region parts[2 * HP_MAX_DIMS];
        int n = hp_region_flat_boxes(parts, &box, lb, le, &g);
        if (n > most) most = n;
        for (int i = 0; i < n; i++) {
            char why[200];
            if (parts[i].kind != HP_REGION_BOX || hp_region_invalid(why, sizeof why, &parts[i], &g) ||
                !hp_region_contains(&box, &parts[i], &g))
                bad++;
            region_indices(got + k, &parts[i], &g);
            k += hp_region_numel(&parts[i], &g);
        }
        if (k != le - lb || n > 2 * g.ndim - 1) bad++;
        for (int64_t i = 0; i < k && k == le - lb; i++) bad += got[i] != want[lb + i];
    }
    CHECKF(bad == 0 && most >= 5, "%d flat ranges of boxes cut wrongly (most boxes: %d)", bad, most);
    /* invalid regions are named */
    hp_shape g = hp_shape2(4, 10);
    int64_t s[2] = {0, 8};
    hp_shape e = hp_shape2(4, 4);
    hp_region x = hp_region_box(s, &e);
    char why[200];
    CHECK(hp_region_invalid(why, sizeof why, &x, &g) && strstr(why, "dimension 1 (10)"));
    x = hp_region_flat(30, 41);
    CHECK(hp_region_invalid(why, sizeof why, &x, &g) && strstr(why, "40 elements"));
}

enum { ROWS = 6, COLS = 10 };

/* A checkpoint directory with tensor "w" [ROWS, COLS] (F32, value = index)
 * saved as three flat ranges in two files, and "b" [COLS] as two boxes. */
static void write_flat_ckpt(const char *dir, float *w, float *b) {
    for (int i = 0; i < ROWS * COLS; i++) w[i] = (float)i * 0.5f;
    for (int i = 0; i < COLS; i++) b[i] = -(float)i;
    hp_shape gw = hp_shape2(ROWS, COLS), gb = hp_shape1(COLS);
    hp_ckpt_index ix;
    hp_ckpt_index_init(&ix);
    CHECK(hp_ckpt_index_add_file(&ix, "rank0.bin") == 0 && hp_ckpt_index_add_file(&ix, "rank1.bin") == 1);
    ix.files[0].step = ix.files[1].step = 3; /* state.json's */
    int tw = hp_ckpt_index_add_tensor(&ix, "w", HP_CKPT_GROUP_MODEL, HP_F32, &gw);
    hp_region f0 = hp_region_flat(0, 17), f1 = hp_region_flat(17, 41), f2 = hp_region_flat(41, 60);
    hp_ckpt_index_add_piece(&ix, tw, 0, &f0);
    hp_ckpt_index_add_piece(&ix, tw, 1, &f1);
    hp_ckpt_index_add_piece(&ix, tw, 0, &f2);
    int tb = hp_ckpt_index_add_tensor(&ix, "b", HP_CKPT_GROUP_OPTIM, HP_F32, &gb);
    int64_t s0 = 0, s1 = 4;
    hp_shape e0 = hp_shape1(4), e1 = hp_shape1(6);
    hp_region b0 = hp_region_box(&s0, &e0), b1 = hp_region_box(&s1, &e1);
    hp_ckpt_index_add_piece(&ix, tb, 1, &b0);
    hp_ckpt_index_add_piece(&ix, tb, 1, &b1);
    CHECK_OK(hp_fs_mkdir_p(dir));
    /* rank 0 holds w whole (writes two ranges out of it); rank 1 holds w's middle range and b whole */
    hp_ckpt_held h0[] = {{"w", hp_region_whole(&gw), w}};
    hp_ckpt_held h1[] = {{"w", f1, w + 17}, {"b", hp_region_whole(&gb), b}};
    CHECK_OK(hp_ckpt_shard_write(dir, &ix, 0, h0, 1));
    CHECK_OK(hp_ckpt_shard_write(dir, &ix, 1, h1, 2));
    /* a piece no held buffer contains is refused */
    CHECK_ERR(hp_ckpt_shard_write(dir, &ix, 1, h0, 1), "no buffer of this rank holds its piece of 'b'");
    char *p = hp_fs_join(dir, HP_CKPT_INDEX);
    CHECK_OK(hp_ckpt_index_write(&ix, p));
    free(p);
    p = hp_fs_join(dir, HP_CKPT_STATE);
    CHECK_OK(hp_fs_write_atomic(p, "{\"step\": 3}", 11));
    free(p);
    hp_ckpt_index_free(&ix);
}

static void test_flat_and_boxes(const char *root) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/flat", root);
    float w[ROWS * COLS], b[COLS];
    write_flat_ckpt(dir, w, b);
    hp_ckpt ck;
    CHECK_OK(hp_ckpt_open(&ck, dir));
    CHECK(ck.shards && !ck.model && !ck.optim);
    if (!ck.shards) return;
    const hp_ckpt_index *ix = hp_ckpt_shards_index(ck.shards);
    CHECK(ix->ntensors == 2 && ix->npieces == 5 && ix->nfiles == 2);
    CHECK(ix->tensors[1].group == HP_CKPT_GROUP_OPTIM && ix->pieces[2].region.kind == HP_REGION_FLAT);
    CHECK(ix->pieces[2].region.begin == 41 && ix->pieces[2].offset == 128); /* after 17 floats, 64-aligned */
    hp_shape gw = hp_shape2(ROWS, COLS), gb = hp_shape1(COLS);
    /* whole, then every TP-like column block and row block, as boxes */
    float got[ROWS * COLS];
    CHECK_OK(hp_ckpt_read(&ck, HP_CKPT_GROUP_MODEL, "w", HP_F32, &gw, got));
    CHECK(!memcmp(got, w, sizeof w));
    for (int c0 = 0; c0 < COLS; c0 += 5) {
        int64_t s[2] = {1, c0};
        hp_shape e = hp_shape2(ROWS - 2, 5);
        hp_region want = hp_region_box(s, &e);
        float part[(ROWS - 2) * 5];
        CHECK_OK(hp_ckpt_shards_read(ck.shards, "w", HP_F32, &gw, &want, part));
        int bad = 0;
        for (int i = 0; i < ROWS - 2; i++)
            for (int j = 0; j < 5; j++) bad += part[i * 5 + j] != w[(1 + i) * COLS + c0 + j];
        CHECKF(bad == 0, "column block %d: %d elements differ", c0, bad);
    }
    /* a flat range crossing the two boxes of b */
    hp_region want = hp_region_flat(2, 9);
    float part[7];
    CHECK_OK(hp_ckpt_shards_read(ck.shards, "b", HP_F32, &gb, &want, part));
    CHECK(!memcmp(part, b + 2, sizeof part));
    /* the checks of a reader */
    CHECK_ERR(hp_ckpt_shards_read(ck.shards, "nope", HP_F32, &gb, &want, part), "no tensor 'nope'");
    CHECK_ERR(hp_ckpt_shards_read(ck.shards, "b", HP_BF16, &gb, &want, part), "tensors[1] 'b'.dtype: F32, expected BF16");
    hp_shape wrong = hp_shape1(11);
    CHECK_ERR(hp_ckpt_shards_read(ck.shards, "b", HP_F32, &wrong, &want, part), "'b'.shape");
    hp_ckpt_close(&ck);

    /* convert-like use: a single-format checkpoint has no shards and hp_ckpt_read still reads it */
}

/* Rewrites dir's pieces.json with `from` replaced by `to` (once); returns 1 when found. */
static int edit_index(const char *dir, const char *from, const char *to) {
    char *p = hp_fs_join(dir, HP_CKPT_INDEX), *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, p));
    char *at = text ? strstr(text, from) : NULL;
    if (at) {
        size_t out_n = n - strlen(from) + strlen(to);
        char *out = malloc(out_n + 1);
        size_t pre = (size_t)(at - text);
        memcpy(out, text, pre);
        memcpy(out + pre, to, strlen(to));
        memcpy(out + pre + strlen(to), at + strlen(from), n - pre - strlen(from));
        CHECK_OK(hp_fs_write_atomic(p, out, out_n));
        free(out);
    }
    free(text);
    free(p);
    return at != NULL;
}

static void expect_bad(const char *root, int k, const char *from, const char *to, const char *needle) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bad%d", root, k);
    float w[ROWS * COLS], b[COLS];
    write_flat_ckpt(dir, w, b);
    CHECKF(edit_index(dir, from, to), "case %d: '%s' not in pieces.json", k, from);
    hp_ckpt ck;
    hp_status st = hp_ckpt_open(&ck, dir);
    CHECKF(st != HP_OK, "case %d (%s): accepted", k, needle);
    if (!st) {
        hp_ckpt_close(&ck);
        return;
    }
    const char *msg = hp_status_msg(st);
    CHECKF(strstr(msg, needle) && strstr(msg, dir) && !strchr(msg, '\n'), "case %d: '%s' lacks '%s' or the path",
           k, msg, needle);
    hp_status_free(st);
}

static void test_bad_metadata(const char *root) {
    int k = 0;
    /* a missing piece: w's last range dropped (its checksum moved to a key of its own, which is ignored) */
    expect_bad(root, k++, ",{\"file\":0,\"offset\":128,\"begin\":41,\"end\":60,", "],\"x\":[{",
               "tensors[0] 'w'.pieces: cover 41 of its 60 elements");
    /* overlapping ranges */
    expect_bad(root, k++, "\"begin\":17,", "\"begin\":16,", "'w'.pieces[1]: overlaps pieces[0]");
    /* a range beyond the tensor */
    expect_bad(root, k++, "\"end\":60", "\"end\":61", "'w'.pieces[2].begin/end: range [41, 61)");
    /* a box beyond its dimension */
    expect_bad(root, k++, "\"start\":[4],\"extent\":[6]", "\"start\":[5],\"extent\":[6]", "'b'.pieces[1].start/extent");
    /* a wrong or unknown dtype */
    expect_bad(root, k++, "\"dtype\":\"F32\"", "\"dtype\":\"Q7\"", "tensors[0].dtype: 'Q7'");
    /* a piece beyond its file's size */
    expect_bad(root, k++, "\"offset\":128", "\"offset\":4096", "'w'.pieces[2].offset");
    /* a wrong format, a missing field, a file listed that is not there */
    expect_bad(root, k++, HP_CKPT_INDEX_FORMAT, "hyperpar-sharded-0", "format: 'hyperpar-sharded-0'");
    expect_bad(root, k++, "\"group\":\"model\",", "", "tensors[0].group: missing");
    /* a string with a NUL inside, a fraction for an integer: said as such (not "expected a string, got a string") */
    expect_bad(root, k++, "\"group\":\"model\"", "\"group\":\"mo\\u0000del\"",
               "tensors[0].group: the string holds a NUL character");
    expect_bad(root, k++, "\"offset\":128", "\"offset\":128.5", "offset: expected an integer, got a fraction");
    expect_bad(root, k++, "\"name\":\"rank1.bin\"", "\"name\":\"rank9.bin\"", "rank9.bin: cannot open (listed as files[1]");
    expect_bad(root, k++, "\"file\":1", "\"file\":5", "'w'.pieces[1].file: 5 is not one of the 2 files");
    /* a truncated data file */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/trunc", root);
    float w[ROWS * COLS], b[COLS];
    write_flat_ckpt(dir, w, b);
    char *p = hp_fs_join(dir, "rank1.bin");
    CHECK(truncate(p, 50) == 0);
    free(p);
    hp_ckpt ck;
    CHECK_ERR(hp_ckpt_open(&ck, dir), "rank1.bin: 50 bytes, but files[1].bytes in");
    /* neither format's files: not a checkpoint (a save that never reached its commit) */
    snprintf(dir, sizeof dir, "%s/trunc/" HP_CKPT_INDEX, root);
    CHECK(unlink(dir) == 0);
    snprintf(dir, sizeof dir, "%s/trunc", root);
    CHECK_ERR(hp_ckpt_open(&ck, dir), "not a complete checkpoint");
}

int main(void) {
    char root[] = "/tmp/hp_io_ckpt_shard_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    test_regions();
    test_flat_and_boxes(root);
    test_bad_metadata(root);
    CHECK_OK(hp_fs_remove_tree(root));
    return hp_test_finish("test_io_ckpt_shard");
}
