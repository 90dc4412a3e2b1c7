/* io/llmc: llm.c GPT-2 checkpoints (*.bin). A 256-int32 header
 * ([0] magic 20240326, [1] version 3 = fp32 or 5 = bf16, [2] maxT, [3] V,
 * [4] L, [5] NH, [6] C, [7] Vp, the rest zero) followed by the parameters,
 * contiguous, in llm.c order. Reading accepts fp32 and bf16 (converted to
 * fp32); writing produces either (bf16 rounded to nearest even, NaN kept a
 * NaN), atomically. Little-endian hosts only (as llm.c itself). */
#ifndef HP_IO_LLMC_H
#define HP_IO_LLMC_H

#include <stddef.h>

#include "core/status.h"
#include "core/tensor.h"

#define HP_LLMC_MAGIC 20240326
#define HP_LLMC_VERSION_FP32 3
#define HP_LLMC_VERSION_BF16 5
#define HP_LLMC_HEADER_INTS 256
#define HP_LLMC_NTENSORS 16

typedef struct {
    int maxT, V, L, NH, C, Vp;
} hp_llmc_header;

/* One parameter tensor inside the flat parameter array. */
typedef struct {
    const char *name; /* wte, wpe, ln1w, ..., lnfb */
    size_t offset;    /* in floats from the start of the parameters */
    size_t numel;
    hp_shape shape;   /* e.g. qkvw (L, 3C, C); linear weights are (out, in) */
} hp_llmc_tensor;

/* Total number of parameters (floats). The header must be valid. */
size_t hp_llmc_param_count(const hp_llmc_header *h);
/* The 16 tensors in llm.c order: wte (Vp,C), wpe (maxT,C), ln1w (L,C),
 * ln1b (L,C), qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C), attprojb (L,C),
 * ln2w (L,C), ln2b (L,C), fcw (L,4C,C), fcb (L,4C), fcprojw (L,C,4C),
 * fcprojb (L,C), lnfw (C), lnfb (C). */
void hp_llmc_tensors(hp_llmc_tensor out[HP_LLMC_NTENSORS], const hp_llmc_header *h);
/* Checks that every field is > 0 and consistent (Vp >= V, C divisible by
 * NH, sizes not overflowing); errors name `path` and the field. */
hp_status hp_llmc_check_header(const hp_llmc_header *h, const char *path);

/* Reads a checkpoint: *params is malloc'd (caller frees) with
 * hp_llmc_param_count floats. */
hp_status hp_llmc_read(hp_llmc_header *hdr, float **params, const char *path);
/* Reads and checks only the header (and that the file size matches it),
 * without reading the parameters. */
hp_status hp_llmc_read_header(hp_llmc_header *hdr, const char *path);
/* Writes a checkpoint atomically (a temporary name, synced, renamed) as
 * `version`: HP_LLMC_VERSION_FP32 (the floats as they are) or
 * HP_LLMC_VERSION_BF16 (each rounded to bf16, nearest even); any other
 * version is an error naming path.
 * params: [hp_llmc_param_count(hdr)] */
hp_status hp_llmc_write(const char *path, const hp_llmc_header *hdr, const float *params, int version);

#endif
