# Checkpoints verified piece by piece (issue 22, items 1 and 2), on real
# checkpoints of a tiny model (`train --ckpt-format sharded --dp 2 --tp 2`:
# rank0.bin and rank1.bin, and the single format):
# - each corruption is refused by resume, sample, export and ckpt convert with
#   one line naming the tensor, the data file and the piece: two pieces on the
#   same bytes (wpe's piece at wte's offset), a piece moved to another file at
#   a valid offset, two same-shape tensors' names swapped, a flipped byte in
#   rank0.bin, rank1.bin copied in from another step; in the single format a
#   flipped byte in model.safetensors (naming the tensor); nothing is written
#   by a refused export or convert;
# - every checkpoint file (state.json, pieces.json, rank*.bin,
#   model/optim.safetensors, latest) as a FIFO or a symlink to /dev/zero is
#   refused at once by every command (`timeout 10` turns a wait into a failure);
# - checkpoints written before checksums (format 1 pieces.json without
#   trailers, safetensors without __metadata__ checksums) still load, to the
#   same weights.
. "$(dirname "$0")/lib.sh"
T=(timeout 10)
tiny="--layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --threads 1 --run-dir none"
"$HP" train $tiny --steps 4 --ckpt-every 2 --dp 2 --tp 2 --ckpt-dir sh --ckpt-format sharded >train.log 2>&1 ||
  fail "sharded run failed: $(tail -2 train.log)"
"$HP" train $tiny --steps 4 --ckpt-every 2 --ckpt-dir one >train1.log 2>&1 || fail "single run failed: $(tail -2 train1.log)"
S=sh/step_000004
[ -f $S/pieces.json ] && [ -f $S/rank1.bin ] || fail "no sharded checkpoint with two data files"
grep -q '"format":"hyperpar-sharded-2"' $S/pieces.json && grep -q '"crc32c":"' $S/pieces.json &&
  grep -q '"step":4' $S/pieces.json || fail "pieces.json has no checksums or steps: $(head -c 300 $S/pieces.json)"
grep -q '"crc32c.wte":"' one/step_000004/model.safetensors || fail "model.safetensors has no checksums"
"$HP" export --ckpt $S --llmc ref.bin >/dev/null 2>&1 || fail "export of the good checkpoint failed"

# mk NAME: a fresh copy of the good checkpoint; edit NAME PYTHON: run PYTHON on its pieces.json (j)
mk() { rm -rf "$1"; cp -r $S "$1"; }
edit() {
  python3 - "$1/pieces.json" "$2" <<'PY' || fail "editing $1/pieces.json"
import json, sys
p = sys.argv[1]
j = json.load(open(p))
t = {x["name"]: x for x in j["tensors"]}
exec(sys.argv[2])
json.dump(j, open(p, "w"))
PY
}
# refused NAME NEEDLE [REGEX]: every reader refuses checkpoint NAME with NEEDLE (and a message
# matching REGEX), and writes nothing
refused() {
  local cmd
  for cmd in "train --resume $1 --steps 6 --ckpt-dir $1-out" "sample --ckpt $1 --tokens 3" \
             "export --ckpt $1 --llmc $1.bin" "ckpt convert $1 $1-conv"; do
    expect_error "$2" "${T[@]}" "$HP" $cmd
    [ -z "${3:-}" ] || grep -qE -- "$3" err.txt || fail "$cmd: error does not match '$3': $(cat err.txt)"
  done
  [ -e "$1.bin" ] || [ -e "$1-conv" ] || [ -e "$1-out/step_000006" ] && fail "$1: a refused checkpoint was written out"
}
off() { python3 -c "import json,sys; j=json.load(open('$S/pieces.json')); print([t for t in j['tensors'] if t['name']=='$1'][0]['pieces'][$2]['offset'])"; }

# wpe's piece pointed at wte's bytes (offset 0 of rank0.bin)
mk same; edit same 't["wpe"]["pieces"][0]["offset"] = 0'
refused same "same/pieces.json: tensors[1] 'wpe'.pieces[0].offset: its bytes [0, 16384) of rank0.bin overlap those of tensors[0] 'wte'.pieces[0]"
# wte's two pieces moved into each other's file (valid offsets, no overlap)
mk moved; edit moved 'a, b = t["wte"]["pieces"]; a["file"], b["file"], a["offset"], b["offset"] = b["file"], a["file"], b["offset"], a["offset"]'
refused moved "moved/rank1.bin: tensors[0] 'wte'.pieces[0] (bytes [0, 16384)): checksum"
# two tensors of the same shape with their names swapped
mk swapped; edit swapped 't["h.0.ln1.weight"]["name"], t["h.0.ln1.bias"]["name"] = "h.0.ln1.bias", "h.0.ln1.weight"'
refused swapped "swapped/rank0.bin: tensors[" "^hyperpar: swapped/rank0.bin: tensors\[[23]\] 'h\.0\.ln1\.(weight|bias)'\.pieces\[0\] \(bytes \[[0-9]+, [0-9]+\)\): checksum [0-9a-f]{8}, but swapped/pieces.json says"
# a flipped byte in rank0.bin (inside h.0.attn.proj.weight's piece)
mk flip
printf '\x01' | dd of=flip/rank0.bin bs=1 seek=$(( $(off h.0.attn.proj.weight 0) + 9 )) conv=notrunc 2>/dev/null
refused flip "flip/rank0.bin: tensors[6] 'h.0.attn.proj.weight'.pieces[0]"
# rank1.bin of step 2
mk old1; cp sh/step_000002/rank1.bin old1/
refused old1 "old1/rank1.bin: written at step 2 (its trailer), but files[1].step in old1/pieces.json is 4"
# pieces.json of another step than state.json's
mk stepped; cp sh/step_000002/state.json stepped/
refused stepped "stepped/pieces.json: files[0] 'rank0.bin'.step: 4, but state.json says step 2"
# the single format: a flipped byte in model.safetensors (inside wpe)
rm -rf sflip; cp -r one/step_000004 sflip
python3 - sflip/model.safetensors <<'PY' || fail "patching model.safetensors"
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
b[8 + n + json.loads(b[8:8 + n])["wpe"]["data_offsets"][0] + 21] ^= 0x20
open(sys.argv[1], "wb").write(bytes(b))
PY
refused sflip "sflip/model.safetensors: tensor 'wpe': checksum"

# every checkpoint file as a FIFO and as /dev/zero: refused at once by every reader
for kind in fifo zero; do
  word=$([ $kind = fifo ] && echo "a FIFO" || echo "a device")
  for f in $S/state.json $S/pieces.json $S/rank0.bin $S/rank1.bin one/step_000004/model.safetensors \
           one/step_000004/optim.safetensors one/step_000004/state.json; do
    d=sp-$kind; rm -rf $d; cp -r "$(dirname $f)" $d; rm $d/$(basename $f)
    if [ $kind = fifo ]; then mkfifo $d/$(basename $f); else ln -s /dev/zero $d/$(basename $f); fi
    expect_error "$d/$(basename $f): not a regular file ($word)" "${T[@]}" "$HP" train --resume $d --steps 6 --ckpt-dir $d-out
    expect_error "$d/$(basename $f): not a regular file ($word)" "${T[@]}" "$HP" ckpt convert $d $d-conv
    [ "$(basename $f)" = optim.safetensors ] && continue # sample and export read the weights alone
    expect_error "$d/$(basename $f): not a regular file ($word)" "${T[@]}" "$HP" sample --ckpt $d --tokens 3
    expect_error "$d/$(basename $f): not a regular file ($word)" "${T[@]}" "$HP" export --ckpt $d --llmc $d.bin
  done
  rm -rf lt; mkdir lt; cp -r $S lt/step_000004
  if [ $kind = fifo ]; then mkfifo lt/latest; else ln -s /dev/zero lt/latest; fi
  expect_error "lt/latest: not a regular file ($word)" "${T[@]}" "$HP" sample --ckpt lt --tokens 3
  expect_error "lt/latest: not a regular file ($word)" "${T[@]}" "$HP" train --resume lt --steps 6
done

# written before checksums: format 1 (no checksums, steps or trailers) and safetensors without them
mk v1
python3 - v1 <<'PY' || fail "rewriting v1 as format 1"
import json, os, sys
d = sys.argv[1]
j = json.load(open(d + "/pieces.json"))
j["format"] = "hyperpar-sharded-1"
for f in j["files"]:
    del f["crc32c"], f["step"]
    f["bytes"] -= 32
    os.truncate(os.path.join(d, f["name"]), f["bytes"])
for t in j["tensors"]:
    for p in t["pieces"]:
        del p["crc32c"]
json.dump(j, open(d + "/pieces.json", "w"))
PY
"$HP" export --ckpt v1 --llmc v1.bin >/dev/null 2>err.txt || fail "export of a format-1 checkpoint failed: $(cat err.txt)"
cmp -s v1.bin ref.bin || fail "a format-1 checkpoint exports other weights"
# a format-1 pieces.json over data files that still end in their trailers: the checksums were dropped
mk v1t; edit v1t 'j["format"] = "hyperpar-sharded-1"'
expect_error "v1t/rank0.bin: written with checksums (it ends in a trailer), but v1t/pieces.json is of the older format" \
  "$HP" sample --ckpt v1t --tokens 3
rm -rf snone; cp -r one/step_000004 snone
for f in model optim; do
  python3 - snone/$f.safetensors <<'PY' || fail "dropping the checksums of $f.safetensors"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
del h["__metadata__"]
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * (-len(t) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
done
grep -q crc32c snone/model.safetensors && fail "the checksums were not dropped"
"$HP" export --ckpt snone --llmc snone.bin >/dev/null 2>err.txt || fail "export without checksums failed: $(cat err.txt)"
"$HP" export --ckpt one/step_000004 --llmc sone.bin >/dev/null 2>&1 || fail "export of the single checkpoint failed"
cmp -s snone.bin sone.bin || fail "a checkpoint without checksums exports other weights"
"$HP" train --resume snone --steps 5 --ckpt-dir snone-out >/dev/null 2>err.txt || fail "resume without checksums failed: $(tail -1 err.txt)"
finish
