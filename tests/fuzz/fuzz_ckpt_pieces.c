/* Fuzz target: a sharded checkpoint's pieces.json and data files as read by
 * io/ckpt (io/ckpt_index, io/ckpt_shard). A valid small checkpoint is
 * written in-process once ("a" [4, 8] as two flat ranges in rank0.bin and
 * rank1.bin, "c" [4, 8] as two row blocks, one per file, "b" [8] whole in
 * rank0.bin; step 3); each input changes it and loads it:
 *
 *   byte 0: k (mod 16), then k edits of 4 bytes: file (bit 0: rank0.bin or
 *   rank1.bin), offset (2 bytes, little-endian, modulo the file's size), a
 *   byte XORed in there; then text patches "FROM\0TO\0...": each replaces
 *   the first FROM in pieces.json by TO (a FROM not there is skipped).
 *
 * What must hold: the checkpoint loads bit-identical or is refused with a
 * message. A region of c, then every tensor whole, is read; when all reads
 * succeed, every value equals the original bit for bit. (An edit of nothing
 * that is read, such as the zero padding between pieces, loads identical.)
 * Only a pieces.json of format 1 (hyperpar-sharded-1, written before
 * checksums: nothing to verify the bytes with) is exempt from the equality;
 * it must still load without a crash or refuse. */
#include <sys/stat.h>

#include "fuzz_util.h"
#include "io/ckpt.h"
#include "io/ckpt_shard.h"
#include "io/fsutil.h"

enum { R = 4, C = 8, NFILES = 2 };

static float g_a[R * C], g_c[R * C], g_b[C];
static char *g_index;               /* the original pieces.json */
static size_t g_index_n;
static uint8_t *g_file[NFILES];     /* the original data files */
static size_t g_file_n[NFILES];
static const char *const k_names[NFILES] = {"rank0.bin", "rank1.bin"};

static void read_back(uint8_t **out, size_t *n, const char *dir, const char *name) {
    char *p = hp_fs_join(dir, name), *text = NULL;
    FUZZ_CHECK(hp_fs_read_all(&text, n, p) == HP_OK);
    *out = (uint8_t *)text;
    free(p);
}

/* The original checkpoint, written once and kept in memory. */
static void make_original(void) {
    if (g_index) return;
    for (int i = 0; i < R * C; i++) g_a[i] = (float)i * 0.25f, g_c[i] = 100.0f + (float)i;
    for (int i = 0; i < C; i++) g_b[i] = -(float)i - 0.5f;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/orig", fuzz_dir());
    FUZZ_CHECK(hp_fs_mkdir_p(dir) == HP_OK);
    hp_shape g = hp_shape2(R, C), gb = hp_shape1(C);
    hp_ckpt_index ix;
    hp_ckpt_index_init(&ix);
    FUZZ_CHECK(hp_ckpt_index_add_file(&ix, k_names[0]) == 0 && hp_ckpt_index_add_file(&ix, k_names[1]) == 1);
    ix.files[0].step = ix.files[1].step = 3;
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
    hp_ckpt_held h[] = {{"a", hp_region_whole(&g), g_a}, {"c", hp_region_whole(&g), g_c}, {"b", bw, g_b}};
    for (int f = 0; f < NFILES; f++) FUZZ_CHECK(hp_ckpt_shard_write(dir, &ix, f, h, 3) == HP_OK);
    char *p = hp_fs_join(dir, HP_CKPT_INDEX);
    FUZZ_CHECK(hp_ckpt_index_write(&ix, p) == HP_OK);
    free(p);
    hp_ckpt_index_free(&ix);
    uint8_t *text;
    read_back(&text, &g_index_n, dir, HP_CKPT_INDEX);
    g_index = (char *)text;
    for (int f = 0; f < NFILES; f++) read_back(&g_file[f], &g_file_n[f], dir, k_names[f]);
    FUZZ_CHECK(hp_fs_remove_tree(dir) == HP_OK);
}

/* s with the first `from` (nf bytes) replaced by `to` (nt bytes); *n its length. */
static char *patch(char *s, size_t *n, const char *from, size_t nf, const char *to, size_t nt) {
    if (!nf || nf > *n) return s;
    for (size_t i = 0; i + nf <= *n; i++)
        if (!memcmp(s + i, from, nf)) {
            char *o = malloc(*n - nf + nt + 1);
            FUZZ_CHECK(o != NULL);
            memcpy(o, s, i);
            memcpy(o + i, to, nt);
            memcpy(o + i + nt, s + i + nf, *n - i - nf);
            *n = *n - nf + nt;
            free(s);
            return o;
        }
    return s;
}

static void put(const char *dir, const char *name, const void *data, size_t n) {
    char *p = hp_fs_join(dir, name);
    FUZZ_CHECK(hp_fs_write_atomic(p, data, n) == HP_OK);
    free(p);
}

/* Reads c's box rows 1-2, columns 3-6, then every tensor whole; 1 when all
 * succeeded (then they must be the originals'), 0 on a refusal. */
static int load_equal(const hp_ckpt *ck) {
    hp_shape g = hp_shape2(R, C), gb = hp_shape1(C);
    int64_t s[2] = {1, 3};
    hp_shape e = hp_shape2(2, 4);
    hp_region want = hp_region_box(s, &e);
    float part[8], a[R * C], c[R * C], b[C];
    if (fuzz_err(hp_ckpt_read_region(ck, HP_CKPT_GROUP_MODEL, "c", HP_F32, &g, &want, part))) return 0;
    if (fuzz_err(hp_ckpt_read(ck, HP_CKPT_GROUP_MODEL, "a", HP_F32, &g, a))) return 0;
    if (fuzz_err(hp_ckpt_read(ck, HP_CKPT_GROUP_MODEL, "c", HP_F32, &g, c))) return 0;
    if (fuzz_err(hp_ckpt_read(ck, HP_CKPT_GROUP_OPTIM, "b", HP_F32, &gb, b))) return 0;
    if (hp_ckpt_shards_index(ck->shards)->version < 2) return 1; /* format 1: nothing to verify the bytes with */
    for (int i = 0; i < 2; i++)
        FUZZ_CHECK(!memcmp(part + 4 * i, g_c + (1 + i) * C + 3, 4 * sizeof(float)));
    FUZZ_CHECK(!memcmp(a, g_a, sizeof a));
    FUZZ_CHECK(!memcmp(c, g_c, sizeof c));
    FUZZ_CHECK(!memcmp(b, g_b, sizeof b));
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    make_original();
    size_t at = 0;
    int k = size ? data[0] % 16 : 0;
    at = size ? 1 : 0;
    uint8_t *files[NFILES];
    for (int f = 0; f < NFILES; f++) {
        files[f] = malloc(g_file_n[f] + 1);
        FUZZ_CHECK(files[f] != NULL);
        memcpy(files[f], g_file[f], g_file_n[f]);
    }
    for (int i = 0; i < k && at + 4 <= size; i++, at += 4) {
        int f = data[at] & 1;
        size_t off = ((size_t)data[at + 1] | (size_t)data[at + 2] << 8) % g_file_n[f];
        files[f][off] ^= data[at + 3];
    }
    size_t n = g_index_n;
    char *index = malloc(n + 1);
    FUZZ_CHECK(index != NULL);
    memcpy(index, g_index, n);
    while (at < size) { /* FROM\0TO\0 */
        const char *from = (const char *)data + at;
        const uint8_t *z = memchr(data + at, 0, size - at);
        size_t nf = z ? (size_t)(z - (data + at)) : size - at;
        at += nf + (z != NULL);
        const char *to = (const char *)data + at;
        z = at < size ? memchr(data + at, 0, size - at) : NULL;
        size_t nt = at < size ? (z ? (size_t)(z - (data + at)) : size - at) : 0;
        at += nt + (z != NULL);
        index = patch(index, &n, from, nf, to, nt);
    }
    char dir[128];
    snprintf(dir, sizeof dir, "%s/ck", fuzz_dir());
    FUZZ_CHECK(hp_fs_mkdir_p(dir) == HP_OK);
    put(dir, HP_CKPT_INDEX, index, n);
    for (int f = 0; f < NFILES; f++) put(dir, k_names[f], files[f], g_file_n[f]);
    put(dir, HP_CKPT_STATE, "{\"step\": 3}", 11);
    hp_ckpt ck;
    if (!fuzz_err(hp_ckpt_open(&ck, dir))) {
        FUZZ_CHECK(ck.shards != NULL);
        load_equal(&ck);
        hp_ckpt_close(&ck);
    }
    FUZZ_CHECK(hp_fs_remove_tree(dir) == HP_OK);
    free(index);
    for (int f = 0; f < NFILES; f++) free(files[f]);
    return 0;
}
