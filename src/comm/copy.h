/* comm/copy: the byte mover of the collectives. Large outputs (far beyond
 * the caches: a 64 MiB all-gather) are written with streaming stores, which
 * skip reading each destination line before overwriting it and keep the
 * caches for the data that will be used next; smaller copies use memcpy. */
#ifndef HP_COMM_COPY_H
#define HP_COMM_COPY_H

#include <stddef.h>

/* Outputs of at least this many bytes per rank and call are streamed. */
#define HP_COMM_STREAM_BYTES ((size_t)8 << 20)

/* dst[n bytes] = src[n bytes] (the ranges must not overlap); stream != 0
 * writes around the caches and orders the stores before returning. */
void hp_comm_copy(void *dst, const void *src, size_t n, int stream);

#endif
