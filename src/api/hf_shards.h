/* api/hf_shards: a Hugging Face model directory's weight files, written as
 * transformers' save_pretrained writes them: one model.safetensors when the
 * file would be at most the shard limit, else model-00001-of-0000N.safetensors
 * ... and model.safetensors.index.json ({"metadata": {"total_size": the
 * tensors' bytes}, "weight_map": {tensor: file}}, the names sorted). Tensors
 * go into shards in the order given and are never split: a shard takes the
 * next tensor while its whole file (header included) stays within the limit,
 * and a tensor whose own file is larger gets a file alone. Every file is
 * written under a temporary name, synced, then renamed. Also the size a
 * `--max-shard-size` gives (hp_hf_size_parse, declared in hyperpar.h). */
#ifndef HP_API_HF_SHARDS_H
#define HP_API_HF_SHARDS_H

#include <stdint.h>

#include "io/safetensors.h"

/* ts[0..n) into directory dir (which exists) in files of at most max_bytes (> 0) where a tensor allows;
 * each safetensors file's __metadata__ is metadata_json. *files: how many safetensors files were written. */
hp_status hp_hf_write_weights(int *files, const char *dir, const hp_named_tensor *ts, int n, int64_t max_bytes,
                              const char *metadata_json);

#endif
