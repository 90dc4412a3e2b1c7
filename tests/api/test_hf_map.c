/* The Hugging Face layout's table and shard writer (api/hf_map, api/hf_shards, issue 27):
 *  - hf_map's pieces cover every parameter of GPT-2, llama-tiny and mixtral-tiny exactly once, element by
 *    element, but the vocabulary tables' padded rows (covered by none); Hugging Face's names are unique; the
 *    piece counts are the models' tensor counts; the RoPE row map is the permutation 0 2 4 6 1 3 5 7 for a
 *    head of 8;
 *  - hp_hf_size_parse reads transformers' spellings (5GB = 5e9, 2GiB = 2^31, 5Gb = 625e6 bits, bytes) and
 *    refuses others;
 *  - hp_safetensors_file_size is the size hp_safetensors_write then writes;
 *  - hp_hf_write_weights: one model.safetensors within the limit; past it, shards in order, none over the
 *    limit but a single larger tensor alone, the index's total_size and weight_map, the tensors read back. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/hf_map.h"
#include "api/hf_shards.h"
#include "core/graph.h"
#include "io/fsutil.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "models/gpt2_model.h"
#include "models/zoo.h"
#include "testutil.h"

/* Every parameter of the graph covered once by the pieces (the vocabulary padding by none). */
static void check_cover(hp_graph *g, const char *family, const hp_model_config *c, int want_pieces) {
    hp_hf_piece *p;
    int n;
    CHECK_OK(hp_hf_pieces(&p, &n, family, c));
    CHECKF(n == want_pieces, "%s: %d pieces, expected %d", family, n, want_pieces);
    unsigned char **cov = calloc((size_t)g->nvals, sizeof *cov);
    int64_t *vocab_end = calloc((size_t)g->nvals, sizeof *vocab_end);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) CHECKF(strcmp(p[i].hf, p[j].hf), "'%s' twice", p[i].hf);
        int v = hp_graph_find(g, p[i].ours);
        CHECKF(v >= 0 && g->vals[v].kind == HP_V_PARAM, "'%s' (for '%s') is no parameter", p[i].ours, p[i].hf);
        if (v < 0) continue;
        int64_t numel = hp_shape_numel(&g->vals[v].shape), b = p[i].r0 * p[i].cols, e = b + p[i].rows * p[i].cols;
        CHECKF(e <= numel, "'%s': piece '%s' ends at %lld of %lld", p[i].ours, p[i].hf, (long long)e, (long long)numel);
        if (!cov[v]) cov[v] = calloc((size_t)numel, 1);
        for (int64_t k = b; k < e && k < numel; k++) cov[v][k]++;
        if (p[i].vocab) vocab_end[v] = e;
        if (p[i].rope_hs) CHECK(p[i].rows % p[i].rope_hs == 0 && !p[i].transpose);
    }
    for (int v = 0; v < g->nvals; v++) {
        if (g->vals[v].kind != HP_V_PARAM) continue;
        CHECKF(cov[v] != NULL, "%s: parameter '%s' has no piece", family, g->vals[v].name);
        if (!cov[v]) continue;
        int64_t numel = hp_shape_numel(&g->vals[v].shape), bad = 0;
        for (int64_t k = 0; k < numel; k++) bad += cov[v][k] != (vocab_end[v] && k >= vocab_end[v] ? 0 : 1);
        CHECKF(bad == 0, "%s: '%s': %lld elements not covered once", family, g->vals[v].name, (long long)bad);
        free(cov[v]);
    }
    free(cov), free(vocab_end), free(p);
}

static void test_map(void) {
    int64_t want[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int j = 0; j < 8; j++) CHECK(hp_hf_rope_row(j, 8) == want[j]);
    /* GPT-2: wte, wpe, 12 per layer, ln_f's two (the head tied) */
    hp_gpt2_config g2 = {2, 2, 32, 65, 0, 16};
    hp_gpt2_io io;
    hp_graph *g;
    CHECK_OK(hp_gpt2_config_check(&g2));
    CHECK_OK(hp_graph_create(&g));
    CHECK_OK(hp_gpt2_build(g, &io, &g2, 1, 1));
    hp_model_config c = {.layers = 2, .heads = 2, .channels = 32, .vocab = 65, .max_seq = 16};
    check_cover(g, "gpt2", &c, 2 + 12 * 2 + 2);
    hp_graph_destroy(g);
    /* llama-tiny: 4 layers x 9 + 3; mixtral-tiny: 4 layers x (6 + 1 + 8 x 3) + 3 */
    const char *names[] = {"llama-tiny", "mixtral-tiny"};
    for (int m = 0; m < 2; m++) {
        const hp_model_family *fam = hp_model_family_of(names[m]);
        CHECK(fam != NULL);
        if (!fam) continue;
        memset(&c, 0, sizeof c);
        CHECK_OK(fam->preset(&c, names[m]));
        CHECK_OK(hp_graph_create(&g));
        CHECK_OK(fam->build(g, &c, 1, 1));
        check_cover(g, fam->family, &c, c.layers * (c.experts ? 7 + 3 * c.experts : 9) + 3);
        hp_graph_destroy(g);
    }
}

static void test_size_parse(void) {
    static const struct {
        const char *text;
        int64_t bytes;
    } ok[] = {{"5GB", 5000000000LL}, {"500MB", 500000000LL}, {"2GiB", 2147483648LL}, {"1024", 1024},
              {"5Gb", 625000000LL},  {"3kib", 3072},         {"1TB", 1000000000000LL}, {"7mIb", 7340032},
              {"10kB", 10000}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int64_t b = -1;
        CHECK_OK(hp_hf_size_parse(&b, ok[i].text));
        CHECKF(b == ok[i].bytes, "'%s' is %lld, expected %lld", ok[i].text, (long long)b, (long long)ok[i].bytes);
    }
    int64_t b;
    CHECK_ERR(hp_hf_size_parse(&b, "5XB"), "'5XB' is not a size");
    CHECK_ERR(hp_hf_size_parse(&b, ""), "'' is not a size");
    CHECK_ERR(hp_hf_size_parse(&b, "5.5GB"), "'5.5GB' is not a size");
    CHECK_ERR(hp_hf_size_parse(&b, "-1"), "'-1' is not a size");
    CHECK_ERR(hp_hf_size_parse(&b, "0MB"), "'0MB' is no bytes");
    CHECK_ERR(hp_hf_size_parse(&b, "9999999999TB"), "too large");
    CHECK_ERR(hp_hf_size_parse(&b, "99999999999999999999"), "too large");
}

static size_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
}

/* Tensors t0..t5 of 100, 100, 700 (over the limit alone), 100, 100, 100 floats: value i * 1000 + k. */
static void test_write(const char *dir) {
    static const int64_t len[6] = {100, 100, 700, 100, 100, 100};
    float *data[6];
    hp_named_tensor ts[6];
    char names[6][16];
    for (int i = 0; i < 6; i++) {
        data[i] = malloc(sizeof(float) * (size_t)len[i]);
        for (int64_t k = 0; k < len[i]; k++) data[i][k] = (float)(i * 1000 + k);
        snprintf(names[i], sizeof names[i], "t%d", i);
        ts[i] = (hp_named_tensor){names[i], HP_F32, hp_shape1(len[i]), data[i]};
    }
    const char *meta = "{\"format\": \"pt\"}";
    /* the predicted size is the written one */
    char *p = hp_fs_join(dir, "x.safetensors");
    for (int n = 0; n <= 6; n++) {
        size_t want;
        CHECK_OK(hp_safetensors_file_size(&want, ts, n, n % 2 ? meta : NULL));
        CHECK_OK(hp_safetensors_write(p, ts, n, n % 2 ? meta : NULL));
        CHECKF(file_size(p) == want, "%d tensors: %zu bytes written, %zu predicted", n, file_size(p), want);
    }
    free(p);
    /* within the limit: one file */
    size_t whole;
    CHECK_OK(hp_safetensors_file_size(&whole, ts, 6, meta));
    char *one = hp_fs_join(dir, "one"), *sh = hp_fs_join(dir, "sh");
    CHECK_OK(hp_fs_mkdir_p(one));
    CHECK_OK(hp_fs_mkdir_p(sh));
    int files = 0;
    CHECK_OK(hp_hf_write_weights(&files, one, ts, 6, (int64_t)whole, meta));
    CHECK(files == 1);
    char *f1 = hp_fs_join(one, "model.safetensors");
    CHECK(file_size(f1) == whole);
    free(f1);
    /* 1000 bytes: t0 + t1 (800 B of data and a header) do not fit together, so each of t0, t1 alone, t2 alone
     * (over), t3, t4, t5 one each: 6 files */
    int64_t limit = 1000;
    size_t two;
    CHECK_OK(hp_safetensors_file_size(&two, ts, 2, meta));
    CHECK(two > (size_t)limit);
    CHECK_OK(hp_hf_write_weights(&files, sh, ts, 6, limit, meta));
    CHECK(files == 6);
    /* 1300 bytes: t0 + t1 fit, t2 alone, t3 + t4 fit, t5: 4 files */
    char *sh2 = hp_fs_join(dir, "sh2");
    CHECK_OK(hp_fs_mkdir_p(sh2));
    limit = 1300;
    CHECK_OK(hp_safetensors_file_size(&two, ts, 2, meta));
    CHECK(two <= (size_t)limit);
    CHECK_OK(hp_hf_write_weights(&files, sh2, ts, 6, limit, meta));
    CHECK(files == 4);
    static const int first[5] = {0, 2, 3, 5, 6};
    for (int f = 0; f < 4 && files == 4; f++) {
        char fn[64];
        snprintf(fn, sizeof fn, "model-%05d-of-00004.safetensors", f + 1);
        char *path = hp_fs_join(sh2, fn);
        hp_safetensors *st;
        CHECK_OK(hp_safetensors_open(&st, path));
        CHECKF(hp_safetensors_count(st) == first[f + 1] - first[f], "%s: %d tensors", fn, hp_safetensors_count(st));
        CHECK(file_size(path) <= (size_t)limit || hp_safetensors_count(st) == 1);
        for (int i = first[f]; i < first[f + 1]; i++) {
            float *back = malloc(sizeof(float) * (size_t)len[i]);
            hp_shape s = hp_shape1(len[i]);
            CHECK_OK(hp_safetensors_read_into(st, names[i], HP_F32, &s, back));
            CHECK(!memcmp(back, data[i], sizeof(float) * (size_t)len[i]));
            free(back);
        }
        hp_safetensors_close(st);
        free(path);
    }
    char *idx = hp_fs_join(sh2, "model.safetensors.index.json"), *text = NULL;
    size_t tl = 0;
    CHECK_OK(hp_fs_read_all(&text, &tl, idx));
    hp_json *j = NULL;
    CHECK_OK(hp_json_parse(&j, text, tl));
    int64_t total = 0;
    CHECK_OK(hp_json_get_int(&total, hp_json_get(j, "metadata"), "total_size"));
    CHECK(total == 4 * 1200);
    const hp_json *wm = hp_json_get(j, "weight_map");
    CHECK(wm && wm->n == 6);
    const char *t2 = NULL;
    CHECK_OK(hp_json_get_string(&t2, wm, "t2"));
    CHECK(t2 && !strcmp(t2, "model-00002-of-00004.safetensors"));
    CHECK(tl > 0 && text[tl - 1] == '\n');
    hp_json_free(j);
    free(text), free(idx), free(one), free(sh), free(sh2);
    for (int i = 0; i < 6; i++) free(data[i]);
}

int main(void) {
    test_map();
    test_size_parse();
    char dir[] = "/tmp/hp_hf_map_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_write(dir);
    CHECK_OK(hp_fs_remove_tree(dir));
    return hp_test_finish("test_hf_map");
}
