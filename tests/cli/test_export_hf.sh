# hyperpar export --hf (issue 27): a checkpoint's weights as a Hugging Face model directory — GPT-2 (bf16) and
# Llama (fp32) checked without torch by hf_check.py: config.json, every tensor's name, shape, dtype and value
# (cut, transposed, split), and the query/key rows' RoPE permutation keeping attention's scores equal under
# Hugging Face's rotate_half; bad input: an existing target, a model with no Hugging Face layout here, shared
# experts (Mixtral has none), a bad dtype.
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
finish
