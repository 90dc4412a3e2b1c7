# hyperpar export --hf (issue 27): a checkpoint's weights as a Hugging Face model directory — GPT-2 (bf16) and
# Llama (fp32) checked without torch by hf_check.py: config.json, every tensor's name, shape, dtype and value
# (cut, transposed, split), and the query/key rows' RoPE permutation keeping attention's scores equal under
# Hugging Face's rotate_half; bad input: an existing target, a model with no Hugging Face layout here, shared
# experts (Mixtral has none), a bad dtype. --init-hf reads such a directory back: Llama and Mixtral (fp32) and GPT-2
# (bf16, its shape from config.json) start a run whose checkpoint exports to the same bytes (a step at lr 1e-30
# moves no weight); a missing tensor, a tensor of the wrong shape, an unknown dtype, a config.json that is not
# the preset's and a model of another family are one-line errors naming the directory and the tensor or key.
# --max-shard-size writes transformers' shards and index past the limit (checked by hf_shard_check.py and read
# back to the same bytes); a bad size is a one-line error naming the flag.
. "$(dirname "$0")/lib.sh"
chk="$(dirname "$0")/hf_check.py"
ck="--batch 2 --seq 16 --steps 3 --val-every 0 --val-steps 1 --run-dir none"
"$HP" train --model llama-tiny $ck --ckpt-dir ck_llama >/dev/null 2>&1 || fail "llama-tiny run failed"
"$HP" train --layers 2 --heads 2 --channels 32 $ck --ckpt-dir ck_gpt2 >/dev/null 2>&1 || fail "gpt2 run failed"
"$HP" train --model moe-tiny $ck --ckpt-dir ck_moe >/dev/null 2>&1 || fail "moe-tiny run failed"
"$HP" train --model pangu-tiny $ck --ckpt-dir ck_pangu >/dev/null 2>&1 || fail "pangu-tiny run failed"
"$HP" export --ckpt ck_llama --hf hf_llama >out.txt 2>&1 || fail "llama export: $(cat out.txt)"
python3 "$chk" hf_llama ck_llama llama || fail "llama export: the check failed"
"$HP" export --ckpt ck_gpt2 --hf hf_gpt2 --hf-dtype bf16 >out.txt 2>&1 || fail "gpt2 export: $(cat out.txt)"
python3 "$chk" hf_gpt2 ck_gpt2 gpt2 || fail "gpt2 export: the check failed"
[ ! -e hf_llama.tmp ] && [ ! -e hf_gpt2.tmp ] || fail "a temporary directory was left"
expect_error "already exists" "$HP" export --ckpt ck_llama --hf hf_llama
expect_error "shared experts" "$HP" export --ckpt ck_moe --hf hf_moe
expect_error "no Hugging Face layout" "$HP" export --ckpt ck_pangu --hf hf_pangu
expect_error "--hf-dtype must be fp32 or bf16" "$HP" export --ckpt ck_llama --hf hf_x --hf-dtype fp16
[ ! -e hf_moe ] && [ ! -e hf_pangu ] && [ ! -e hf_x ] || fail "a failed export left a directory"
# --init-hf: back in, bit for bit
one="--batch 2 --seq 16 --steps 1 --val-every 0 --val-steps 1 --run-dir none --lr 1e-30"
"$HP" train --model mixtral-tiny $ck --ckpt-dir ck_mix >/dev/null 2>&1 || fail "mixtral-tiny run failed"
"$HP" export --ckpt ck_mix --hf hf_mix >out.txt 2>&1 || fail "mixtral export: $(cat out.txt)"
grep -q '"num_local_experts": 8, "num_experts_per_tok": 2' hf_mix/config.json || fail "mixtral config: $(cat hf_mix/config.json)"
for m in llama mix gpt2; do
  model=$([ $m = llama ] && echo llama-tiny || ([ $m = mix ] && echo mixtral-tiny || echo gpt2))
  dt=$([ $m = gpt2 ] && echo bf16 || echo fp32)
  "$HP" train --model $model $one --init-hf hf_$m --ckpt-dir ck_back_$m >out.txt 2>&1 || fail "--init-hf hf_$m: $(tail -2 out.txt)"
  "$HP" export --ckpt ck_back_$m --hf hf_back_$m --hf-dtype $dt >out.txt 2>&1 || fail "export back $m: $(cat out.txt)"
  cmp -s hf_$m/model.safetensors hf_back_$m/model.safetensors || fail "$m: the weights read with --init-hf differ"
done
# --max-shard-size: transformers' sharded layout past the limit (hf_shard_check.py: the names, the index's
# total_size and weight_map, every tensor once and equal to the single file's, no file over the limit but a
# single-tensor one), read back with --init-hf and exported again whole: the single export's bytes
shard_case() { # NAME CKPT SINGLE MODEL SIZE BYTES MIN_FILES [alone]
  local name=$1 ck=$2 single=$3 model=$4 size=$5 bytes=$6 min=$7 alone=${8:-}
  "$HP" export --ckpt "$ck" --hf "$name" --max-shard-size "$size" >out.txt 2>&1 || { fail "$name: $(cat out.txt)"; return; }
  python3 "$(dirname "$0")/hf_shard_check.py" "$name" "$single" "$bytes" "$min" $alone || fail "$name: the check failed"
  "$HP" train --model "$model" $one --init-hf "$name" --ckpt-dir "ck_$name" >out.txt 2>&1 || { fail "--init-hf $name: $(tail -2 out.txt)"; return; }
  "$HP" export --ckpt "ck_$name" --hf "${name}_whole" >out.txt 2>&1 || { fail "export back $name: $(cat out.txt)"; return; }
  cmp -s "$single/model.safetensors" "${name}_whole/model.safetensors" || fail "$name: the sharded weights read back differ"
}
shard_case hf_mix_shards ck_mix hf_mix mixtral-tiny 256KiB 262144 7          # 1.9 MB in 256 KiB files
shard_case hf_llama_shards ck_llama hf_llama llama-tiny 60000 60000 10 alone # the 64 KiB vocabulary tables alone
shard_case hf_mix_bits ck_mix hf_mix mixtral-tiny 4Mb 500000 4               # transformers' bits: 4 Mbit = 500 kB
# at or above the model's size: one model.safetensors, the default's bytes
"$HP" export --ckpt ck_llama --hf hf_llama_1g --max-shard-size 1gb >out.txt 2>&1 || fail "1gb: $(cat out.txt)"
cmp -s hf_llama/model.safetensors hf_llama_1g/model.safetensors || fail "--max-shard-size 1gb: not the single file"
sz=$(stat -c %s hf_llama/model.safetensors)
"$HP" export --ckpt ck_llama --hf hf_llama_exact --max-shard-size "$sz" >out.txt 2>&1 || fail "$sz: $(cat out.txt)"
cmp -s hf_llama/model.safetensors hf_llama_exact/model.safetensors || fail "--max-shard-size $sz: not the single file"
"$HP" export --ckpt ck_llama --hf hf_llama_less --max-shard-size $((sz - 1)) >out.txt 2>&1 || fail "$((sz - 1)): $(cat out.txt)"
[ -e hf_llama_less/model-00002-of-00002.safetensors ] && [ ! -e hf_llama_less/model.safetensors ] ||
  fail "--max-shard-size $((sz - 1)): not two shards: $(ls hf_llama_less)"
for bad in 5XB 0 0KB -5 5.5GB GB "" 99999999999TB; do
  expect_error "--max-shard-size: '$bad'" "$HP" export --ckpt ck_llama --hf hf_bad --max-shard-size "$bad"
done
[ ! -e hf_bad ] && [ ! -e hf_bad.tmp ] || fail "a bad --max-shard-size left a directory"
# a GPT-2 directory sets the shape flags (2 layers, 2 heads, 32 channels here)
grep -q "L=2 NH=2 C=32" <("$HP" train $one --init-hf hf_gpt2 --ckpt-dir none 2>&1) || fail "--init-hf gpt2: the shape"
# bad directories
python3 - <<'PY' || fail "making the bad directories failed"
import os, shutil
def patch(src, dst, old, new, cfg=None):
    shutil.copytree(src, dst)
    p = os.path.join(dst, "model.safetensors")
    b = open(p, "rb").read()
    n = int.from_bytes(b[:8], "little")
    h = b[8:8 + n].replace(old, new)
    assert len(h) == n
    open(p, "wb").write(b[:8] + h + b[8 + n:])
    if cfg:
        c = os.path.join(dst, "config.json")
        text = open(c).read().replace(*cfg)
        open(c, "w").write(text)
patch("hf_llama", "bad_missing", b"lm_head.weight", b"lm_head.weighx")
patch("hf_gpt2", "bad_dtype", b'"BF16"', b'"F16" ', None)
patch("hf_gpt2", "bad_shape", b"", b"", ('"n_positions": 128', '"n_positions": 64'))
patch("hf_llama", "bad_config", b"", b"", ('"hidden_size": 64', '"hidden_size": 128'))
# hf_llama as two shards and an index (as large checkpoints come; no checksums: another tool's files)
import json
b = open("hf_llama/model.safetensors", "rb").read()
n = int.from_bytes(b[:8], "little")
hdr = json.loads(b[8:8 + n])
hdr.pop("__metadata__", None)
names = sorted(hdr, key=lambda k: hdr[k]["data_offsets"][0])
os.mkdir("hf_split")
shutil.copy("hf_llama/config.json", "hf_split/config.json")
wm = {}
for part, sel in enumerate((names[:len(names) // 2], names[len(names) // 2:])):
    fn = "model-%05d-of-00002.safetensors" % (part + 1)
    h, data = {}, b""
    for k in sel:
        s0, s1 = hdr[k]["data_offsets"]
        h[k] = dict(hdr[k], data_offsets=[len(data), len(data) + s1 - s0])
        data += b[8 + n + s0:8 + n + s1]
        wm[k] = fn
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    open("hf_split/" + fn, "wb").write(len(hb).to_bytes(8, "little") + hb + data)
json.dump({"metadata": {}, "weight_map": wm}, open("hf_split/model.safetensors.index.json", "w"))
os.mkdir("bad_nofile")
shutil.copy("hf_llama/config.json", "bad_nofile/config.json")
PY
"$HP" train --model llama-tiny $one --init-hf hf_split --ckpt-dir ck_split >out.txt 2>&1 || fail "--init-hf hf_split: $(tail -2 out.txt)"
"$HP" export --ckpt ck_split --hf hf_back_split >out.txt 2>&1 || fail "export back split: $(cat out.txt)"
cmp -s hf_llama/model.safetensors hf_back_split/model.safetensors || fail "the sharded directory's weights differ"
lt="--batch 2 --seq 8 --steps 1 --val-every 0 --val-steps 1 --run-dir none"
expect_error "bad_missing: missing tensor 'lm_head.weight'" "$HP" train --model llama-tiny $lt --init-hf bad_missing
expect_error "bad_dtype: tensor 'transformer.wte.weight' has dtype F16 (F32 and BF16 are read)" "$HP" train $lt --init-hf bad_dtype
expect_error "bad_shape: tensor 'transformer.wpe.weight' is [128, 32], expected [64, 32]" "$HP" train $lt --init-hf bad_shape
expect_error "bad_config/config.json: hidden_size is 128, --model llama-tiny has 64" "$HP" train --model llama-tiny $lt --init-hf bad_config
expect_error "--init-hf hf_llama holds a llama model; --model gpt2 is gpt2" "$HP" train $lt --init-hf hf_llama
expect_error "bad_nofile: no model.safetensors or model.safetensors.index.json" "$HP" train --model llama-tiny $lt --init-hf bad_nofile
finish
