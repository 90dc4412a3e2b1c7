#include "parallel/piece.h"

#include <string.h>

/* Walks every row (last dim run) of the local box. */
static void copy_box(char *dst, const char *src, size_t elem, const hp_shape *global, const hp_shape *local,
                     const int64_t *offset, int insert) {
    int nd = global->ndim;
    int64_t n_local = hp_shape_numel(local);
    if (n_local == 0) return;
    int64_t row = local->d[nd - 1];
    int64_t idx[HP_MAX_DIMS] = {0};
    int64_t rows = n_local / row;
    for (int64_t r = 0; r < rows; r++) {
        /* global flat index of (offset + idx) with idx[nd-1] = 0 */
        int64_t g = 0;
        for (int d = 0; d < nd; d++) g = g * global->d[d] + offset[d] + (d == nd - 1 ? 0 : idx[d]);
        size_t bytes = (size_t)row * elem;
        if (insert)
            memcpy(dst + (size_t)g * elem, src + (size_t)(r * row) * elem, bytes);
        else
            memcpy(dst + (size_t)(r * row) * elem, src + (size_t)g * elem, bytes);
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < local->d[d]) break;
            idx[d] = 0;
        }
    }
}

void hp_piece_extract(void *dst, const void *src, size_t elem, const hp_shape *global, const hp_shape *local,
                      const int64_t *offset) {
    copy_box(dst, src, elem, global, local, offset, 0);
}

void hp_piece_insert(void *dst, const void *src, size_t elem, const hp_shape *global, const hp_shape *local,
                     const int64_t *offset) {
    copy_box((char *)dst, src, elem, global, local, offset, 1);
}
