# Bad flags, configs, data and checkpoints: a one-line error naming the file
# or flag and the problem, and a non-zero exit.
. "$(dirname "$0")/lib.sh"
expect_error "unknown flag '--nope'" "$HP" train --nope 1
expect_error "--lr: expected a number, got 'abc'" "$HP" train --lr abc
expect_error "--batch must be >= 1" "$HP" train --batch 0
printf 'lr = 0.001\nsteps = many\n' > bad.cfg
expect_error "bad.cfg:2: key 'steps'" "$HP" train --config bad.cfg
printf 'lr = 0.001\nbogus = 1\n' > bad2.cfg
expect_error "bad2.cfg:2: key 'bogus': unknown setting" "$HP" train --config bad2.cfg
printf 'this line has no equals sign\n' > bad3.cfg
expect_error "bad3.cfg:1" "$HP" train --config bad3.cfg
expect_error "missing.cfg" "$HP" train --config missing.cfg
# token shards: bad magic, wrong size, token >= V, shorter than one batch
header() { # magic version count
  perl -e 'print pack("l<*", $ARGV[0], $ARGV[1], $ARGV[2], (0) x 253)' "$1" "$2" "$3"; }
{ header 20240520 1 1000; perl -e 'print pack("S<*", map { $_ % 200 } 0..999)'; } > good.bin
{ header 12345 1 1000; perl -e 'print pack("S<*", (1) x 1000)'; } > magic.bin
expect_error "magic.bin" "$HP" train --data magic.bin --vocab 256 --steps 1
{ header 20240520 1 2000; perl -e 'print pack("S<*", (1) x 1000)'; } > size.bin
expect_error "size.bin" "$HP" train --data size.bin --vocab 256 --steps 1
{ header 20240520 1 1000; perl -e 'print pack("S<*", (300) x 1000)'; } > big.bin
expect_error "big.bin" "$HP" train --data big.bin --vocab 256 --steps 1
expect_error "good.bin" "$HP" train --data good.bin --vocab 256 --batch 8 --seq 128 --steps 1
expect_error "nothing*.bin" "$HP" train --data 'nothing*.bin' --steps 1
"$HP" train --data good.bin --vocab 256 --batch 2 --seq 16 --steps 2 --layers 1 --channels 32 --heads 2 >/dev/null 2>&1 || fail "a good shard did not train"
expect_error "nowhere" "$HP" train --resume nowhere
expect_error "nowhere" "$HP" sample --ckpt nowhere
finish
