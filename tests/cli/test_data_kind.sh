# What the training data is (issue 11, defects 5 and 12): a token shard with a
# corrupt magic was trained on as raw bytes, even with --vocab 50257; a text
# training stream could be validated on token shards; a FIFO as --data blocked
# forever. Now --data-kind auto (the default) reads a file as text only when it
# cannot be a shard (not .bin, vocabulary 256), a .bin with the wrong magic is
# an error naming the file and the magic found, mixing kinds is refused, and
# anything but a regular file is refused before it is opened.
. "$(dirname "$0")/lib.sh"
S=(--layers 1 --channels 32 --heads 2 --batch 2 --seq 16 --max-seq 16 --threads 1 --steps 1 --val-steps 1)
header() { perl -e 'print pack("l<*", $ARGV[0], $ARGV[1], $ARGV[2], (0) x 253)' "$1" "$2" "$3"; }
{ header 20240520 1 3000; perl -e 'print pack("S<*", map { $_ % 200 } 0..2999)'; } > good.bin
{ header 20240519 1 3000; perl -e 'print pack("S<*", map { $_ % 200 } 0..2999)'; } > corrupt.bin
cp corrupt.bin corrupt.dat
head -c 6000 /usr/share/common-licenses/GPL-3 > text.txt

expect_error "corrupt.bin: bad magic 20240519 (0x0134d887) where an llm.c token shard starts with 20240520" \
  "$HP" train "${S[@]}" --data corrupt.bin --vocab 50257
expect_error "corrupt.bin: bad magic 20240519" "$HP" train "${S[@]}" --data corrupt.bin --vocab 256
expect_error "corrupt.dat: not an llm.c token shard (no magic 20240520) and the vocabulary is 50257, not 256" \
  "$HP" train "${S[@]}" --data corrupt.dat --vocab 50257
expect_error "corrupt.dat: bad magic 20240519 (0x0134d887; expected 20240520" "$HP" train "${S[@]}" --data corrupt.dat --data-kind tokens --vocab 50257
expect_error "--data-kind must be auto, tokens or text, got 'bytes'" "$HP" train "${S[@]}" --data-kind bytes
# asked for, or when it cannot be a shard: text
"$HP" train "${S[@]}" --data corrupt.bin --data-kind text --metrics t1.jsonl >/dev/null 2>err.txt ||
  fail "--data-kind text on a .bin: $(cat err.txt)"
"$HP" train "${S[@]}" --data corrupt.dat --metrics t2.jsonl >/dev/null 2>err.txt ||
  fail "a file not named .bin at vocabulary 256: $(cat err.txt)"
[ -n "$(losses t1.jsonl)" ] && [ "$(losses t1.jsonl)" = "$(losses t2.jsonl)" ] || fail "the same bytes read as text gave different runs"
# a good shard is a shard under auto (vocabulary 256 too), and differs from its bytes read as text
"$HP" train "${S[@]}" --data good.bin --metrics s1.jsonl >/dev/null 2>err.txt || fail "a good shard: $(cat err.txt)"
"$HP" train "${S[@]}" --data good.bin --data-kind tokens --metrics s2.jsonl >/dev/null 2>err.txt ||
  fail "a good shard as tokens: $(cat err.txt)"
[ -n "$(losses s1.jsonl)" ] && [ "$(losses s1.jsonl)" = "$(losses s2.jsonl)" ] || fail "auto did not read good.bin as token shards"
"$HP" train "${S[@]}" --data good.bin --data-kind text --metrics s3.jsonl >/dev/null 2>&1
[ "$(losses s1.jsonl)" != "$(losses s3.jsonl)" ] || fail "good.bin read as text trained on the same tokens"
# one kind for training and validation
expect_error "good.bin: the validation data is llm.c token shards but the training data text.txt is text" \
  "$HP" train "${S[@]}" --data text.txt --val-data good.bin
expect_error "text.txt: the validation data is text but the training data good.bin is llm.c token shards" \
  "$HP" train "${S[@]}" --data good.bin --val-data text.txt
# the files of a glob: one kind
cp good.bin mix_0.bin; cp text.txt mix_1.txt
expect_error "mix_1.txt: is text but" "$HP" train "${S[@]}" --data 'mix_*'
# a FIFO (and a directory) is refused before it is opened; timeout only bounds the regression (a blocked open)
mkfifo fifo
expect_error "fifo: not a regular file (a FIFO)" timeout 300 "$HP" train "${S[@]}" --data fifo
expect_error "fifo: not a regular file (a FIFO)" timeout 300 "$HP" train "${S[@]}" --val-data fifo
expect_error "not a regular file (a directory)" "$HP" train "${S[@]}" --data "$WORK"
finish
