# llm.c checkpoints: export from a training checkpoint (fp32 and bf16), import
# and export again bit-exactly, start training from one, and reject a corrupt
# one or an unknown --llmc-dtype.
. "$(dirname "$0")/lib.sh"
"$HP" train --layers 2 --heads 2 --channels 64 --batch 2 --seq 32 --steps 3 --ckpt-dir ck >/dev/null 2>&1 || fail "train failed"
"$HP" export --ckpt ck --llmc a.bin >/dev/null || fail "export failed"
"$HP" export --init a.bin --llmc b.bin >/dev/null || fail "re-export failed"
cmp -s a.bin b.bin || fail "llm.c round trip is not bit-exact"
# header: magic 20240326, version 3, maxT 128, V 256, L 2, NH 2, C 64, Vp 256
[ "$(od -An -t d4 -N 32 a.bin | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')" = "20240326 3 128 256 2 2 64 256" ] || fail "llm.c header wrong: $(od -An -t d4 -N 32 a.bin)"
"$HP" train --init a.bin --batch 2 --seq 32 --steps 2 >/dev/null 2>&1 || fail "training from an llm.c file failed"

# bf16 (llm.c version 5): the same header but version 5, half the payload, and
# every parameter the fp32 master weight (a.bin) rounded to nearest even
"$HP" export --ckpt ck --llmc a5.bin --llmc-dtype bf16 >out5.txt 2>err.txt || fail "bf16 export failed: $(cat err.txt)"
grep -q "^wrote a5.bin (bf16, L=2 NH=2 C=64 V=256 Vp=256 maxT=128)$" out5.txt || fail "bf16 export printed: $(cat out5.txt)"
[ "$(od -An -t d4 -N 32 a5.bin | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')" = "20240326 5 128 256 2 2 64 256" ] || fail "bf16 header wrong: $(od -An -t d4 -N 32 a5.bin)"
python3 - a.bin a5.bin <<'PY' || fail "bf16 export: see above (python3 is installed by scripts/setup.sh --tests)"
import struct, sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert a[8:1024] == b[8:1024] and b[4:8] == struct.pack("<i", 5), "header differs beyond the version"
n = (len(a) - 1024) // 4
assert len(b) == 1024 + 2 * n, f"bf16 file is {len(b)} bytes for {n} parameters"
f32 = struct.unpack(f"<{n}I", a[1024:])
b16 = struct.unpack(f"<{n}H", b[1024:])
def rne(u):  # round to nearest, ties to even
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return None  # NaN: checked apart
    hi, lo = u >> 16, u & 0xFFFF
    return hi + (lo > 0x8000 or (lo == 0x8000 and hi & 1))
bad = [i for i in range(n) if rne(f32[i]) is not None and b16[i] != rne(f32[i])]
nan = [i for i in range(n) if rne(f32[i]) is None and (b16[i] & 0x7FFF) <= 0x7F80]
assert not bad, f"{len(bad)} parameters not rounded to nearest even, first at {bad[0]}: {f32[bad[0]]:#x} -> {b16[bad[0]]:#x}"
assert not nan, f"NaN not kept at {nan[0]}"
assert sum(1 for i in range(n) if f32[i] & 0xFFFF) > n // 2, "the fp32 weights are already bf16 (nothing was rounded)"
PY
# read back through --init (widened to fp32) and written again in bf16: the same bytes
"$HP" export --init a5.bin --llmc b5.bin --llmc-dtype bf16 >/dev/null || fail "bf16 re-export failed"
cmp -s a5.bin b5.bin || fail "bf16 llm.c round trip is not bit-exact"
"$HP" export --init a5.bin --llmc c3.bin >/dev/null || fail "bf16 -> fp32 re-export failed"
python3 - a5.bin c3.bin <<'PY' || fail "bf16 widened to fp32: see above"
import struct, sys
b, c = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
n = (len(b) - 1024) // 2
assert len(c) == 1024 + 4 * n and c[4:8] == struct.pack("<i", 3)
assert struct.unpack(f"<{n}I", c[1024:]) == tuple(h << 16 for h in struct.unpack(f"<{n}H", b[1024:])), "not widened exactly"
PY
"$HP" train --init a5.bin --batch 2 --seq 32 --steps 2 >/dev/null 2>&1 || fail "training from a bf16 llm.c file failed"
# the bf16 file is written under a temporary name, synced, then renamed
(HP_FAULT_LOG="$PWD/points.txt" exec "$HP" export --ckpt ck --llmc d5.bin --llmc-dtype bf16) >/dev/null 2>&1 || fail "bf16 export with the fault log failed"
[ "$(grep -v '^write:' points.txt | tr '\n' ' ')" = "create:d5.bin fsync:d5.bin rename:d5.bin dirsync:d5.bin " ] || fail "bf16 export's steps: $(tr '\n' ' ' <points.txt)"
cp a.bin d5.bin
{ (HP_FAULT_AT="rename:d5.bin" exec "$HP" export --ckpt ck --llmc d5.bin --llmc-dtype bf16) >/dev/null 2>&1; } 2>/dev/null && fail "the export was not killed before its rename"
cmp -s a.bin d5.bin || fail "an export killed before its rename changed the file it replaces"
ls | grep -q '^d5\.bin\.tmp-' || fail "the killed export's data was not in a temporary beside d5.bin: $(ls)"
expect_error "--llmc-dtype: unknown llm.c dtype 'fp16' (expected fp32 or bf16)" "$HP" export --ckpt ck --llmc e.bin --llmc-dtype fp16
[ ! -e e.bin ] || fail "a refused export wrote e.bin"
cp a.bin bad.bin; printf '\x01\x02\x03\x04' | dd of=bad.bin bs=1 count=4 conv=notrunc 2>/dev/null
expect_error "bad.bin" "$HP" train --init bad.bin --steps 1
head -c 5000 a.bin > short.bin
expect_error "short.bin" "$HP" export --init short.bin --llmc c.bin
finish
