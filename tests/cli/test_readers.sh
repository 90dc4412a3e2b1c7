# The non-checkpoint readers and exporters (issue 22, items 1, 5 and 8):
# - every reader refuses a FIFO and a device (a symlink to /dev/zero) without
#   waiting on it or reading it: --config, --init (train and export), --plan,
#   and report's inputs (run.json, config.json, plan.json, machine.json,
#   metrics.jsonl, a trace, bench JSON); `timeout 10` turns a regression (a
#   blocked open, /dev/zero read until memory runs out) into a failure, not a
#   hang. Reads are bounded: an oversized (sparse) settings or plan file is
#   refused by its size, unread.
# - export and sample refuse non-finite weights (an llm.c file or a
#   checkpoint holding a NaN or an Inf), naming the tensor and the element,
#   and write nothing.
# - a UTF-8 byte order mark is named (it read "invalid character '\357'");
#   a stray non-ASCII byte is shown as "byte 0x..", not echoed raw.
# - a plan of 100k rules whose first rule matches nothing reports that rule
#   (the check for repeated rules was quadratic: 28 s before the message).
. "$(dirname "$0")/lib.sh"
T=(timeout 10)
S=(--layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --threads 1)
mkfifo fifo
ln -s /dev/zero zero

# ---- item 1: FIFOs and devices
for f in fifo zero; do
  kind=$([ "$f" = fifo ] && echo "a FIFO" || echo "a device")
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" train "${S[@]}" --steps 1 --config "$f"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" sample --config "$f"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" train "${S[@]}" --steps 1 --init "$f"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" export --init "$f" --llmc out.bin
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" plan --init "$f"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" train "${S[@]}" --steps 1 --plan "$f"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" plan --plan "$f" "${S[@]}"
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" report "$f" -o r.html
  expect_error "$f: not a regular file ($kind)" "${T[@]}" "$HP" report --bench "$f" -o r.html
done
[ ! -e out.bin ] || fail "export wrote out.bin from a FIFO or a device"
# report's inputs inside a run directory, each in turn a FIFO and /dev/zero
"$HP" train "${S[@]}" --steps 2 --run-dir run --trace on --trace-steps 1 >/dev/null 2>err.txt ||
  fail "training the run directory: $(cat err.txt)"
"$HP" report run -o r.html >/dev/null 2>err.txt || fail "report of the good run: $(cat err.txt)"
for name in run.json config.json plan.json machine.json metrics.jsonl trace.rank0.json; do
  [ -f "run/$name" ] || { fail "the run directory has no $name"; continue; }
  for f in fifo zero; do
    kind=$([ "$f" = fifo ] && echo "a FIFO" || echo "a device")
    rm -rf r2 && cp -r run r2 && rm "r2/$name"
    if [ "$f" = fifo ]; then mkfifo "r2/$name"; else ln -s /dev/zero "r2/$name"; fi
    expect_error "r2/$name: not a regular file ($kind)" "${T[@]}" "$HP" report r2 -o r.html
  done
done
# bounded: a sparse 1 GiB settings file and a 100 MiB plan are refused by their size, unread
truncate -s 1G huge.cfg
expect_error "huge.cfg: 1073741824 bytes, above the limit of 16777216" "${T[@]}" "$HP" train "${S[@]}" --config huge.cfg
truncate -s 100M huge.plan
expect_error "huge.plan: 104857600 bytes, above the limit of 67108864 for a plan file" \
  "${T[@]}" "$HP" plan --plan huge.plan "${S[@]}"

# ---- item 5: non-finite weights are refused by export and sample
"$HP" train "${S[@]}" --steps 1 --ckpt-dir ck >/dev/null 2>err.txt || fail "training ck: $(cat err.txt)"
"$HP" export --ckpt ck --llmc good.bin >/dev/null 2>err.txt || fail "export of a good checkpoint: $(cat err.txt)"
# good.bin with a NaN in wte (element 100) and one with +inf in wpe (element 3)
python3 - good.bin nan.bin inf.bin <<'PY' || fail "patching good.bin"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
h = struct.unpack("<256i", b[:1024])
Vp, C = h[7], h[6]
n = bytearray(b); n[1024 + 4 * 100:1024 + 4 * 101] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(bytes(n))
i = bytearray(b); o = 1024 + 4 * (Vp * C + 3); i[o:o + 4] = struct.pack("<f", float("inf"))
open(sys.argv[3], "wb").write(bytes(i))
PY
expect_error "nan.bin: parameter 'wte' holds a non-finite value (nan at element 100)" \
  "$HP" export --init nan.bin --llmc out.bin
expect_error "inf.bin: parameter 'wpe' holds a non-finite value (inf at element 3)" \
  "$HP" export --init inf.bin --llmc out.bin
expect_error "inf.bin: parameter 'wpe' holds a non-finite value (inf at element 3)" \
  "$HP" export --init inf.bin --llmc out.bin --llmc-dtype bf16
[ ! -e out.bin ] || fail "export wrote out.bin from non-finite weights"
# a checkpoint whose model.safetensors holds a NaN at element 7 of h.0.attn.qkv.weight (its
# crc32c in __metadata__ rewritten in place to match, as a NaN saved by some other writer would be)
cp -r ck nck
python3 - nck/step_000001/model.safetensors <<'PY' || fail "patching the checkpoint"
import json, struct, sys
def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF
p, name = sys.argv[1], "h.0.attn.qkv.weight"
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
head = json.loads(b[8:8 + n])
t = head[name]
assert t["dtype"] == "F32", t
a, e = 8 + n + t["data_offsets"][0], 8 + n + t["data_offsets"][1]
old = head.get("__metadata__", {}).get("crc32c." + name)
assert old is None or old == "%08x" % crc32c(b[a:e]), "the checksum is not crc32c of the tensor's bytes"
b[a + 4 * 7:a + 4 * 8] = struct.pack("<f", float("nan"))
if old is not None:
    k = b.index(('"crc32c.%s":"%s"' % (name, old)).encode(), 8, 8 + n)
    k += len('"crc32c.%s":"' % name)
    b[k:k + 8] = ("%08x" % crc32c(b[a:e])).encode()
open(p, "wb").write(bytes(b))
PY
expect_error "nck/step_000001: parameter 'h.0.attn.qkv.weight' holds a non-finite value (nan at element 7)" \
  "$HP" export --ckpt nck --llmc out.bin
[ ! -e out.bin ] || fail "export wrote out.bin from a checkpoint holding a NaN"
expect_error "nck/step_000001: parameter 'h.0.attn.qkv.weight' holds a non-finite value (nan at element 7)" \
  "$HP" sample --ckpt nck --tokens 4
[ ! -s out.txt ] || fail "sample printed text from a checkpoint holding a NaN: $(head -c 80 out.txt)"
"$HP" sample --ckpt ck --tokens 4 >/dev/null 2>err.txt || fail "sample of the good checkpoint: $(cat err.txt)"

# ---- item 8: a byte order mark is named; stray bytes are not echoed raw
printf '\xef\xbb\xbfsteps = 1\n' > bom.cfg
expect_error "bom.cfg:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF)" "$HP" train --config bom.cfg
printf 'steps = 1\nl\xc3\xa9r = 1\n' > utf.cfg
expect_error "utf.cfg:2: invalid byte 0xc3 in key 'l'" "$HP" train --config utf.cfg
grep -q $'\xc3' err.txt && fail "a raw byte of the file reached the message: $(od -c err.txt | head -3)"
printf '\xef\xbb\xbfmesh: dp=2\n' > bom.plan
expect_error "bom.plan:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF)" \
  "$HP" plan --plan bom.plan "${S[@]}"
rm -rf r2 && cp -r run r2 && { printf '\xef\xbb\xbf'; cat run/run.json; } > r2/run.json
expect_error "r2/run.json:1: json: offset 0: the text starts with a UTF-8 byte order mark (bytes EF BB BF)" \
  "$HP" report r2 -o r.html

# ---- item 8: 100k rules, the first of which matches nothing: that rule is reported
# (a quadratic scan takes long enough for the timeout to fail it; the check is the message)
{ echo "mesh: dp=1"; echo "param h.*.attn.qkv.wieght: R"; seq -f "param zz%.0f: R" 1 100000; } > big.plan
expect_error "big.plan:2: param 'h.*.attn.qkv.wieght' matches no parameter of the model (closest: 'h.0.attn.qkv.weight')" \
  timeout 20 "$HP" plan --plan big.plan "${S[@]}"
# the indexed check still finds a repeated rule, naming both places
{ cat big.plan; echo "param zz7: S(0)@dp"; } > dup.plan
expect_error "dup.plan:100003: param 'zz7' repeats the rule at dup.plan:9" timeout 20 "$HP" plan --plan dup.plan "${S[@]}"
# and a settings file's repeated key, among 50k others
{ seq -f "k%.0f = 1" 1 50000; echo "k3 = 2"; } > dup.cfg
expect_error "dup.cfg:50001: key 'k3' given twice (first on line 3)" timeout 20 "$HP" train --config dup.cfg
finish
