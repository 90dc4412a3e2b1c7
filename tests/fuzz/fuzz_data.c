/* Fuzz target: the token-stream reader (io/data: llm.c token shards and
 * text). The input is an 8-byte prefix that picks the reader's settings,
 * then the bytes of one file, or of two files read through a glob pattern:
 *   [0] bits 0-1 kind (0 auto, 1 tokens, 2 text, 3 auto), bit 2 shuffle,
 *       bits 3-4 split (0 all, 1 train, 2 val, 3 all), bit 5 two files,
 *       bit 6 the files end in .txt instead of .bin
 *   [1] B - 1 (mod 8)   [2] T - 1 (mod 64)   [3] world - 1 (mod 3), then
 *       rank = ([3] >> 4) mod world
 *   [4..5] vocab - 1, little-endian   [6] seed   [7] the first file's share
 *       of the bytes, in 256ths (two files)   [8] val_fraction * 258 - 1
 * Any input either fails with a message or opens a stream whose batches
 * hold tokens < V, whose targets are the inputs shifted by one, and whose
 * state survives a get/set and a JSON round trip. */
#include "fuzz_util.h"
#include "io/data.h"
#include "io/json.h"

enum { PREFIX = 9, MAX_STEPS = 12 };

static void check_state_json(const hp_data_state *s) {
    hp_jw w;
    hp_jw_init(&w);
    hp_data_state_to_json(&w, s);
    char *text;
    size_t n;
    FUZZ_CHECK(hp_jw_finish(&text, &n, &w) == HP_OK);
    hp_json *v;
    FUZZ_CHECK(hp_json_parse(&v, text, n) == HP_OK);
    hp_data_state back;
    FUZZ_CHECK(hp_data_state_from_json(&back, v) == HP_OK);
    FUZZ_CHECK(back.position == s->position && back.epoch == s->epoch && back.rng == s->rng &&
               back.n_tokens == s->n_tokens);
    hp_json_free(v);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < PREFIX) return 0;
    const uint8_t *body = data + PREFIX;
    size_t nbody = size - PREFIX;
    int two = (data[0] >> 5) & 1;
    const char *ext = (data[0] >> 6) & 1 ? "txt" : "bin";
    size_t first = two ? nbody * data[7] / 256 : nbody;
    char p0[128], p1[128], name[32];
    snprintf(name, sizeof name, "s_0.%s", ext);
    fuzz_write_file(p0, sizeof p0, name, body, first);
    if (two) {
        snprintf(name, sizeof name, "s_1.%s", ext);
        fuzz_write_file(p1, sizeof p1, name, body + first, nbody - first);
    }
    char pattern[160];
    snprintf(pattern, sizeof pattern, "%s/s_*.%s", fuzz_dir(), ext);

    static const hp_data_kind kinds[4] = {HP_DATA_AUTO, HP_DATA_TOKENS, HP_DATA_TEXT, HP_DATA_AUTO};
    static const hp_data_split splits[4] = {HP_DATA_ALL, HP_DATA_TRAIN, HP_DATA_VAL, HP_DATA_ALL};
    hp_data_config cfg = {
        .path = two ? pattern : p0,
        .kind = kinds[data[0] & 3],
        .vocab = (data[4] | data[5] << 8) + 1,
        .B = data[1] % 8 + 1,
        .T = data[2] % 64 + 1,
        .seed = data[6],
        .order = (data[0] >> 2) & 1 ? HP_DATA_SHUFFLE : HP_DATA_SEQUENTIAL,
        .split = splits[(data[0] >> 3) & 3],
        .val_fraction = (data[8] + 1) / 258.0,
        .world = data[3] % 3 + 1,
    };
    cfg.rank = (data[3] >> 4) % cfg.world;
    hp_data *d;
    hp_status e = hp_data_open(&d, &cfg);
    unlink(p0);
    if (two) unlink(p1);
    if (fuzz_err(e)) return 0;

    int64_t n = hp_data_num_tokens(d), bt = (int64_t)cfg.B * cfg.T;
    FUZZ_CHECK(n >= cfg.world * bt + 1);
    FUZZ_CHECK(hp_data_steps_per_epoch(d) >= 1);
    int32_t *in = malloc((size_t)bt * sizeof *in), *tg = malloc((size_t)bt * sizeof *tg);
    FUZZ_CHECK(in && tg);
    hp_data_state s0;
    hp_data_get_state(d, &s0);
    check_state_json(&s0);
    FUZZ_CHECK(hp_data_set_state(d, &s0) == HP_OK);
    hp_data_state bad = s0;
    bad.n_tokens++;
    FUZZ_CHECK(fuzz_err(hp_data_set_state(d, &bad)));
    bad = s0;
    bad.position = -1;
    FUZZ_CHECK(fuzz_err(hp_data_set_state(d, &bad)));

    int64_t steps = 2 * hp_data_steps_per_epoch(d) + 1;
    if (steps > MAX_STEPS) steps = MAX_STEPS;
    hp_data_state mid = s0;
    int32_t first_in = 0;
    for (int64_t k = 0; k < steps; k++) {
        if (k == 1) {
            hp_data_get_state(d, &mid);
            check_state_json(&mid);
        }
        FUZZ_CHECK(hp_data_next(d, in, tg) == HP_OK);
        if (k == 1) first_in = in[0];
        for (int64_t i = 0; i < bt; i++) {
            FUZZ_CHECK(in[i] >= 0 && in[i] < cfg.vocab && tg[i] >= 0 && tg[i] < cfg.vocab);
            if (i + 1 < bt) FUZZ_CHECK(tg[i] == in[i + 1]);
        }
    }
    /* setting a saved state gives the same batch again */
    if (steps > 1) {
        FUZZ_CHECK(hp_data_set_state(d, &mid) == HP_OK);
        FUZZ_CHECK(hp_data_next(d, in, tg) == HP_OK);
        FUZZ_CHECK(in[0] == first_in);
    }
    hp_data_rewind(d);
    hp_data_state s1;
    hp_data_get_state(d, &s1);
    FUZZ_CHECK(s1.position == s0.position && s1.epoch == 0 && s1.rng == s0.rng);
    free(in);
    free(tg);
    hp_data_close(d);
    return 0;
}
