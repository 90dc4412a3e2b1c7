/* Fuzz target: the llm.c checkpoint reader (io/llmc). The input is the
 * whole file. Any input either fails with a message or reads as a header
 * that passes hp_llmc_check_header, agrees with hp_llmc_read_header and
 * the file size, and whose 16 tensors tile the parameters exactly. */
#include "core/tensor.h"
#include "fuzz_util.h"
#include "io/llmc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[128];
    fuzz_write_file(path, sizeof path, "in.bin", data, size);
    hp_llmc_header h1, h2;
    float *params = NULL;
    hp_status e1 = hp_llmc_read_header(&h1, path);
    hp_status e2 = hp_llmc_read(&h2, &params, path);
    unlink(path);
    FUZZ_CHECK(!e1 || e2); /* a file whose header fails cannot read */
    if (fuzz_err(e2)) {
        fuzz_err(e1);
        FUZZ_CHECK(params == NULL);
        return 0;
    }
    FUZZ_CHECK(e1 == HP_OK && !memcmp(&h1, &h2, sizeof h1));
    FUZZ_CHECK(fuzz_err(hp_llmc_check_header(&h2, "fuzz")) == 0);
    int32_t version;
    memcpy(&version, data + 4, 4);
    size_t count = hp_llmc_param_count(&h2);
    FUZZ_CHECK(size == HP_LLMC_HEADER_INTS * 4 + count * (version == HP_LLMC_VERSION_FP32 ? 4 : 2));
    hp_llmc_tensor t[HP_LLMC_NTENSORS];
    hp_llmc_tensors(t, &h2);
    size_t at = 0;
    for (int i = 0; i < HP_LLMC_NTENSORS; i++) {
        FUZZ_CHECK(t[i].offset == at && (int64_t)t[i].numel == hp_shape_numel(&t[i].shape));
        at += t[i].numel;
    }
    FUZZ_CHECK(at == count);
    const uint8_t *stored = data + HP_LLMC_HEADER_INTS * 4;
    if (version == HP_LLMC_VERSION_FP32) {
        FUZZ_CHECK(!memcmp(params, stored, count * 4));
    } else {
        for (size_t i = 0; i < count; i++) {
            uint16_t b;
            memcpy(&b, stored + 2 * i, 2);
            float want = hp_bf16_to_f32(b);
            FUZZ_CHECK(!memcmp(&params[i], &want, 4));
        }
    }
    free(params);
    return 0;
}
