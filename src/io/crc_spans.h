/* io/crc_spans: the CRC-32Cs of byte ranges of several buffers, recorded by
 * threads as they read the ranges, and a buffer's whole CRC when its ranges
 * tile it (so a tensor read in parts by several ranks is verified without a
 * pass of its own over its bytes). Identical ranges (replicas) count once. */
#ifndef HP_IO_CRC_SPANS_H
#define HP_IO_CRC_SPANS_H

#include <stdint.h>

typedef struct hp_crc_spans hp_crc_spans;

/* A record for buffers 0..nbuf-1, or NULL when out of memory. */
hp_crc_spans *hp_crc_spans_new(int nbuf);
void hp_crc_spans_free(hp_crc_spans *s);
/* Bytes [begin, end) of buffer buf have CRC crc. Safe from several threads.
 * Returns 0, or -1 when out of memory (the range is then not recorded). */
int hp_crc_spans_add(hp_crc_spans *s, int buf, uint64_t begin, uint64_t end, uint32_t crc);
/* Number of ranges recorded for buffer buf (not thread safe: after the reads). */
int hp_crc_spans_count(const hp_crc_spans *s, int buf);
/* 1 and *crc = the CRC of bytes [0, n) when buffer buf's ranges (sorted, each
 * distinct one once) tile [0, n) exactly; 0 otherwise (ranges overlap
 * partly, leave a gap or pass n). Not thread safe: after the reads. */
int hp_crc_spans_whole(uint32_t *crc, hp_crc_spans *s, int buf, uint64_t n);
/* Forgets buffer buf's ranges. */
void hp_crc_spans_clear(hp_crc_spans *s, int buf);

#endif
