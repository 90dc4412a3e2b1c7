# llm.c checkpoints: export from a training checkpoint, import and export again
# bit-exactly, start training from one, and reject a corrupt one.
. "$(dirname "$0")/lib.sh"
"$HP" train --layers 2 --heads 2 --channels 64 --batch 2 --seq 32 --steps 3 --ckpt-dir ck >/dev/null 2>&1 || fail "train failed"
"$HP" export --ckpt ck --llmc a.bin >/dev/null || fail "export failed"
"$HP" export --init a.bin --llmc b.bin >/dev/null || fail "re-export failed"
cmp -s a.bin b.bin || fail "llm.c round trip is not bit-exact"
# header: magic 20240326, version 3, maxT 128, V 256, L 2, NH 2, C 64, Vp 256
[ "$(od -An -t d4 -N 32 a.bin | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')" = "20240326 3 128 256 2 2 64 256" ] || fail "llm.c header wrong: $(od -An -t d4 -N 32 a.bin)"
"$HP" train --init a.bin --batch 2 --seq 32 --steps 2 >/dev/null 2>&1 || fail "training from an llm.c file failed"
cp a.bin bad.bin; printf '\x01\x02\x03\x04' | dd of=bad.bin bs=1 count=4 conv=notrunc 2>/dev/null
expect_error "bad.bin" "$HP" train --init bad.bin --steps 1
head -c 5000 a.bin > short.bin
expect_error "short.bin" "$HP" export --init short.bin --llmc c.bin
finish
