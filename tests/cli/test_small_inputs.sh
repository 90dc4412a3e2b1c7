# The smaller input defects of issue 11 (defect 12): sample --prompt longer
# than the context used its first part (now its last maxT bytes); error
# messages echoed control bytes from input (now escaped: one printable line);
# sample and export refused a checkpoint whose optimizer file is missing,
# though they need only the weights. (A FIFO as --data: cli/data_kind.)
. "$(dirname "$0")/lib.sh"
S=(--layers 1 --channels 32 --heads 2 --batch 4 --seq 16 --max-seq 16 --threads 1 --val-steps 1)
"$HP" train "${S[@]}" --steps 40 --lr 3e-3 --warmup 0 --ckpt-dir ck >/dev/null 2>err.txt || fail "training: $(cat err.txt)"
# greedy continuations (temperature 0): what follows the echoed prompt
cont() { "$HP" sample --ckpt ck --temperature 0 --tokens 24 --threads 1 --prompt "$1" | tail -c 25; }
LAST="The GNU General Pu"; LAST=${LAST:0:16}
FIRST="zzzzzzzzzzzzzzzz"
[ "$(cont "$LAST")" != "$(cont "$FIRST")" ] || fail "the model does not depend on its prompt (the next check would prove nothing)"
[ "$(cont "$FIRST$LAST")" = "$(cont "$LAST")" ] || fail "a prompt longer than maxT did not use its last maxT bytes"
# control bytes from input are escaped; the message is one line
expect_error 'bad\x1b[31mname\nx*: no files match this pattern' "$HP" train --data $'bad\x1b[31mname\nx*' --steps 1
grep -q $'\x1b' err.txt && fail "an escape byte reached the terminal: $(od -c err.txt | head -3)"
printf 'mesh: dp=2\nparam h.*.x\x07y: R\n' > bell.plan
expect_error "bell.plan:2: param 'h.*.x\\x07y' matches no parameter" "$HP" plan --plan bell.plan --batch 2 --seq 16
# a path that is no checkpoint: named once, with what it lacks
touch afile; mkdir emptyd
expect_error "afile: not a directory (a checkpoint, or a checkpoint directory's parent with 'latest')" "$HP" sample --ckpt afile
expect_error "hyperpar: nowhere: cannot open the checkpoint: No such file or directory" "$HP" train --resume nowhere
expect_error "emptyd: no checkpoint: no 'latest' file and no complete step_* directory" \
  "$HP" export --ckpt emptyd --llmc x.bin
# the weights alone are enough for sample and export; resume still needs the optimizer state
cp -r ck/step_000040 noopt
rm noopt/optim.safetensors
"$HP" sample --ckpt noopt --tokens 5 --threads 1 >/dev/null 2>err.txt || fail "sample without optim.safetensors: $(cat err.txt)"
"$HP" export --ckpt noopt --llmc a.bin >/dev/null 2>err.txt || fail "export without optim.safetensors: $(cat err.txt)"
"$HP" export --ckpt ck/step_000040 --llmc b.bin >/dev/null 2>err.txt || fail "export: $(cat err.txt)"
cmp -s a.bin b.bin || fail "the export without the optimizer file differs"
expect_error "noopt/optim.safetensors: cannot open" "$HP" train --resume noopt --steps 41
finish
