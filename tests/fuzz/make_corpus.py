#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets: tests/fuzz/corpus/<target>/seed_*.

The seeds are small valid inputs (and a few near misses) of each format, so
the fuzzer starts from inputs that reach deep into the readers. Run it again
after changing a format; regression inputs (regress_*) found by
fuzzing sit next to the seeds and are kept by hand, not written here.
"""
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(data)


def json_seeds():
    put("json", "state", '{"format": "hyperpar-ckpt-1", "step": 20, "args": ["--lr", "3e-4"],\n'
        ' "data": {"position": 4096, "epoch": 1, "rng": "0x0123456789abcdef", "n_tokens": 65536}}\n')
    put("json", "numbers", "[0, -0, 1, -1, 3.25, -2.5e-3, 1E+10, 9223372036854775807, "
        "-9223372036854775808, 9223372036854775808, 1e308, 123456789012345678901234567890]")
    put("json", "strings", r'{"a": "plain", "esc": "q\" b\\ s\/ \b\f\n\r\t", "u": "\u00e9\u4e2d\ud83d\ude00",'
        r' "nul": "x\u0000y", "": ""}')
    put("json", "nested", '{"a": [[], {}, [null, true, false], {"b": {"c": [1, [2, [3]]]}}]}')
    put("json", "safetensors_header", '{"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", '
        '"shape": [2, 3], "data_offsets": [0, 24]}}')
    put("json", "scalar", ' "just a string" ')
    put("json", "bad_dup", '{"k": 1, "k": 2}')


def config_seeds():
    put("config", "train", "# a training run\n"
        "model = gpt2-small\n"
        "lr = 3e-4   # the peak\n"
        "steps = 100\n"
        "grad-clip = 1.0\n"
        "muon = yes\n"
        "ckpt.dir = \"runs/a # not a comment\"\n"
        "name = \"tab\\there \\\"quoted\\\" \\\\ \\n\"\n"
        "\n"
        "   warmup_steps=10\r\n"
        "flag = off\n")
    put("config", "numbers", "a = -9223372036854775808\nb = 99999999999999999999\nc = 1e400\nd = nan\ne = 0x10\n"
        "f = TRUE\ng = 0\n")
    put("config", "bad_key", "ok = 1\nbad key = 2\n")
    put("config", "twice", "k = 1\nk = 2\n")


def plan_seeds():
    put("plan", "dp_tp", "# GPT-2, data x tensor parallel\n"
        "mesh: dp=2,tp=2\n"
        "input tokens: S(0)@dp\n"
        "input targets: S(0)@dp,R@tp\n"
        "param h.*.attn.qkv.weight: S(1)@tp\n"
        "param h.*.attn.qkv.bias: S(0)@tp\n"
        "param h.*.attn.proj.weight: S(0)@tp\n"
        "param h.*.mlp.fc.*: S(0)@tp\n"
        "param h.0.*: P(sum)@dp\n"
        "param wte: R\n")
    put("plan", "fsdp", "mesh: fsdp=4\nparam *: S(0)@fsdp\ninput *: S(0)@fsdp\n")
    put("plan", "three_axes", "  mesh : pp=1, dp=2 ,tp=2   # spaces\n"
        "param [a-c]?.w: S(0)@dp,S(0)@tp\n"
        "param x: P(avg)@dp,P(max)@tp\r\n"
        "input tokens: R@pp,S(1)@tp\n")
    put("plan", "bad_layout", "mesh: dp=2\nparam w: S(9)@tp\n")
    put("plan", "fsdp_units", "mesh: dp=4\n"
        "fsdp: shard=dp level=2 reshard=off prefetch=2 reduce=bf16 style=fsdp2\n"
        "unit block0: h.0.* h.1.*\n"
        "unit root: wte wpe lnf.*\n"
        "param wte: S(0)@dp\n")
    put("plan", "hsdp", "mesh: rep=2,dp=2,tp=2\n"
        "unit  first :h.0.*\n"
        "fsdp: shard=dp replicate=rep   # HSDP\n"
        "param h.*.mlp.fc.weight: S(0)@tp\n")
    put("plan", "fsdp_bad", "mesh: dp=2\nfsdp: shard=dp replicate=dp level=4\nunit u:\n")


def safetensors(tensors, metadata=None, pad=True):
    """tensors: (name, dtype, shape, raw bytes)."""
    import json
    header, off, body = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        body += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + body


def safetensors_seeds():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    put("safetensors", "three", safetensors([
        ("w", "F32", [2, 3], f32),
        ("b", "BF16", [4], struct.pack("<4H", 0x3f80, 0x4000, 0xbf80, 0x7fc0)),
        ("ids", "I32", [1, 2], struct.pack("<2i", 7, -1)),
    ], {"format": "pt", "step": "3"}))
    put("safetensors", "others", safetensors([
        ("half", "F16", [2], b"\x00\x3c\x00\x40"),
        ("scalar", "F32", [], struct.pack("<f", 0.5)),
        ("empty", "I32", [0, 5], b""),
        ("u8", "U8", [3], b"\x01\x02\x03"),
    ], pad=False))
    put("safetensors", "none", safetensors([]))
    put("safetensors", "gap", struct.pack("<Q", 8) + b"{}      " + b"x")


def llmc(version, maxT, V, L, NH, C, Vp, fill):
    h = [20240326, version, maxT, V, L, NH, C, Vp] + [0] * 248
    n = Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C
    if version == 3:
        body = struct.pack("<%df" % n, *[fill(i) for i in range(n)])
    else:
        body = struct.pack("<%dH" % n, *[(struct.unpack("<I", struct.pack("<f", fill(i)))[0] >> 16) for i in range(n)])
    return struct.pack("<256i", *h) + body


def llmc_seeds():
    put("llmc", "fp32", llmc(3, 2, 3, 1, 1, 2, 4, lambda i: 0.01 * i))
    put("llmc", "bf16", llmc(5, 4, 5, 2, 2, 2, 8, lambda i: -0.5 + 0.125 * (i % 9)))
    put("llmc", "tiny", llmc(3, 1, 1, 1, 1, 1, 1, lambda i: 1.0))
    put("llmc", "short", llmc(3, 2, 3, 1, 1, 2, 4, lambda i: 0.0)[:-4])


def shard(tokens):
    return struct.pack("<256i", 20240520, 1, len(tokens), *([0] * 253)) + struct.pack("<%dH" % len(tokens), *tokens)


def data_prefix(kind=0, shuffle=0, split=0, two=0, txt=0, B=1, T=4, world=1, rank=0, vocab=50257, seed=0, share=128,
                val=64):
    """The settings prefix of fuzz_data.c (val: val_fraction = (val + 1) / 258)."""
    flags = kind | shuffle << 2 | split << 3 | two << 5 | txt << 6
    v = vocab - 1
    return bytes([flags, B - 1, T - 1, (world - 1) | rank << 4, v & 0xff, v >> 8, seed, share, val])


def data_seeds():
    toks = [(i * 7919) % 50257 for i in range(64)]
    put("data", "shard", data_prefix(B=2, T=4) + shard(toks))
    put("data", "shard_shuffle_world2", data_prefix(shuffle=1, split=1, B=1, T=3, world=2, rank=1, seed=5, val=20)
        + shard(toks))
    # two equal shards: a share of 128/256 cuts the bytes between them
    put("data", "two_shards", data_prefix(two=1, split=2, B=1, T=2, share=128) + shard(toks[:32]) + shard(toks[32:]))
    put("data", "text", data_prefix(kind=2, txt=1, B=2, T=5, vocab=256, seed=9) + b"hello, fuzzing world: some text\n" * 3)
    put("data", "text_small_vocab", data_prefix(kind=0, txt=1, B=1, T=8, vocab=128) + b"abcdefghijklmnopqrstuvwxyz" * 2)
    put("data", "bad_magic", data_prefix(kind=1) + struct.pack("<256i", 1234, 1, 4, *([0] * 253)) + b"\0" * 8)


def gpt2_byte_chars():
    """GPT-2's byte-to-character mapping: printable Latin-1 stays, the rest from U+0100."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


def bpe_seeds():
    """fuzz_bpe.c: a mode byte (1: tokenizer.json), then the file(s) and a text split by "\\n@@\\n"."""
    import json
    chars = gpt2_byte_chars()
    vocab = {chars[b]: b for b in range(256)}
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("\u0120", "hello"), ("a", "a")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    vj = json.dumps(vocab, ensure_ascii=False)
    mt = "#version: 0.2\n" + "".join("%s %s\n" % m for m in merges)
    text = "hello hello aaa  \n\n x I'M caf\u00e9 \U0001F44D\U0001F3FD"
    put("bpe", "files", b"\0" + (vj + "\n@@\n" + mt + "\n@@\n" + text).encode())
    tj = {"version": "1.0", "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
          "added_tokens": [{"id": len(vocab) - 1, "content": "<|endoftext|>", "special": True}],
          "model": {"type": "BPE", "vocab": vocab, "merges": [" ".join(m) for m in merges[:3]] + [list(m) for m in merges[3:]]}}
    put("bpe", "tokenizer_json", b"\1" + (json.dumps(tj, ensure_ascii=False) + "\n@@\n" + text).encode())
    put("bpe", "bad_missing_byte", b"\0" + (json.dumps({chars[b]: b for b in range(255)}) + "\n@@\n").encode())
    put("bpe", "bad_merge", b"\0" + (vj + "\n@@\n#version: 0.2\nh x\n").encode())
    put("bpe", "text_only", b"\0" + "Hello world's  \n\n x \u0928\u092e\u0938\u094d\u0924\u0947 \r\n\t".encode())


def ckpt_pieces_seeds():
    # fuzz_ckpt_pieces: k, k data edits (file, offset lo, offset hi, xor), then "FROM\0TO\0" patches of
    # pieces.json. Its checkpoint: rank0.bin holds a[0,12) at 0, c rows 0-1 at 64, b at 128; rank1.bin
    # a[12,32) at 0, c rows 2-3 at 128, its trailer at 192.
    def patches(*pairs):
        return b"".join(f.encode() + b"\0" + t.encode() + b"\0" for f, t in pairs)
    put("ckpt_pieces", "plain", b"\0")
    put("ckpt_pieces", "flip_c0", bytes([1, 0, 69, 0, 0x10]))
    put("ckpt_pieces", "flip_padding", bytes([1, 0, 50, 0, 0xff]))
    put("ckpt_pieces", "flip_trailer", bytes([1, 1, 200, 0, 1]))
    put("ckpt_pieces", "same_bytes", b"\0" + patches(('"offset":64,"start":[0,0]', '"offset":0,"start":[0,0]')))
    put("ckpt_pieces", "moved", b"\0" + patches(('"file":0,"offset":64,"start":[0,0]', '"file":1,"offset":128,"start":[0,0]'),
                                                ('"file":1,"offset":128,"start":[2,0]', '"file":0,"offset":64,"start":[2,0]')))
    put("ckpt_pieces", "swapped", b"\0" + patches(('"name":"a"', '"name":"x"'), ('"name":"c"', '"name":"a"'),
                                                  ('"name":"x"', '"name":"c"')))
    put("ckpt_pieces", "format1", b"\0" + patches(("hyperpar-sharded-2", "hyperpar-sharded-1")))
    put("ckpt_pieces", "step", b"\0" + patches(('"step":3', '"step":4')))
    put("ckpt_pieces", "crc", b"\0" + patches(('"crc32c":"', '"crc32c":"0')))


def main():
    ckpt_pieces_seeds()
    bpe_seeds()
    json_seeds()
    config_seeds()
    plan_seeds()
    safetensors_seeds()
    llmc_seeds()
    data_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
