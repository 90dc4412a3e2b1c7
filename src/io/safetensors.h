/* io/safetensors: named tensors in the safetensors format: an 8-byte
 * little-endian header length N, N bytes of JSON
 * {"name":{"dtype":"F32","shape":[..],"data_offsets":[b,e]},...,
 *  "__metadata__":{"k":"v",...}} (padded with spaces to a multiple of 8),
 * then the raw little-endian data. Writes F32, BF16 and I32, atomically.
 * Reading maps the file, validates the whole header (well-formed JSON,
 * known dtypes, shape x dtype size == offset span, offsets in bounds and
 * contiguous) and lets the caller copy tensors out by name after checking
 * dtype and shape. Errors name the file and the tensor.
 *
 * Checksums: the writer stores every tensor's CRC-32C (io/crc32c) in
 * __metadata__ as "crc32c.<name>": "<8 hex digits>", computed from the bytes
 * written; a reader verifies a tensor the first time it is copied out (in
 * the same pass as the copy). A file without them (written before they
 * existed, or by another tool) is read unverified; one with some but not all
 * is refused. */
#ifndef HP_IO_SAFETENSORS_H
#define HP_IO_SAFETENSORS_H

#include <stddef.h>

#include "core/status.h"
#include "core/tensor.h"

typedef struct {
    const char *name;
    hp_dtype dtype;
    hp_shape shape;
    const void *data; /* [numel(shape)] elements of dtype */
} hp_named_tensor;

/* Writes n tensors (file order = the order given). metadata_json, when not
 * NULL, must be a JSON object whose values are strings (the safetensors
 * rule) and no key "crc32c.*"; it is stored under "__metadata__" with the
 * tensors' checksums after it. Names must be unique. */
hp_status hp_safetensors_write(const char *path, const hp_named_tensor *ts, int n, const char *metadata_json);
/* The bytes hp_safetensors_write would write for these tensors and metadata (header, its padding and the data),
 * found without reading the data (a checksum's width is fixed); the same checks, the errors naming no file. */
hp_status hp_safetensors_file_size(size_t *out, const hp_named_tensor *ts, int n, const char *metadata_json);

typedef struct hp_safetensors hp_safetensors;

/* One tensor as stored in an open file. */
typedef struct {
    const char *name;
    const char *dtype_name; /* as spelled in the file: "F32", "BF16", "F16", ... */
    int has_dtype;          /* 1 when the dtype maps to an hp_dtype (F32, BF16, I32) */
    hp_dtype dtype;         /* valid when has_dtype */
    hp_shape shape;
    size_t nbytes;
    const void *data;       /* inside the mapped file; may be unaligned */
} hp_safetensors_entry;

/* path must be a regular file (a FIFO or a device is refused without
 * waiting on it); the header must fit in it. */
hp_status hp_safetensors_open(hp_safetensors **out, const char *path);
void hp_safetensors_close(hp_safetensors *st);
const char *hp_safetensors_path(const hp_safetensors *st);
int hp_safetensors_count(const hp_safetensors *st);
/* Entries in header order; i in [0, count). */
const hp_safetensors_entry *hp_safetensors_entry_at(const hp_safetensors *st, int i);
/* The entry called name, or NULL. */
const hp_safetensors_entry *hp_safetensors_find(const hp_safetensors *st, const char *name);
/* The string stored under __metadata__[key], or NULL. */
const char *hp_safetensors_metadata(const hp_safetensors *st, const char *key);
/* Copies tensor `name` into dst after checking that it exists and has
 * exactly this dtype and shape, and its bytes against its checksum (an error
 * names the file and the tensor; dst is then written but not to be used).
 * dst: [numel(shape)] elements of dtype. Safe from several threads at once. */
hp_status hp_safetensors_read_into(const hp_safetensors *st, const char *name, hp_dtype dtype,
                                   const hp_shape *shape, void *dst);
/* Checks entry en's bytes (en->data) against its checksum; once per entry
 * (later calls return at once). For readers that use en->data directly. */
hp_status hp_safetensors_verify(const hp_safetensors *st, const hp_safetensors_entry *en);
/* Copies bytes [begin, end) of entry en into dst, folding them into a
 * checksum recorded for the entry (not yet checked: see below). dst: [end -
 * begin] bytes. Safe from several threads at once. */
hp_status hp_safetensors_read_span(const hp_safetensors *st, const hp_safetensors_entry *en, void *dst, size_t begin,
                                   size_t end);
/* After hp_safetensors_read_span calls (not during them): checks each entry
 * read in spans, by combining the spans' checksums where they tile the entry
 * (replicas counted once) and by a pass over its bytes where they do not; the
 * first mismatch is the error. Forgets the spans. */
hp_status hp_safetensors_verify_spans(const hp_safetensors *st);
/* Verification on (1, the default) or off (0: benchmarks measure its cost). */
void hp_safetensors_set_verify(hp_safetensors *st, int on);

#endif
