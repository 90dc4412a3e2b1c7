/* Checkpoints verified piece by piece (io/crc32c through io/ckpt_index,
 * io/ckpt_shard, io/safetensors and io/ckpt): a sharded checkpoint loads bit
 * for bit, and each corruption is refused with one line naming the tensor,
 * the data file and the piece: a flipped byte (also when only part of the
 * piece is wanted, and in the single format, also when ranks read a tensor
 * in flat ranges checked together after the reads), two pieces on the same bytes,
 * a piece moved to another file at a valid offset, two same-shape tensors'
 * names swapped, a data file of another step, a checksum edited or missing,
 * files of another step than state.json's; verification switched off reads
 * the damaged bytes (what loading did before). A format-1 pieces.json and a
 * safetensors file without checksums still load; one with only some is
 * refused. Every checkpoint file (model/optim safetensors, state.json,
 * pieces.json, rank*.bin, latest) as a FIFO or a symlink to /dev/zero is
 * refused at once (an alarm fails the test if anything waits). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/ckpt_convert.h"
#include "io/ckpt_shard.h"
#include "io/fsutil.h"
#include "testutil.h"

enum { R = 4, C = 8 };

typedef struct {
    float a[R * C], c[R * C], b[C];
} data;

static void fill(data *d) {
    for (int i = 0; i < R * C; i++) d->a[i] = (float)i * 0.25f, d->c[i] = 100.0f + (float)i;
    for (int i = 0; i < C; i++) d->b[i] = -(float)i;
}

/* A sharded checkpoint: "a" [R, C] as two flat ranges (rank0.bin, rank1.bin),
 * "c" [R, C] (the same shape) as two row blocks (one per file), "b" [C] whole
 * in rank0.bin; pieces.json of format `version`; state.json {"step": step}. */
static void make_sharded(const char *dir, int64_t step, int version, const data *d) {
    hp_shape g = hp_shape2(R, C), gb = hp_shape1(C);
    hp_ckpt_index ix;
    hp_ckpt_index_init(&ix);
    ix.version = version;
    CHECK(hp_ckpt_index_add_file(&ix, "rank0.bin") == 0 && hp_ckpt_index_add_file(&ix, "rank1.bin") == 1);
    ix.files[0].step = ix.files[1].step = step;
    int ta = hp_ckpt_index_add_tensor(&ix, "a", HP_CKPT_GROUP_MODEL, HP_F32, &g);
    hp_region a0 = hp_region_flat(0, 12), a1 = hp_region_flat(12, R * C);
    hp_ckpt_index_add_piece(&ix, ta, 0, &a0);
    hp_ckpt_index_add_piece(&ix, ta, 1, &a1);
    int tc = hp_ckpt_index_add_tensor(&ix, "c", HP_CKPT_GROUP_MODEL, HP_F32, &g);
    int64_t s0[2] = {0, 0}, s1[2] = {2, 0};
    hp_shape half = hp_shape2(2, C);
    hp_region c0 = hp_region_box(s0, &half), c1 = hp_region_box(s1, &half);
    hp_ckpt_index_add_piece(&ix, tc, 0, &c0);
    hp_ckpt_index_add_piece(&ix, tc, 1, &c1);
    int tb = hp_ckpt_index_add_tensor(&ix, "b", HP_CKPT_GROUP_OPTIM, HP_F32, &gb);
    hp_region bw = hp_region_whole(&gb);
    hp_ckpt_index_add_piece(&ix, tb, 0, &bw);
    CHECK_OK(hp_fs_mkdir_p(dir));
    hp_ckpt_held h[] = {{"a", hp_region_whole(&g), (void *)d->a},
                        {"c", hp_region_whole(&g), (void *)d->c},
                        {"b", bw, (void *)d->b}};
    CHECK_OK(hp_ckpt_shard_write(dir, &ix, 0, h, 3));
    CHECK_OK(hp_ckpt_shard_write(dir, &ix, 1, h, 3));
    char *p = hp_fs_join(dir, HP_CKPT_INDEX);
    CHECK_OK(hp_ckpt_index_write(&ix, p));
    free(p);
    char state[64];
    snprintf(state, sizeof state, "{\"step\": %lld}", (long long)step);
    p = hp_fs_join(dir, HP_CKPT_STATE);
    CHECK_OK(hp_fs_write_atomic(p, state, strlen(state)));
    free(p);
    hp_ckpt_index_free(&ix);
}

/* Opens dir and reads the three tensors whole; the first error, or they must equal d. */
static hp_status load(const char *dir, const data *d, int verify) {
    hp_ckpt ck;
    HP_TRY(hp_ckpt_open(&ck, dir));
    hp_ckpt_set_verify(&ck, verify);
    hp_shape g = hp_shape2(R, C), gb = hp_shape1(C);
    data got;
    hp_status st = hp_ckpt_read(&ck, HP_CKPT_GROUP_MODEL, "a", HP_F32, &g, got.a);
    if (!st) st = hp_ckpt_read(&ck, HP_CKPT_GROUP_MODEL, "c", HP_F32, &g, got.c);
    if (!st) st = hp_ckpt_read(&ck, HP_CKPT_GROUP_OPTIM, "b", HP_F32, &gb, got.b);
    hp_ckpt_close(&ck);
    if (!st && (memcmp(got.a, d->a, sizeof got.a) || memcmp(got.c, d->c, sizeof got.c) ||
                memcmp(got.b, d->b, sizeof got.b)))
        st = hp_errorf("loaded weights differ from the saved ones");
    return st;
}

/* With verification off, dir loads (the damaged bytes as they are) but differs from d. */
static void unverified_differs(const char *dir, const data *d) {
    hp_status st = load(dir, d, 0);
    CHECKF(st && strstr(hp_status_msg(st), "loaded weights differ"), "%s, verification off: %s", dir,
           st ? hp_status_msg(st) : "loaded the saved weights");
    hp_status_free(st);
}

static char *path2(const char *dir, const char *name) { return hp_fs_join(dir, name); }

/* Replaces the first `from` in dir/name by `to`; 1 when found. */
static int edit(const char *dir, const char *name, const char *from, const char *to) {
    char *p = path2(dir, name), *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, p));
    char *at = text ? strstr(text, from) : NULL;
    if (at) {
        size_t pre = (size_t)(at - text), fl = strlen(from), tl = strlen(to);
        char *out = malloc(n - fl + tl + 1);
        memcpy(out, text, pre);
        memcpy(out + pre, to, tl);
        memcpy(out + pre + tl, at + fl, n - pre - fl);
        CHECK_OK(hp_fs_write_atomic(p, out, n - fl + tl));
        free(out);
    }
    free(text);
    free(p);
    return at != NULL;
}

static void flip(const char *dir, const char *name, long off) {
    char *p = path2(dir, name);
    FILE *f = fopen(p, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, off, SEEK_SET);
        int c = fgetc(f);
        fseek(f, off, SEEK_SET);
        fputc(c ^ 0x10, f);
        fclose(f);
    }
    free(p);
}

static void copy_file(const char *to, const char *from) {
    char *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, from));
    CHECK_OK(hp_fs_write_atomic(to, text, n));
    free(text);
}

/* A fresh copy of the good checkpoint src at root/name (returned, static buffer). */
static const char *fresh(const char *root, const char *name, const char *src) {
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    CHECK_OK(hp_fs_mkdir_p(dir));
    static const char *const files[] = {HP_CKPT_INDEX, HP_CKPT_STATE, "rank0.bin", "rank1.bin"};
    for (int i = 0; i < 4; i++) {
        char *a = path2(dir, files[i]), *b = path2(src, files[i]);
        copy_file(a, b);
        free(a), free(b);
    }
    return dir;
}

/* The error of loading dir contains every needle, the directory and no newline. */
static void expect_refused(const char *dir, const data *d, const char *n1, const char *n2) {
    hp_status st = load(dir, d, 1);
    CHECKF(st != HP_OK, "%s: loaded (expected '%s')", dir, n1);
    if (!st) return;
    const char *m = hp_status_msg(st);
    CHECKF(strstr(m, n1) && (!n2 || strstr(m, n2)) && strstr(m, dir) && !strchr(m, '\n'),
           "'%s' lacks '%s' / '%s' or the directory", m, n1, n2 ? n2 : "");
    hp_status_free(st);
}

static void test_sharded(const char *root) {
    data d;
    fill(&d);
    char good[512], other[512];
    snprintf(good, sizeof good, "%s/good", root);
    snprintf(other, sizeof other, "%s/step6", root);
    make_sharded(good, 5, 2, &d);
    make_sharded(other, 6, 2, &d);
    CHECK_OK(load(good, &d, 1));
    /* where the pieces lie (offsets in their files) */
    hp_ckpt ck;
    CHECK_OK(hp_ckpt_open(&ck, good));
    if (!ck.shards) return;
    const hp_ckpt_index *ix = hp_ckpt_shards_index(ck.shards);
    CHECK(ix->version == 2 && ix->files[0].has_crc && ix->files[0].step == 5 &&
          ix->files[0].bytes == ix->files[0].data_bytes + HP_CKPT_TRAILER);
    long long off_a0 = ix->pieces[0].offset, off_c0 = ix->pieces[2].offset, off_c1 = ix->pieces[3].offset;
    hp_ckpt_close(&ck);
    char from[128], to[128];

    /* a flipped byte in c's first piece (rank0.bin) */
    const char *dir = fresh(root, "flip", good);
    flip(dir, "rank0.bin", (long)off_c0 + 5);
    expect_refused(dir, &d, "rank0.bin: tensors[1] 'c'.pieces[0]", "checksum");
    unverified_differs(dir, &d);
    {   /* part of the damaged piece wanted (another plan's box): refused too */
        hp_ckpt k2;
        CHECK_OK(hp_ckpt_open(&k2, dir));
        int64_t s[2] = {1, 2};
        hp_shape e = hp_shape2(2, 3), g = hp_shape2(R, C);
        hp_region want = hp_region_box(s, &e);
        float part[6];
        if (k2.shards)
            CHECK_ERR(hp_ckpt_read_region(&k2, HP_CKPT_GROUP_MODEL, "c", HP_F32, &g, &want, part),
                      "rank0.bin: tensors[1] 'c'.pieces[0]");
        hp_ckpt_close(&k2);
    }
    /* two pieces on the same bytes: c's first piece at a's offset */
    dir = fresh(root, "same_bytes", good);
    snprintf(from, sizeof from, "\"file\":0,\"offset\":%lld,\"start\":[0,0]", off_c0);
    snprintf(to, sizeof to, "\"file\":0,\"offset\":%lld,\"start\":[0,0]", off_a0);
    CHECK(edit(dir, HP_CKPT_INDEX, from, to));
    expect_refused(dir, &d, "tensors[1] 'c'.pieces[0].offset: its bytes [0, 64) of rank0.bin overlap",
                   "tensors[0] 'a'.pieces[0]");
    /* c's pieces moved into each other's file and place (valid offsets, no overlap) */
    dir = fresh(root, "moved", good);
    snprintf(from, sizeof from, "\"file\":0,\"offset\":%lld,\"start\":[0,0]", off_c0);
    snprintf(to, sizeof to, "\"file\":1,\"offset\":%lld,\"start\":[0,0]", off_c1);
    CHECK(edit(dir, HP_CKPT_INDEX, from, to));
    snprintf(from, sizeof from, "\"file\":1,\"offset\":%lld,\"start\":[2,0]", off_c1);
    snprintf(to, sizeof to, "\"file\":0,\"offset\":%lld,\"start\":[2,0]", off_c0);
    CHECK(edit(dir, HP_CKPT_INDEX, from, to));
    expect_refused(dir, &d, "rank1.bin: tensors[1] 'c'.pieces[0]", "checksum");
    /* the names of a and c (the same shape) swapped */
    dir = fresh(root, "swapped", good);
    CHECK(edit(dir, HP_CKPT_INDEX, "\"name\":\"a\"", "\"name\":\"x\""));
    CHECK(edit(dir, HP_CKPT_INDEX, "\"name\":\"c\"", "\"name\":\"a\""));
    CHECK(edit(dir, HP_CKPT_INDEX, "\"name\":\"x\"", "\"name\":\"c\""));
    expect_refused(dir, &d, "'a'.pieces[0]", "checksum");
    /* rank1.bin of another step */
    dir = fresh(root, "other_step", good);
    char *a = path2(dir, "rank1.bin"), *b = path2(other, "rank1.bin");
    copy_file(a, b);
    free(a), free(b);
    expect_refused(dir, &d, "rank1.bin: written at step 6 (its trailer), but files[1].step", "is 5");
    /* rank0.bin's data under rank1.bin's name: its trailer says so (or its size differs) */
    dir = fresh(root, "other_rank", good);
    a = path2(dir, "rank1.bin"), b = path2(good, "rank0.bin");
    copy_file(a, b);
    free(a), free(b);
    expect_refused(dir, &d, "rank1.bin: ", NULL);
    /* pieces.json and data files of another step than state.json's */
    dir = fresh(root, "state_step", good);
    CHECK(edit(dir, HP_CKPT_STATE, "5", "7"));
    expect_refused(dir, &d, "files[0] 'rank0.bin'.step: 5, but state.json says step 7", NULL);
    /* a checksum that is not one, then a wrong one: that piece refused */
    dir = fresh(root, "crc_edit", good);
    CHECK(edit(dir, HP_CKPT_INDEX, "\"begin\":12,\"end\":32,\"crc32c\":\"", "\"begin\":12,\"end\":32,\"crc32c\":\"x"));
    expect_refused(dir, &d, "tensors[0] 'a'.pieces[1].crc32c: expected 8 hex digits", NULL);
    dir = fresh(root, "crc_wrong", good);
    char *ip = path2(dir, HP_CKPT_INDEX), *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, ip));
    char *at = text ? strstr(text, "\"begin\":12,\"end\":32,\"crc32c\":\"") : NULL;
    CHECK(at != NULL);
    if (at) {
        at += strlen("\"begin\":12,\"end\":32,\"crc32c\":\"");
        *at = *at == '0' ? '1' : '0';
        CHECK_OK(hp_fs_write_atomic(ip, text, n));
    }
    free(text), free(ip);
    expect_refused(dir, &d, "rank1.bin: tensors[0] 'a'.pieces[1]", "checksum");
    /* a checksum missing from a format-2 index */
    dir = fresh(root, "crc_missing", good);
    CHECK(edit(dir, HP_CKPT_INDEX, "\"end\":12,\"crc32c\":", "\"end\":12,\"crc\":"));
    expect_refused(dir, &d, "tensors[0] 'a'.pieces[0].crc32c: missing", NULL);
    /* the trailer damaged */
    dir = fresh(root, "trailer", good);
    a = path2(dir, "rank0.bin");
    struct stat sb;
    CHECK(stat(a, &sb) == 0);
    free(a);
    flip(dir, "rank0.bin", (long)sb.st_size - 20);
    expect_refused(dir, &d, "rank0.bin: its last 32 bytes are not a data file's trailer", NULL);
    /* format 1 (no checksums, no trailers) still loads */
    snprintf(other, sizeof other, "%s/v1", root);
    make_sharded(other, 5, 1, &d);
    CHECK_OK(load(other, &d, 1));
    a = path2(other, HP_CKPT_INDEX);
    text = NULL;
    CHECK_OK(hp_fs_read_all(&text, &n, a));
    CHECK(text && strstr(text, HP_CKPT_INDEX_FORMAT_V1) && !strstr(text, "crc32c"));
    free(text), free(a);
}

/* A safetensors file with a hand-written header (8-byte length, header, zero data). */
static void write_raw(const char *path, const char *header, size_t ndata) {
    size_t hl = strlen(header), total = 8 + hl + ndata;
    char *buf = calloc(1, total);
    uint64_t n = hl;
    memcpy(buf, &n, 8);
    memcpy(buf + 8, header, hl);
    CHECK_OK(hp_fs_write_atomic(path, buf, total));
    free(buf);
}

static void test_single(const char *root) {
    data d;
    fill(&d);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/single", root);
    hp_named_tensor w[] = {{"a", HP_F32, hp_shape2(R, C), d.a}, {"c", HP_F32, hp_shape2(R, C), d.c}};
    hp_named_tensor o[] = {{"b", HP_F32, hp_shape1(C), d.b}};
    CHECK_OK(hp_ckpt_save(dir, w, 2, o, 1, "{\"step\": 5}"));
    CHECK_OK(load(dir, &d, 1));
    /* a flipped byte in c (model.safetensors' second tensor) */
    char *p = path2(dir, HP_CKPT_MODEL);
    FILE *f = fopen(p, "rb");
    uint64_t hl = 0;
    CHECK(f && fread(&hl, 8, 1, f) == 1);
    if (f) fclose(f);
    free(p);
    flip(dir, HP_CKPT_MODEL, (long)(8 + hl + sizeof d.a + 7));
    hp_status st = load(dir, &d, 1);
    CHECK(st && strstr(hp_status_msg(st), "model.safetensors: tensor 'c': checksum") && !strchr(hp_status_msg(st), '\n'));
    hp_status_free(st);
    unverified_differs(dir, &d);
    hp_ckpt ck;
    CHECK_OK(hp_ckpt_open(&ck, dir));
    if (ck.model) {
        int64_t s[2] = {0, 0};
        hp_shape e = hp_shape2(1, 2), g = hp_shape2(R, C);
        hp_region want = hp_region_box(s, &e);
        float part[2];
        CHECK_ERR(hp_ckpt_read_region(&ck, HP_CKPT_GROUP_MODEL, "c", HP_F32, &g, &want, part), "tensor 'c': checksum");
        CHECK_OK(hp_ckpt_read_region(&ck, HP_CKPT_GROUP_MODEL, "a", HP_F32, &g, &want, part));
        char out[600];
        snprintf(out, sizeof out, "%s/converted", root);
        CHECK_ERR(hp_ckpt_convert_dir(out, &ck, 1), "tensor 'c': checksum");
        CHECK(!hp_fs_exists(out));
        hp_ckpt_close(&ck);
    }
    /* deferred flat ranges (FSDP ranks reading the single format): checked
     * together after the reads, by combining where they tile the tensor (a
     * replica counted once) and by a pass of its own where they do not */
    for (int how = 0; how < 3; how++) {
        CHECK_OK(hp_ckpt_open(&ck, dir));
        hp_shape g = hp_shape2(R, C);
        float got[R * C];
        memset(got, 0, sizeof got);
        const int64_t cuts[3][4] = {{0, 12, 12, R * C}, {0, 12, 0, 12}, {0, 20, 12, R * C}};
        for (int t = 0; t < 2; t++) {
            const char *name = t ? "c" : "a";
            for (int k = 0; k < 4; k += 2) {
                hp_region r = hp_region_flat(cuts[how][k], cuts[how][k + 1]);
                CHECK_OK(hp_ckpt_read_region_deferred(&ck, HP_CKPT_GROUP_MODEL, name, HP_F32, &g, &r,
                                                      got + cuts[how][k]));
            }
            if (!t) CHECK(!memcmp(got, d.a, how == 1 ? 12 * sizeof(float) : sizeof d.a));
        }
        CHECK_ERR(hp_ckpt_verify_deferred(&ck), "model.safetensors: tensor 'c': checksum");
        CHECK_OK(hp_ckpt_verify_deferred(&ck)); /* the ranges are forgotten */
        hp_ckpt_close(&ck);
    }
    /* written before checksums (no __metadata__): read unverified */
    char old[512];
    snprintf(old, sizeof old, "%s/old", root);
    CHECK_OK(hp_fs_mkdir_p(old));
    char *m = path2(old, HP_CKPT_MODEL), *op = path2(old, HP_CKPT_OPTIM), *sp = path2(old, HP_CKPT_STATE);
    write_raw(m, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    write_raw(op, "{}", 0);
    CHECK_OK(hp_fs_write_atomic(sp, "{}", 2));
    CHECK_OK(hp_ckpt_open(&ck, old));
    float two[2] = {1, 1};
    hp_shape s2 = hp_shape1(2);
    CHECK_OK(hp_ckpt_read(&ck, HP_CKPT_GROUP_MODEL, "a", HP_F32, &s2, two));
    CHECK(two[0] == 0 && two[1] == 0);
    hp_ckpt_close(&ck);
    /* checksums for some tensors only, or for a tensor that is not there: refused */
    write_raw(m,
              "{\"__metadata__\":{\"crc32c.a\":\"00000000\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8);
    CHECK_ERR(hp_ckpt_open(&ck, old), "tensor 'b': no checksum (crc32c.b) while the file's other tensors have one");
    write_raw(m, "{\"__metadata__\":{\"crc32c.z\":\"00000000\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    CHECK_ERR(hp_ckpt_open(&ck, old), "key 'crc32c.z' names no tensor");
    free(m), free(op), free(sp);
}

/* dir/name replaced by a FIFO, then by a symlink to /dev/zero: opening the
 * checkpoint dir (is_latest: reading dir's 'latest') is refused at once. */
static void special(const char *dir, const char *name, int is_latest) {
    char *p = path2(dir, name), *text = NULL;
    size_t n = 0;
    CHECK_OK(hp_fs_read_all(&text, &n, p));
    for (int k = 0; k < 2; k++) {
        CHECK(unlink(p) == 0);
        CHECK(k == 0 ? mkfifo(p, 0644) == 0 : symlink("/dev/zero", p) == 0);
        const char *needle = k == 0 ? "not a regular file (a FIFO)" : "not a regular file (a device)";
        hp_ckpt ck;
        char *found = NULL;
        if (is_latest) {
            CHECK_ERR(hp_ckpt_get_latest(&found, dir), needle);
        } else {
            hp_status st = hp_ckpt_open(&ck, dir);
            CHECKF(st && strstr(hp_status_msg(st), needle) && strstr(hp_status_msg(st), name),
                   "%s as %s: %s", name, k ? "/dev/zero" : "a FIFO", st ? hp_status_msg(st) : "opened");
            if (st) hp_status_free(st);
            else hp_ckpt_close(&ck);
        }
        free(found);
    }
    CHECK(unlink(p) == 0);
    CHECK_OK(hp_fs_write_atomic(p, text, n));
    free(text);
    free(p);
}

static void test_special_files(const char *root) {
    data d;
    fill(&d);
    char run[512], single[600], sharded[600];
    snprintf(run, sizeof run, "%s/run", root);
    snprintf(single, sizeof single, "%s/step_000005", run);
    snprintf(sharded, sizeof sharded, "%s/step_000006", run);
    hp_named_tensor w[] = {{"a", HP_F32, hp_shape2(R, C), d.a}};
    CHECK_OK(hp_ckpt_save(single, w, 1, w, 1, "{\"step\": 5}"));
    make_sharded(sharded, 6, 2, &d);
    CHECK_OK(hp_ckpt_set_latest(sharded));
    special(single, HP_CKPT_MODEL, 0);
    special(single, HP_CKPT_OPTIM, 0);
    special(single, HP_CKPT_STATE, 0);
    special(sharded, HP_CKPT_INDEX, 0);
    special(sharded, HP_CKPT_STATE, 0);
    special(sharded, "rank0.bin", 0);
    special(sharded, "rank1.bin", 0);
    special(run, "latest", 1);
    CHECK_OK(load(sharded, &d, 1)); /* all put back */
}

int main(void) {
    alarm(120); /* a reader waiting on a FIFO would hang: the alarm kills the test instead */
    char root[] = "/tmp/hp_io_ckpt_verify_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    test_sharded(root);
    test_single(root);
    test_special_files(root);
    CHECK_OK(hp_fs_remove_tree(root));
    return hp_test_finish("test_io_ckpt_verify");
}
