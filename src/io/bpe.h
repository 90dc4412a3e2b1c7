/* io/bpe: GPT-2's byte-level BPE tokenizer. Text is cut into pieces by
 * GPT-2's pre-tokenization pattern (bpe_pretok.c, by hand over UTF-8), each
 * piece's bytes become the tokens of its single bytes, and the merges are
 * applied as GPT-2's encoder.py does: the adjacent pair of lowest rank, every
 * occurrence left to right, until no pair has a rank. Pieces seen before come
 * from a cache. Decoding concatenates the tokens' bytes. Built from a
 * vocabulary (token text in GPT-2's byte-to-character mapping -> id) and a
 * ranked list of merges; bpe_load.c reads vocab.json + merges.txt or a
 * Hugging Face tokenizer.json. Not for concurrent use (the cache). */
#ifndef HP_IO_BPE_H
#define HP_IO_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct hp_bpe hp_bpe;

/* The largest vocabulary accepted (ids 0 .. HP_BPE_MAX_VOCAB - 1). */
#define HP_BPE_MAX_VOCAB (1 << 22)

/* ---- pre-tokenization -------------------------------------------------- */

/* The end of the piece that starts at byte i < n of s under GPT-2's pattern
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (always > i; pieces tile the text). A byte that does not start valid UTF-8
 * is a code point of its own in none of the classes. */
size_t hp_bpe_piece_end(const uint8_t *s, size_t n, size_t i);

/* ---- building ---------------------------------------------------------- */

hp_status hp_bpe_create(hp_bpe **out);
/* Token `text` (len bytes of UTF-8, in GPT-2's byte-to-character mapping;
 * a special token such as <|endoftext|> as it is written) has id `id`.
 * `where` names the file for messages. A text or id given twice is an
 * error; so is an id outside [0, HP_BPE_MAX_VOCAB). */
hp_status hp_bpe_add_token(hp_bpe *b, const char *text, size_t len, int64_t id, const char *where);
/* The next merge (ranks count up from 0): tokens a and b (their texts) join
 * into the token a+b. All three must be in the vocabulary; a pair given
 * twice is an error. Add the merges after the tokens. */
hp_status hp_bpe_add_merge(hp_bpe *b, const char *a, size_t alen, const char *bt, size_t blen, const char *where);
/* The id of the token with this text, or -1. */
int hp_bpe_find(const hp_bpe *b, const char *text, size_t len);
/* Checks the vocabulary: ids 0..V-1 with none missing, a token for each of
 * the 256 bytes. Call once, after the last token and merge. */
hp_status hp_bpe_finish(hp_bpe *b, const char *where);
void hp_bpe_free(hp_bpe *b);

/* ---- loading (bpe_load.c) ---------------------------------------------- */

/* path: a directory holding vocab.json + merges.txt, or encoder.json +
 * vocab.bpe (GPT-2's own names), or tokenizer.json (looked for in that
 * order); or a file: a tokenizer.json, or a vocabulary .json with its merges
 * file (merges.txt or vocab.bpe) beside it. Only regular files are read. */
hp_status hp_bpe_load(hp_bpe **out, const char *path);
/* From memory (the texts are modified in place; names are for messages). */
hp_status hp_bpe_parse_files(hp_bpe **out, char *vocab_json, size_t vocab_len, const char *merges, size_t merges_len,
                             const char *vocab_name, const char *merges_name);
hp_status hp_bpe_parse_tokenizer_json(hp_bpe **out, char *text, size_t len, const char *name);

/* ---- use --------------------------------------------------------------- */

int hp_bpe_vocab(const hp_bpe *b);
/* The id of <|endoftext|>, -1 when the vocabulary has none. */
int hp_bpe_eot(const hp_bpe *b);
/* Where the tokenizer was read from (for messages; "" when built by hand). */
const char *hp_bpe_source(const hp_bpe *b);
hp_status hp_bpe_set_source(hp_bpe *b, const char *source);

/* Receives the ids of one piece and the byte offset in the text where the
 * piece ends; a non-OK return stops the encoding with that status. */
typedef hp_status (*hp_bpe_sink)(void *ctx, const int32_t *ids, size_t n, size_t end);
/* Encodes s[0..n) (any bytes), piece by piece into sink. */
hp_status hp_bpe_encode(hp_bpe *b, const uint8_t *s, size_t n, hp_bpe_sink sink, void *ctx);
/* The bytes token id decodes to (*len of them; not NUL-terminated), or NULL
 * when id is not in [0, V). */
const uint8_t *hp_bpe_token_bytes(const hp_bpe *b, int id, size_t *len);

#endif
