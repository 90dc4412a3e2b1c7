"""Checks a sharded Hugging Face directory written by `hyperpar export --hf --max-shard-size LIMIT` against the
same checkpoint's single-file export, without torch: model-00001-of-0000N.safetensors ... (N >= MIN_FILES, no
model.safetensors, no other weight file) and model.safetensors.index.json as transformers writes them; the
index's total_size is the sum of the tensors' bytes (and the single file's); its weight_map names every tensor
once, and the file that holds it; every tensor is in exactly one file, with the single file's dtype, shape and
bytes, the files in order holding the tensors in the single file's order; no file is larger than LIMIT unless
it holds one tensor (with ALONE: at least one such file); config.json is the single export's. When the
`safetensors` and `numpy` packages happen to be importable, each shard is also read with safetensors' own
reader. Usage: hf_shard_check.py SHARDED_DIR SINGLE_DIR LIMIT_BYTES MIN_FILES [ALONE]"""
import json
import os
import re
import struct
import sys

import st_read


def main():
    sharded, single, limit, min_files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    alone_wanted = len(sys.argv) > 5
    errors = []
    _, ref_order, ref = st_read.read_raw(os.path.join(single, "model.safetensors"))
    ref_total = sum(len(t[2]) for t in ref.values())
    names = sorted(os.listdir(sharded))
    if "model.safetensors" in names:
        errors.append("a sharded directory has model.safetensors")
    shards = [f for f in names if f.endswith(".safetensors")]
    n = len(shards)
    want = ["model-%05d-of-%05d.safetensors" % (i + 1, n) for i in range(n)]
    if shards != want:
        errors.append("files %s, expected %s" % (shards, want))
    if n < min_files:
        errors.append("%d files, expected at least %d" % (n, min_files))
    extra = set(names) - set(shards) - {"config.json", "model.safetensors.index.json"}
    if extra:
        errors.append("unexpected files %s" % sorted(extra))
    with open(os.path.join(sharded, "model.safetensors.index.json")) as f:
        index = json.load(f)
    if sorted(index) != ["metadata", "weight_map"]:
        errors.append("index keys %s" % sorted(index))
    wm = index["weight_map"]
    if list(wm) != sorted(wm):
        errors.append("the weight_map's names are not sorted")
    total = 0
    seen = {}
    order = []
    alone = 0
    for fn in shards:
        path = os.path.join(sharded, fn)
        meta, forder, tensors = st_read.read_raw(path)
        if meta.get("format") != "pt":
            errors.append("%s: metadata %s" % (fn, meta))
        size = os.path.getsize(path)
        if size > limit and len(tensors) != 1:
            errors.append("%s: %d bytes over the limit %d with %d tensors" % (fn, size, limit, len(tensors)))
        if size > limit:
            alone += 1
        if not tensors:
            errors.append("%s: no tensors" % fn)
        for name in forder:
            if name in seen:
                errors.append("%s: '%s' also in %s" % (fn, name, seen[name]))
            seen[name] = fn
            order.append(name)
            if wm.get(name) != fn:
                errors.append("weight_map['%s'] is %s, the tensor is in %s" % (name, wm.get(name), fn))
            if name not in ref:
                errors.append("%s: '%s' is not in the single file" % (fn, name))
            elif tensors[name] != ref[name]:
                errors.append("%s: '%s' differs from the single file's (dtype, shape or bytes)" % (fn, name))
            total += len(tensors[name][2])
    if order != ref_order:
        errors.append("the shards' tensors are not the single file's, in its order")
    if sorted(wm) != sorted(ref):
        errors.append("the weight_map names %d tensors, the single file holds %d" % (len(wm), len(ref)))
    if index["metadata"].get("total_size") != total or total != ref_total:
        errors.append("total_size %s, the shards' tensors %d bytes, the single file's %d"
                      % (index["metadata"].get("total_size"), total, ref_total))
    if alone_wanted and alone == 0:
        errors.append("no tensor larger than the limit has a file alone")
    with open(os.path.join(sharded, "config.json")) as a, open(os.path.join(single, "config.json")) as b:
        if a.read() != b.read():
            errors.append("config.json differs from the single export's")
    try:  # optional: safetensors' own reader, when installed
        import numpy  # noqa: F401
        from safetensors import safe_open
    except ImportError:
        safe_open = None
    if safe_open is not None:
        for fn in shards:
            with safe_open(os.path.join(sharded, fn), framework="np") as f:
                for name in f.keys():
                    if name in ref and f.get_tensor(name).tobytes() != ref[name][2]:
                        errors.append("safetensors reads '%s' in %s differently" % (name, fn))
    for e in errors:
        print("FAIL: %s: %s" % (sharded, e), file=sys.stderr)
    if errors:
        sys.exit(1)
    print("%s: %d files, %d tensors, %d bytes, %d alone over the limit %d%s" % (
        sharded, n, len(order), total, alone, limit, " (safetensors read it too)" if safe_open else ""))


if __name__ == "__main__":
    main()
