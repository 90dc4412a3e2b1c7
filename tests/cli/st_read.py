"""A safetensors file read without the safetensors package, for the command-line tests' checkers (hf_check.py,
hf_shard_check.py): the header's metadata, the tensors in file order, each as (dtype, shape, raw bytes), and
the raw bytes of an F32 or BF16 tensor as Python floats."""
import json
import struct


def read_raw(path):
    """(metadata, names in file order, {name: (dtype, shape, bytes)})"""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    meta = head.pop("__metadata__", {})
    order = sorted(head, key=lambda k: head[k]["data_offsets"][0])
    tensors = {}
    for name in order:
        b, e = head[name]["data_offsets"]
        tensors[name] = (head[name]["dtype"], head[name]["shape"], data[b:e])
    return meta, order, tensors


def floats(name, dtype, raw):
    """An F32 or BF16 tensor's values; any other dtype ends the check naming the tensor."""
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if dtype == "BF16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack("<%dH" % (len(raw) // 2), raw)]
    raise SystemExit("%s: unexpected dtype %s" % (name, dtype))
