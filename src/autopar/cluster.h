/* autopar/cluster: a two-tier cluster described in a small text file —
 * supernodes of ranks, the bandwidth and latency of each tier, every rank's
 * peak FLOP/s per dtype and memory, and the assumptions behind the numbers —
 * read, checked and printed. The cost model, the strategy search and
 * `hyperpar simulate` (not built yet) read it; shipped descriptions live in
 * the top-level folder clusters/.
 *
 * File format (one `field: value` line each; '#' starts a comment, so no
 * value contains one; blanks around tokens are ignored):
 *
 *     name: ascend910-2048              <- letters, digits, '.', '_', '-'; at most 63
 *     supernodes: 256                   <- whole numbers >= 1; world = product (at most 2^31 - 1)
 *     ranks_per_supernode: 8
 *     intra_bandwidth_GBps: 30          <- GB/s (10^9 bytes/s) per rank, inside a supernode
 *     intra_latency_us: 5               <- microseconds per message (>= 0)
 *     inter_bandwidth_GBps: 12.5        <- GB/s per rank, between supernodes
 *     inter_latency_us: 10
 *     peak_fp32: 64 TFLOP/s             <- per rank; the unit is required: TFLOP/s (10^12)
 *     peak_bf16: 256 TFLOP/s            <-   or GFLOP/s (10^9)
 *     memory_GB: 32                     <- per rank, 10^9 bytes
 *     assumption: free text             <- any number, kept in file order
 *
 * Every field but `assumption` is required exactly once; numbers are finite
 * and positive (latencies may be 0). Errors are one line, `FILE:LINE: field
 * 'X': problem` (a missing field: the line after the file's last). */
#ifndef HP_AUTOPAR_CLUSTER_H
#define HP_AUTOPAR_CLUSTER_H

#include <stddef.h>

#include "core/status.h"

#define HP_CLUSTER_NAME_MAX 64 /* bytes of hp_cluster.name, its NUL included */

typedef struct {
    char name[HP_CLUSTER_NAME_MAX];
    int supernodes;
    int ranks_per_supernode;
    int world;                   /* supernodes * ranks_per_supernode */
    double intra_bandwidth_GBps; /* per rank, inside a supernode, 10^9 bytes/s */
    double intra_latency_us;
    double inter_bandwidth_GBps; /* per rank, between supernodes */
    double inter_latency_us;
    double peak_fp32_flops;      /* per rank, FLOP/s */
    double peak_bf16_flops;
    double memory_GB;            /* per rank, 10^9 bytes */
    char **assumptions;          /* [nassumptions] owned texts, in file order */
    int nassumptions;
} hp_cluster;

/* Parses a cluster description from text; name stands for the file in
 * errors ("cluster" if NULL). On error *out holds nothing to free. */
hp_status hp_cluster_parse(hp_cluster *out, const char *text, const char *name);

/* Reads and parses the cluster file at path (a regular file, at most 1 MiB);
 * errors name the path. */
hp_status hp_cluster_load(hp_cluster *out, const char *path);

void hp_cluster_free(hp_cluster *c);

/* Writes c as a description in the file format (every field, then every
 * assumption; a first comment line gives the world size) into buf[n],
 * NUL-terminated when n > 0, like snprintf. Returns the length of the whole
 * text, so a call with buf NULL and n 0 sizes the buffer. What it prints
 * parses back to the same description. */
size_t hp_cluster_print(char *buf, size_t n, const hp_cluster *c);

#endif
