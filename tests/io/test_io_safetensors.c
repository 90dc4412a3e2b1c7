/* safetensors: bit-exact round trip (write, read, write again), the header
 * layout, and validation errors that name the file and the tensor. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/fsutil.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "testutil.h"

/* A file with a hand-written header and `ndata` bytes of data. */
static void write_raw(const char *path, const char *header, size_t ndata) {
    size_t hl = strlen(header);
    size_t total = 8 + hl + ndata;
    char *buf = calloc(1, total);
    uint64_t n = hl;
    memcpy(buf, &n, 8);
    memcpy(buf + 8, header, hl);
    CHECK_OK(hp_fs_write_atomic(path, buf, total));
    free(buf);
}

static void test_round_trip(const char *dir) {
    char *a = hp_fs_join(dir, "a.safetensors"), *b = hp_fs_join(dir, "b.safetensors");
    float w[6];
    hp_test_rng r = {3};
    for (int i = 0; i < 6; i++) w[i] = (float)hp_test_normal(&r);
    int32_t ids[5] = {1, -2, 3, 2147483647, -2147483647 - 1};
    uint16_t h[3] = {0x3f80, 0xc000, 0x7fc1};
    float scalar = 42.5f;
    hp_named_tensor ts[] = {
        {"layer.0.weight", HP_F32, hp_shape2(2, 3), w},
        {"ids", HP_I32, hp_shape1(5), ids},
        {"half", HP_BF16, hp_shape3(1, 3, 1), h},
        {"scalar", HP_F32, {0, {0}}, &scalar},
        {"empty", HP_F32, hp_shape2(0, 4), NULL},
    };
    const char *meta = "{\"format\":\"pt\",\"step\":\"7\"}";
    CHECK_OK(hp_safetensors_write(a, ts, 5, meta));

    /* the header is 8-byte aligned, JSON, and lists contiguous offsets */
    char *raw;
    size_t nraw;
    CHECK_OK(hp_fs_read_all(&raw, &nraw, a));
    uint64_t hl;
    memcpy(&hl, raw, 8);
    CHECK(hl % 8 == 0 && 8 + hl + 24 + 20 + 6 + 4 == nraw);
    hp_json *j = NULL;
    CHECK_OK(hp_json_parse(&j, raw + 8, (size_t)hl));
    if (j) {
        const hp_json *e = hp_json_get(j, "ids");
        const hp_json *off = hp_json_get(e, "data_offsets");
        CHECK(off && off->n == 2 && off->items[0].ival == 24 && off->items[1].ival == 44);
        const char *dt = NULL;
        CHECK_OK(hp_json_get_string(&dt, e, "dtype"));
        CHECK(dt && !strcmp(dt, "I32"));
        CHECK(hp_json_get(hp_json_get(j, "__metadata__"), "format") != NULL);
        hp_json_free(j);
    }
    CHECK(!memcmp(raw + 8 + hl, w, 24) && !memcmp(raw + 8 + hl + 24, ids, 20));
    free(raw);

    hp_safetensors *st = NULL;
    CHECK_OK(hp_safetensors_open(&st, a));
    if (!st) return;
    CHECK(hp_safetensors_count(st) == 5);
    CHECK(!strcmp(hp_safetensors_metadata(st, "step"), "7"));
    CHECK(hp_safetensors_metadata(st, "nope") == NULL);
    float w2[6];
    int32_t ids2[5];
    uint16_t h2[3];
    float s2 = 0;
    CHECK_OK(hp_safetensors_read_into(st, "layer.0.weight", HP_F32, &ts[0].shape, w2));
    CHECK_OK(hp_safetensors_read_into(st, "ids", HP_I32, &ts[1].shape, ids2));
    CHECK_OK(hp_safetensors_read_into(st, "half", HP_BF16, &ts[2].shape, h2));
    CHECK_OK(hp_safetensors_read_into(st, "scalar", HP_F32, &ts[3].shape, &s2));
    CHECK_OK(hp_safetensors_read_into(st, "empty", HP_F32, &ts[4].shape, NULL));
    CHECK(!memcmp(w, w2, sizeof w) && !memcmp(ids, ids2, sizeof ids) && !memcmp(h, h2, sizeof h) && s2 == 42.5f);
    const hp_safetensors_entry *en = hp_safetensors_find(st, "half");
    CHECK(en && en->has_dtype && en->dtype == HP_BF16 && !strcmp(en->dtype_name, "BF16") && en->nbytes == 6);
    CHECK(!strcmp(hp_safetensors_entry_at(st, 0)->name, "layer.0.weight"));

    /* lookups that must fail name the file and the tensor */
    hp_shape wrong = hp_shape2(3, 2);
    CHECK_ERR(hp_safetensors_read_into(st, "layer.0.weight", HP_F32, &wrong, w2),
              "a.safetensors: tensor 'layer.0.weight': shape [2, 3], expected [3, 2]");
    CHECK_ERR(hp_safetensors_read_into(st, "ids", HP_F32, &ts[1].shape, ids2),
              "a.safetensors: tensor 'ids': dtype I32, expected F32");
    CHECK_ERR(hp_safetensors_read_into(st, "bias", HP_F32, &ts[1].shape, ids2), "a.safetensors: no tensor 'bias'");

    /* write what was read: the same bytes */
    hp_named_tensor back[5];
    for (int i = 0; i < 5; i++) {
        const hp_safetensors_entry *e = hp_safetensors_entry_at(st, i);
        back[i] = (hp_named_tensor){e->name, e->dtype, e->shape, e->data};
    }
    CHECK_OK(hp_safetensors_write(b, back, 5, meta));
    hp_safetensors_close(st);
    char *da, *db;
    size_t na, nb;
    CHECK_OK(hp_fs_read_all(&da, &na, a));
    CHECK_OK(hp_fs_read_all(&db, &nb, b));
    CHECK(na == nb && !memcmp(da, db, na));
    free(da);
    free(db);

    /* writer refusals */
    hp_named_tensor dup[2] = {ts[0], ts[0]};
    CHECK_ERR(hp_safetensors_write(b, dup, 2, NULL), "b.safetensors: tensor name 'layer.0.weight' used twice");
    CHECK_ERR(hp_safetensors_write(b, ts, 1, "{\"step\":7}"), "b.safetensors: metadata key 'step' must hold a string");
    CHECK_ERR(hp_safetensors_write(b, ts, 1, "[1"), "b.safetensors: metadata: json: offset 2");
    hp_named_tensor reserved = {"__metadata__", HP_F32, hp_shape1(1), w};
    CHECK_ERR(hp_safetensors_write(b, &reserved, 1, NULL), "reserved");

    /* no tensors at all is a valid file */
    CHECK_OK(hp_safetensors_write(b, NULL, 0, NULL));
    CHECK_OK(hp_safetensors_open(&st, b));
    if (st) {
        CHECK(hp_safetensors_count(st) == 0);
        hp_safetensors_close(st);
    }
    free(a);
    free(b);
}

static void expect_bad(const char *path, const char *header, size_t ndata, const char *needle) {
    write_raw(path, header, ndata);
    hp_safetensors *st = (hp_safetensors *)1;
    CHECK_ERR(hp_safetensors_open(&st, path), needle);
    CHECK(st == NULL);
}

static void test_bad_files(const char *dir) {
    char *p = hp_fs_join(dir, "bad.safetensors");
    const char *x = "bad.safetensors: ";
    char want[256];
#define BAD(hdr, nd, msg)                                 \
    do {                                                  \
        snprintf(want, sizeof want, "%s%s", x, msg);      \
        expect_bad(p, hdr, nd, want);                     \
    } while (0)
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8, "header: json: offset");
    BAD("[1,2]", 0, "header must be a JSON object");
    BAD("{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': unknown dtype 'F33'");
    BAD("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': missing string field 'dtype'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 'a': missing array field 'shape'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
        "tensor 'a': shape entry 0 is not a non-negative integer");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
        "tensor 'a': 'data_offsets' must be two non-negative integers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8,
        "tensor 'a': data_offsets [0, 16] run past the 8 data bytes");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
        "tensor 'a': shape [3] x F32 (4 bytes each) is 12 bytes but data_offsets span 8");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "tensor 'a': data_offsets [8, 0] end before");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
        12, "tensor 'b': data_offsets [8, 12] leave a gap (expected it to start at byte 4)");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        8, "tensor 'b': data_offsets [4, 8] overlap another tensor");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
        "tensor 'a': data ends at byte 4 but the file holds 8 data bytes");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': rank 5 exceeds");
    BAD("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ key 'k' must hold a string");
    BAD("{\"a\":[]}", 0, "tensor 'a': expected an object in the header");
    /* a header length larger than the file */
    char buf[16] = {0};
    uint64_t big = 1000;
    memcpy(buf, &big, 8);
    CHECK_OK(hp_fs_write_atomic(p, buf, 16));
    hp_safetensors *st;
    CHECK_ERR(hp_safetensors_open(&st, p), "bad.safetensors: header length 1000 does not fit in the 16-byte file");
    CHECK_OK(hp_fs_write_atomic(p, buf, 3));
    CHECK_ERR(hp_safetensors_open(&st, p), "bad.safetensors: file is 3 bytes, too short");
    char *missing = hp_fs_join(dir, "missing.safetensors");
    CHECK_ERR(hp_safetensors_open(&st, missing), "missing.safetensors: cannot open: No such file");
    /* other dtypes are accepted in the file, but not read into hp dtypes */
    write_raw(p, "{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}    ", 4);
    CHECK_OK(hp_safetensors_open(&st, p));
    if (st) {
        uint16_t tmp[2];
        hp_shape s = hp_shape1(2);
        CHECK(!hp_safetensors_find(st, "h")->has_dtype);
        CHECK_ERR(hp_safetensors_read_into(st, "h", HP_BF16, &s, tmp), "tensor 'h': dtype F16, expected BF16");
        hp_safetensors_close(st);
    }
#undef BAD
    free(missing);
    free(p);
}

int main(void) {
    char dir[] = "/tmp/hp_io_st_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_round_trip(dir);
    test_bad_files(dir);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_io_safetensors");
}
