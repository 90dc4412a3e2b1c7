/* api/calibrate: the measuring halves of `hyperpar calibrate` (the public
 * hp_calibrate in api/calibrate.c drives them): the kernels'
 * (api/calibrate_kernels.c) and the collectives' (api/calibrate_comm.c),
 * each filling its part of an autopar/calibrate measurement record. */
#ifndef HP_API_CALIBRATE_H
#define HP_API_CALIBRATE_H

#include <stdint.h>

#include "autopar/calibrate.h"
#include "core/status.h"

/* Fills d->kernel's fp32 entries (every family, every bucket) on a pool of
 * d->threads threads, up to d->repeats timed runs each (d->quick: smaller
 * medium shapes and about 0.25 s an entry, else about 2 s). */
hp_status hp_api_calib_kernels(hp_calib_data *d);

/* Replaces d->kernel's fp32 entries that a small GPT-2's training steps (two widths; d->quick: one, one step)
 * have nodes in by those nodes' summed FLOPs, bytes and seconds (api/calibrate_step). */
hp_status hp_api_calib_step(hp_calib_data *d);

/* Checks collective sizes: 2..HP_CALIB_MAX_SIZES distinct multiples of 8 in 8 B..4 GiB. */
hp_status hp_api_calib_sizes_check(const int64_t *sizes, int nsizes);

/* Fills d->coll for both tiers and every kind at sizes[0..nsizes) bytes (checked
 * as hp_api_calib_sizes_check does), the inter tier over
 * d->inter_bw_gbps and d->inter_latency_us. */
hp_status hp_api_calib_comm(hp_calib_data *d, const int64_t *sizes, int nsizes);

#endif
