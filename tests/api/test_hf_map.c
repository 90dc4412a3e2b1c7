/* The Hugging Face layout's table (api/hf_map, issue 27):
 *  - hf_map's pieces cover every parameter of GPT-2, llama-tiny and mixtral-tiny exactly once, element by
 *    element, but the vocabulary tables' padded rows (covered by none); Hugging Face's names are unique; the
 *    piece counts are the models' tensor counts; the RoPE row map is the permutation 0 2 4 6 1 3 5 7 for a
 *    head of 8. */
#include <stdint.h>
#include <stdlib.h>

#include "api/hf_map.h"
#include "core/graph.h"
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

int main(void) {
    test_map();
    return hp_test_finish("test_hf_map");
}
