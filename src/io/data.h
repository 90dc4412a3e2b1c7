/* io/data: the token stream a training run reads. Sources: llm.c token
 * shards (256-int32 header: magic 20240520, version 1, token count; then
 * uint16 tokens), given as one file or a glob(3) pattern (matches sorted by
 * name with strcmp, concatenated logically), or raw text read as bytes
 * (tokens 0..255). Files are mapped read-only, checked once at open (sizes,
 * headers, every token < V), never copied whole. Only regular files are read
 * (a FIFO or device is refused before it is opened). The kind is asked for
 * (TOKENS, TEXT) or found (AUTO, per file): a file that starts with the magic
 * is a shard; any other file is text only when it cannot be a shard — its
 * name does not end in .bin and V is 256 — else an error naming the file and
 * the magic found. The files of one source are all of one kind.
 *
 * A batch of B x T reads B*T+1 consecutive tokens (inputs, and targets
 * shifted by one). With world > 1, rank r of a step reads the r-th of world
 * consecutive batches. Order (hp_data_order):
 *  - SEQUENTIAL: the first step starts at token offset 0 when seed == 0 (as
 *    llm.c), else at an offset in [0, N - world*B*T) chosen by the seed; each
 *    step advances by world*B*T; when the next step would run past the end,
 *    the stream wraps to offset 0 and the epoch count goes up.
 *  - SHUFFLE: the stream is cut into W = (N-1)/(B*T) windows of B*T(+1)
 *    tokens; each epoch visits floor(W/world) steps of them in an order that is
 *    a seeded permutation of the windows, different per epoch (a keyed
 *    Feistel permutation, so no table is stored). Tokens past the last whole
 *    window are not used.
 * Splits: TRAIN is the first (1 - val_fraction) of the tokens and VAL the
 * last val_fraction, so the two never share a token; ALL is everything (use
 * it for a separate validation file). hp_data_rewind goes back to the first
 * batch (validation: the same batches every time). The state (position,
 * epoch, rng) is a plain struct; setting a saved state makes the reader
 * produce exactly the batches an uninterrupted reader would. */
#ifndef HP_IO_DATA_H
#define HP_IO_DATA_H

#include <stdint.h>

#include "core/status.h"
#include "io/json.h"

#define HP_DATA_MAGIC 20240520
#define HP_DATA_VERSION 1
#define HP_DATA_HEADER_INTS 256

typedef enum { HP_DATA_AUTO = 0, HP_DATA_TOKENS = 1, HP_DATA_TEXT = 2 } hp_data_kind;
typedef enum { HP_DATA_SEQUENTIAL = 0, HP_DATA_SHUFFLE = 1 } hp_data_order;
typedef enum { HP_DATA_ALL = 0, HP_DATA_TRAIN = 1, HP_DATA_VAL = 2 } hp_data_split;

typedef struct {
    const char *path;    /* a file, or a glob pattern if it contains * ? [ */
    hp_data_kind kind;   /* AUTO: see above */
    int vocab;           /* V: every token must be < V (text needs V >= the largest byte + 1) */
    int B, T;
    uint64_t seed;
    hp_data_order order;
    hp_data_split split;
    double val_fraction; /* TRAIN / VAL: in (0, 1) */
    int rank, world;     /* data-parallel reader rank r of world (world 0 means 1) */
} hp_data_config;

typedef struct {
    int64_t position; /* SEQUENTIAL: token offset of the next step; SHUFFLE: step index in the epoch */
    int64_t epoch;
    uint64_t rng;     /* the epoch's permutation key, derived from seed and epoch */
    int64_t n_tokens; /* tokens in this stream (a check when the state is set) */
} hp_data_state;

typedef struct hp_data hp_data;

hp_status hp_data_open(hp_data **out, const hp_data_config *cfg);
void hp_data_close(hp_data *d);
/* The next batch, then advance. inputs, targets: [B*T] */
hp_status hp_data_next(hp_data *d, int32_t *inputs, int32_t *targets);
void hp_data_rewind(hp_data *d);
void hp_data_get_state(const hp_data *d, hp_data_state *s);
/* Fails (naming the source) if the state cannot belong to this stream. */
hp_status hp_data_set_state(hp_data *d, const hp_data_state *s);
/* Tokens in this stream (after the split). */
int64_t hp_data_num_tokens(const hp_data *d);
/* TOKENS or TEXT: what the source turned out to be. */
hp_data_kind hp_data_kind_of(const hp_data *d);
/* Steps until the epoch count goes up, counted from the start of an epoch
 * (SEQUENTIAL: from offset 0). */
int64_t hp_data_steps_per_epoch(const hp_data *d);

/* The state as a JSON object {"position":..,"epoch":..,"rng":"0x..","n_tokens":..}
 * (rng as a hex string: it does not fit a double), and back. */
void hp_data_state_to_json(hp_jw *w, const hp_data_state *s);
hp_status hp_data_state_from_json(hp_data_state *s, const hp_json *obj);

#endif
