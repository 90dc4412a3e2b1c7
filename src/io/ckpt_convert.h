/* io/ckpt_convert: an opened checkpoint written again as a new checkpoint
 * directory in either format, every tensor and state.json bit for bit: the
 * single format (model.safetensors, optim.safetensors in the source's tensor
 * order, weights first) or the sharded one (pieces.json and one data file,
 * rank0.bin, with every tensor whole). The directory is filled under a
 * stage and committed (io/ckpt_dir). */
#ifndef HP_IO_CKPT_CONVERT_H
#define HP_IO_CKPT_CONVERT_H

#include "io/ckpt.h"

/* sharded: 1 the sharded format, 0 the single one. */
hp_status hp_ckpt_convert_dir(const char *dst, const hp_ckpt *ck, int sharded);

#endif
