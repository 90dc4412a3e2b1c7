/* tests/comm/test_copy: the collectives' byte mover copies exactly the bytes
 * asked for, at every alignment of source and destination, with and without
 * streaming stores, and touches nothing around the destination. */
#include <stdint.h>

#include "comm/copy.h"
#include "testutil.h"

int main(void) {
    static const size_t sizes[] = {0, 1, 63, 64, 255, 256, 4095, 4096, 4097, 10000, ((size_t)1 << 20) + 13};
    size_t cap = ((size_t)1 << 20) + 13 + 256;
    unsigned char *src = malloc(cap), *dst = malloc(cap + 128);
    if (!src || !dst) return 1;
    for (size_t i = 0; i < cap; i++) src[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
    int bad = 0;
    for (int stream = 0; stream < 2; stream++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int doff = 0; doff < 70; doff += (sizes[si] > 100000 ? 23 : 1))
                for (int soff = 0; soff < 70; soff += 23) {
                    size_t n = sizes[si];
                    memset(dst, 0xA5, cap + 128);
                    hp_comm_copy(dst + 64 + doff, src + soff, n, stream);
                    if (memcmp(dst + 64 + doff, src + soff, n)) bad++;
                    for (size_t i = 0; i < (size_t)(64 + doff); i++) bad += dst[i] != 0xA5;
                    for (size_t i = 64 + (size_t)doff + n; i < cap + 128; i++) bad += dst[i] != 0xA5;
                    if (bad) {
                        fprintf(stderr, "copy of %zu bytes, dst offset %d, src offset %d, stream %d: wrong\n", n, doff,
                                soff, stream);
                        CHECK(0);
                        free(src);
                        free(dst);
                        return hp_test_finish("test_copy");
                    }
                }
    free(src);
    free(dst);
    return hp_test_finish("test_copy");
}
