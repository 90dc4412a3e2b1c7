/* io/ckpt_region: which part of a global row-major tensor a checkpoint piece
 * is. Either a box (start and extent per dimension: a Shard(d) block over any
 * mesh axes, a replica's whole tensor) or a flat range [begin, end) of the
 * tensor's row-major element order (a flat shard, as FSDP keeps a unit's
 * parameters and moments). A buffer holding a region stores its elements in
 * row-major order of the box, or in flat order for a range. Any two regions
 * of one tensor intersect; the overlap is copied between their buffers run by
 * run (a run: elements contiguous in the global tensor and in both buffers). */
#ifndef HP_IO_CKPT_REGION_H
#define HP_IO_CKPT_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

typedef enum { HP_REGION_BOX = 0, HP_REGION_FLAT = 1 } hp_region_kind;

typedef struct {
    hp_region_kind kind;
    int64_t start[HP_MAX_DIMS], extent[HP_MAX_DIMS]; /* BOX: per dimension of the tensor */
    int64_t begin, end;                              /* FLAT: element indices, begin <= end */
} hp_region;

/* The box covering all of a tensor of shape g. */
hp_region hp_region_whole(const hp_shape *g);
/* The box [start, start + extent) (extent: a shape of g's rank). */
hp_region hp_region_box(const int64_t *start, const hp_shape *extent);
hp_region hp_region_flat(int64_t begin, int64_t end);

int64_t hp_region_numel(const hp_region *r, const hp_shape *g);
/* 1 when a and b are the same region of a tensor of shape g (same kind and bounds). */
int hp_region_eq(const hp_region *a, const hp_region *b, const hp_shape *g);
/* 0 when r is a valid region of a tensor of shape g; else 1 with the problem
 * written to why (e.g. "start[1] 8 + extent[1] 4 exceeds dimension 1 (10)"). */
int hp_region_invalid(char *why, size_t n, const hp_region *r, const hp_shape *g);
/* Elements a and b have in common. */
int64_t hp_region_overlap(const hp_region *a, const hp_region *b, const hp_shape *g);
/* 1 when every element of inner is in outer. */
int hp_region_contains(const hp_region *outer, const hp_region *inner, const hp_shape *g);
/* The elements [lb, le) of box's own row-major order (a flat range of a
 * buffer holding box, e.g. an FSDP shard of a tensor-parallel piece) as at
 * most 2 * ndim - 1 boxes of the global tensor, in that order (each one a
 * contiguous part of the buffer); returns how many were written to out. */
int hp_region_flat_boxes(hp_region *out, const hp_region *box, int64_t lb, int64_t le, const hp_shape *g);
/* Copies the elements in both regions from src (holding src_r) to dst
 * (holding dst_r); returns how many. dst: [numel(dst_r)], src: [numel(src_r)]
 * elements of elem bytes; src may be unaligned (it can point into a mapped file). */
int64_t hp_region_copy(void *dst, const hp_region *dst_r, const void *src, const hp_region *src_r, const hp_shape *g,
                       size_t elem);
/* hp_region_copy that also carries the CRC-32C *crc (io/crc32c) over the
 * bytes copied, in the order copied, in the same pass. When src_r lies
 * wholly in dst_r that order is src's buffer order, each byte once: *crc
 * then goes on over all of src. */
int64_t hp_region_copy_crc(void *dst, uint32_t *crc, const hp_region *dst_r, const void *src, const hp_region *src_r,
                           const hp_shape *g, size_t elem);

#endif
