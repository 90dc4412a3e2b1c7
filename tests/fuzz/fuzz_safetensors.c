/* Fuzz target: the safetensors reader (io/safetensors). The input is the
 * whole file. Any input either fails to open with a message or gives
 * entries that cover the data after the header exactly, whose sizes match
 * their shapes, that are found by name, and that copy out (hp_safetensors_read_into) to the
 * bytes of the file; a wrong dtype or shape is refused. */
#include "core/tensor.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[128];
    fuzz_write_file(path, sizeof path, "in.safetensors", data, size);
    hp_safetensors *st;
    hp_status e = hp_safetensors_open(&st, path);
    unlink(path);
    if (fuzz_err(e)) return 0;

    int n = hp_safetensors_count(st);
    FUZZ_CHECK(n >= 0 && (size_t)n <= size);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const hp_safetensors_entry *en = hp_safetensors_entry_at(st, i);
        FUZZ_CHECK(en->name && en->dtype_name);
        FUZZ_CHECK(hp_safetensors_find(st, en->name) == en);
        FUZZ_CHECK(en->shape.ndim >= 0 && en->shape.ndim <= HP_MAX_DIMS);
        FUZZ_CHECK(en->nbytes <= size);
        total += en->nbytes;
        if (!en->has_dtype) {
            FUZZ_CHECK(fuzz_err(hp_safetensors_read_into(st, en->name, HP_F32, &en->shape, NULL)));
            continue;
        }
        FUZZ_CHECK((size_t)hp_shape_numel(&en->shape) * hp_dtype_size(en->dtype) == en->nbytes);
        void *buf = malloc(en->nbytes ? en->nbytes : 1);
        FUZZ_CHECK(buf != NULL);
        e = hp_safetensors_read_into(st, en->name, en->dtype, &en->shape, buf);
        FUZZ_CHECK(e == HP_OK);
        FUZZ_CHECK(!en->nbytes || !memcmp(buf, en->data, en->nbytes));
        hp_dtype other = en->dtype == HP_F32 ? HP_I32 : HP_F32;
        FUZZ_CHECK(fuzz_err(hp_safetensors_read_into(st, en->name, other, &en->shape, buf)));
        hp_shape wrong = en->shape;
        if (wrong.ndim < HP_MAX_DIMS) {
            wrong.d[wrong.ndim++] = 1;
            FUZZ_CHECK(fuzz_err(hp_safetensors_read_into(st, en->name, en->dtype, &wrong, buf)));
        }
        free(buf);
    }
    /* the tensors cover the data after the header exactly */
    uint64_t hlen;
    memcpy(&hlen, data, 8);
    FUZZ_CHECK(total == size - 8 - hlen);
    FUZZ_CHECK(hp_safetensors_find(st, "__metadata__") == NULL);
    const char *fmt = hp_safetensors_metadata(st, "format");
    if (fmt) FUZZ_CHECK(strlen(fmt) < size);
    fuzz_err(hp_safetensors_read_into(st, "no such tensor", HP_F32, &(hp_shape){0}, NULL));
    hp_safetensors_close(st);
    return 0;
}
