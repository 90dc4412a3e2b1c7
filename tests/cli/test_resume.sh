# A run interrupted by --stop-at and resumed gives the same losses, bit for bit,
# as the uninterrupted run (AdamW and Muon); checkpoints are complete directories.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 2 --channels 64 --batch 4 --seq 64 --steps 24 --val-every 12 --warmup 4 --threads 2"
for opt in adamw muon; do
  "$HP" train $small --optimizer $opt --metrics full.jsonl >/dev/null 2>&1 || fail "$opt: full run failed"
  "$HP" train $small --optimizer $opt --metrics part.jsonl --ckpt-dir ck --stop-at 10 >/dev/null 2>&1 || fail "$opt: first half failed"
  [ -f ck/step_000010/model.safetensors ] && [ -f ck/step_000010/optim.safetensors ] && [ -f ck/step_000010/state.json ] || fail "$opt: checkpoint files missing"
  [ -f ck/latest ] || fail "$opt: no latest pointer"
  ls ck | grep -q tmp && fail "$opt: temporary checkpoint left behind"
  "$HP" train --resume ck --threads 2 --metrics part.jsonl >/dev/null 2>&1 || fail "$opt: resume failed"
  [ "$(losses full.jsonl | wc -l)" -eq 24 ] || fail "$opt: full run has $(losses full.jsonl | wc -l) steps"
  if ! diff <(losses full.jsonl) <(losses part.jsonl) >/dev/null; then fail "$opt: resumed losses differ"; fi
  expect_error "differs from the checkpoint" "$HP" train --resume ck --batch 8
  rm -rf ck full.jsonl part.jsonl
done
# resuming at the --stop-at step trains nothing more (it used to train one step past it)
"$HP" train --layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --max-seq 16 --threads 1 --steps 6 --stop-at 2 \
  --val-steps 1 --ckpt-dir sk --metrics s.jsonl >/dev/null 2>&1 || fail "stop-at run failed"
"$HP" train --resume sk --stop-at 2 --metrics s.jsonl >s.out 2>&1 || fail "resume at the stop failed: $(tail -2 s.out)"
[ "$(losses s.jsonl | wc -l)" -eq 2 ] || fail "resuming at the stop trained: $(losses s.jsonl | wc -l) steps recorded"
[ ! -e sk/step_000003 ] || fail "resuming at the stop wrote step 3"
finish
