/* parallel/piece: copying a rank's local piece out of (or into) a whole
 * tensor, for any layout's shard offsets: the N-d box [offset, offset +
 * local) of a row-major tensor. Used to scatter initial parameters and input
 * batches, and to gather pieces back (checks, checkpoints). */
#ifndef HP_PARALLEL_PIECE_H
#define HP_PARALLEL_PIECE_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* dst[local] = src[global][offset + ...]; elements of `elem` bytes. */
void hp_piece_extract(void *dst, const void *src, size_t elem, const hp_shape *global, const hp_shape *local,
                      const int64_t *offset);
/* dst[global][offset + ...] = src[local] (the inverse). */
void hp_piece_insert(void *dst, const void *src, size_t elem, const hp_shape *global, const hp_shape *local,
                     const int64_t *offset);

#endif
