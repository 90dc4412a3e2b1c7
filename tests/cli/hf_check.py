"""Checks a Hugging Face directory written by `hyperpar export --hf` against the checkpoint it came from,
without torch: config.json's keys, every tensor's name, shape and dtype, every value (cut, transposed, split
or permuted as the format wants), and that the query/key permutation keeps attention's scores: rotating this
project's q and k with interleaved RoPE pairs and the exported ones with Hugging Face's rotate_half gives the
same q.k for every head and position. Usage: hf_check.py HF_DIR CKPT_DIR gpt2|llama"""
import json
import math
import struct
import sys

import st_read


def read_st(path):
    meta, _, raw = st_read.read_raw(path)
    return meta, {name: (d, shape, st_read.floats(name, d, b)) for name, (d, shape, b) in raw.items()}


def bf16(x):
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
    return struct.unpack("<f", struct.pack("<I", u << 16))[0]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    hf_dir, ck_dir, kind = sys.argv[1:4]
    cfg = json.load(open(hf_dir + "/config.json"))
    meta, hf = read_st(hf_dir + "/model.safetensors")
    if meta.get("format") != "pt":
        fail("metadata format %r" % meta.get("format"))
    import glob
    step = sorted(glob.glob(ck_dir + "/step_*"))[-1]
    _, ours = read_st(step + "/model.safetensors")
    dt = {"float32": "F32", "bfloat16": "BF16"}[cfg["torch_dtype"]]
    conv = bf16 if dt == "BF16" else (lambda x: x)

    def expect(name, shape, vals):
        if name not in hf:
            fail("missing %s" % name)
        d, s, v = hf[name]
        if d != dt or list(s) != list(shape):
            fail("%s: %s %s, expected %s %s" % (name, d, s, dt, shape))
        want = [conv(x) for x in vals]
        if v != want:
            bad = next(i for i in range(len(v)) if v[i] != want[i])
            fail("%s: element %d is %r, expected %r" % (name, bad, v[bad], want[bad]))

    def mat(name):
        return ours[name][2], ours[name][1]

    def rows(vals, cols, r0, n):
        return vals[r0 * cols:(r0 + n) * cols]

    def transpose(vals, r, c):
        return [vals[i * c + j] for j in range(c) for i in range(r)]

    seen = 0
    if kind == "gpt2":
        C, L, V, T = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
        expect("transformer.wte.weight", [V, C], rows(mat("wte")[0], C, 0, V))
        expect("transformer.wpe.weight", [T, C], mat("wpe")[0])
        for i in range(L):
            p, q = "h.%d." % i, "transformer.h.%d." % i
            expect(q + "attn.c_attn.weight", [C, 3 * C], transpose(mat(p + "attn.qkv.weight")[0], 3 * C, C))
            expect(q + "attn.c_attn.bias", [3 * C], mat(p + "attn.qkv.bias")[0])
            expect(q + "attn.c_proj.weight", [C, C], transpose(mat(p + "attn.proj.weight")[0], C, C))
            expect(q + "mlp.c_fc.weight", [C, 4 * C], transpose(mat(p + "mlp.fc.weight")[0], 4 * C, C))
            expect(q + "mlp.c_proj.weight", [4 * C, C], transpose(mat(p + "mlp.proj.weight")[0], C, 4 * C))
            for a, b in (("ln1", "ln_1"), ("ln2", "ln_2")):
                expect(q + b + ".weight", [C], mat(p + a + ".weight")[0])
                expect(q + b + ".bias", [C], mat(p + a + ".bias")[0])
            expect(q + "attn.c_proj.bias", [C], mat(p + "attn.proj.bias")[0])
            expect(q + "mlp.c_fc.bias", [4 * C], mat(p + "mlp.fc.bias")[0])
            expect(q + "mlp.c_proj.bias", [C], mat(p + "mlp.proj.bias")[0])
            seen += 1
        expect("transformer.ln_f.weight", [C], mat("lnf.weight")[0])
        expect("transformer.ln_f.bias", [C], mat("lnf.bias")[0])
        if len(hf) != 4 + 12 * L:
            fail("%d tensors, expected %d" % (len(hf), 4 + 12 * L))
    else:
        C, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
        NH, KV, F = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
        hs, theta = C // NH, cfg["rope_theta"]
        expect("model.embed_tokens.weight", [V, C], rows(mat("tok_embeddings.weight")[0], C, 0, V))
        expect("lm_head.weight", [V, C], rows(mat("output.weight")[0], C, 0, V))
        expect("model.norm.weight", [C], mat("norm.weight")[0])
        for i in range(L):
            p, q = "h.%d." % i, "model.layers.%d." % i
            wq = mat(p + "attn.q.weight")[0]
            kv = mat(p + "attn.kv.weight")[0]
            wk, wv = rows(kv, C, 0, KV * hs), rows(kv, C, KV * hs, KV * hs)
            expect(q + "self_attn.v_proj.weight", [KV * hs, C], wv)
            expect(q + "self_attn.o_proj.weight", [C, C], mat(p + "attn.proj.weight")[0])
            gu = mat(p + "mlp.gate_up.weight")[0]
            expect(q + "mlp.gate_proj.weight", [F, C], rows(gu, C, 0, F))
            expect(q + "mlp.up_proj.weight", [F, C], rows(gu, C, F, F))
            expect(q + "mlp.down_proj.weight", [C, F], mat(p + "mlp.down.weight")[0])
            expect(q + "input_layernorm.weight", [C], mat(p + "attn_norm.weight")[0])
            expect(q + "post_attention_layernorm.weight", [C], mat(p + "mlp_norm.weight")[0])
            hq, hk = hf[q + "self_attn.q_proj.weight"], hf[q + "self_attn.k_proj.weight"]
            if list(hq[1]) != [C, C] or list(hk[1]) != [KV * hs, C]:
                fail("layer %d: q/k shapes %s %s" % (i, hq[1], hk[1]))
            # attention's scores under both RoPE conventions, for a made-up input at a few positions
            x = [math.sin(0.7 * j + i) for j in range(C)]

            def proj(w, n):
                return [sum(w[r * C + j] * x[j] for j in range(C)) for r in range(n)]

            def rope_pairs(v, t):  # this project: pairs (2m, 2m + 1) of each head
                o = list(v)
                for h in range(len(v) // hs):
                    for m in range(hs // 2):
                        a = t * theta ** (-2.0 * m / hs)
                        x0, x1 = v[h * hs + 2 * m], v[h * hs + 2 * m + 1]
                        o[h * hs + 2 * m] = x0 * math.cos(a) - x1 * math.sin(a)
                        o[h * hs + 2 * m + 1] = x0 * math.sin(a) + x1 * math.cos(a)
                return o

            def rope_half(v, t):  # Hugging Face: (m, m + hs/2)
                o = list(v)
                for h in range(len(v) // hs):
                    for m in range(hs // 2):
                        a = t * theta ** (-2.0 * m / hs)
                        x0, x1 = v[h * hs + m], v[h * hs + m + hs // 2]
                        o[h * hs + m] = x0 * math.cos(a) - x1 * math.sin(a)
                        o[h * hs + m + hs // 2] = x1 * math.cos(a) + x0 * math.sin(a)
                return o

            for t in (0, 3, 17):
                qa, ka = rope_pairs(proj(wq, C), t), rope_pairs(proj(wk, KV * hs), t + 2)
                qb, kb = rope_half(proj(hq[2], C), t), rope_half(proj(hk[2], KV * hs), t + 2)
                for h in range(NH):
                    g = h // (NH // KV)
                    sa = sum(qa[h * hs + j] * ka[g * hs + j] for j in range(hs))
                    sb = sum(qb[h * hs + j] * kb[g * hs + j] for j in range(hs))
                    if abs(sa - sb) > 1e-4 * (1 + abs(sa)):
                        fail("layer %d head %d position %d: score %r here, %r in the export" % (i, h, t, sa, sb))
            seen += 1
        if len(hf) != 3 + 9 * L:
            fail("%d tensors, expected %d" % (len(hf), 3 + 9 * L))
    print("%s: %d tensors, %d layers checked (%s)" % (hf_dir, len(hf), seen, dt))


main()
