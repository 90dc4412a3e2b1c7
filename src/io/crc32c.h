/* io/crc32c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial
 * and final value inverted: the checksum of iSCSI and ext4), the checksum of
 * checkpoint tensors and pieces. Three ways, chosen at run time by what the
 * CPU has, all giving the same value for any input: with AVX2 and VPCLMULQDQ
 * the message folded 128 bytes a round by carry-less multiplication (and
 * copied in the same pass by hp_crc32c_copy); with SSE4.2 three interleaved
 * streams of its crc32 instruction, joined by multiplication modulo the
 * polynomial; elsewhere a table-driven (slicing-by-8) loop. The tables and
 * constants are built once, on first use, and never change. */
#ifndef HP_IO_CRC32C_H
#define HP_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of data[0, n) following a stream whose CRC-32C was crc
 * (0 for the start): hp_crc32c(hp_crc32c(0, a, na), b, nb) is the CRC of a
 * then b. hp_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t hp_crc32c(uint32_t crc, const void *data, size_t n);
/* hp_crc32c and a copy of src to dst in one pass over the bytes (block by
 * block, each block copied while it is in the cache); dst and src must not
 * overlap. Returns the CRC. */
uint32_t hp_crc32c_copy(void *dst, uint32_t crc, const void *src, size_t n);
/* The CRC of a then b from crc_a = CRC(a), crc_b = CRC(b) and b's length. */
uint32_t hp_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
/* hp_crc32c by one way (tests compare them): 0 the table-driven loop, 1 the
 * crc32 instruction, 2 folding (for 256 bytes or more); a way the CPU lacks
 * falls back to the one below it. */
uint32_t hp_crc32c_path(int path, uint32_t crc, const void *data, size_t n);
/* The best way this CPU has (2, 1 or 0, as above). */
int hp_crc32c_hw(void);

#endif
