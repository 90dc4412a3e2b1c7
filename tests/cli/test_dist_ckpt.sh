# Checkpoints of distributed runs: an interrupted (--stop-at) and resumed run
# gives the uninterrupted run's losses bit for bit (DP=2 x TP=2 on rank
# threads; across 2 MPI processes, where pieces travel to rank 0); the files
# are the single-process layout (whole tensors), so another plan or world size
# resumes them (losses within 1e-4 of the uninterrupted run); frozen settings
# are still enforced. --threads is explicit on every run compared bit for bit:
# the bits of a run depend on its threads per rank (with 2 rank threads,
# --threads 2 gives each 1, as --threads 1 gives each of 2 MPI processes).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
# Open MPI's plugins leak and are unloaded before LeakSanitizer can name them
# (tests/comm/tests.cmake): under mpirun, ASan and UBSan stay on, leak checks
# off; the rank-thread runs below check the same checkpoint code for leaks.
MPI=(env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 timeout 300 mpirun -np 2)
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 20 --val-every 10 --warmup 4 --lr 6e-4"
# header FILE: the safetensors header (names, dtypes, shapes, offsets)
# (the tensors' checksums in __metadata__ left out: they are of the values, not the layout)
header() { head -c $((8 + $(od -An -t u8 -N8 "$1"))) "$1" | sed -E 's/("crc32c\.[^"]*":")[0-9a-f]{8}"/\1"/g'; }
# stop_resume NAME THREADS LAUNCH... -- PLAN...: full run vs --stop-at 8 + --resume, bit for bit
stop_resume() {
  local name="$1" threads="$2"; shift 2
  local launch=() plan=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift; plan=("$@")
  "${launch[@]}" "$HP" train $small --threads "$threads" "${plan[@]}" --metrics "$name-full.jsonl" >"$name.log" 2>&1 || fail "$name: full run failed: $(tail -2 "$name.log")"
  "${launch[@]}" "$HP" train $small --threads "$threads" "${plan[@]}" --metrics "$name-part.jsonl" --ckpt-dir "$name-ck" --stop-at 8 >"$name.log" 2>&1 || fail "$name: first half failed: $(tail -2 "$name.log")"
  for f in model.safetensors optim.safetensors state.json; do [ -f "$name-ck/step_000008/$f" ] || fail "$name: $f missing"; done
  [ -f "$name-ck/latest" ] || fail "$name: no latest pointer"
  ls "$name-ck" | grep -q tmp && fail "$name: temporary checkpoint left behind"
  cp -r "$name-ck" "$name-ck8" # the resumed run checkpoints at its end into the same run directory
  "${launch[@]}" "$HP" train --resume "$name-ck" --threads "$threads" --metrics "$name-part.jsonl" >"$name.log" 2>&1 || fail "$name: resume failed: $(tail -2 "$name.log")"
  grep -q "resumed at step 8" "$name.log" || fail "$name: did not resume at step 8"
  [ "$(losses "$name-full.jsonl" | wc -l)" -eq 20 ] || fail "$name: full run has $(losses "$name-full.jsonl" | wc -l) steps"
  diff <(losses "$name-full.jsonl") <(losses "$name-part.jsonl") >/dev/null || fail "$name: resumed losses differ"
  [ -d "$name-ck/step_000020" ] || fail "$name: no checkpoint at the end"
}
# (a) rank threads, (b) 2 MPI processes (2 rank threads each; rank 0's process holds every piece),
# and 2 MPI processes of 1 rank each under TP=2 (half of every matrix is sent to rank 0)
stop_resume thr 2 -- --dp 2 --tp 2
stop_resume mpi 2 "${MPI[@]}" -- --dp 2 --tp 2
# (one thread per rank, as the threads run below has: kernels may split work
# differently for another thread count, and some BLAS kernels then round differently)
stop_resume mtp 1 "${MPI[@]}" -- --tp 2
stop_resume tp 2 -- --tp 2
# FSDP 4 over 2 processes: each process's store holds only its shards (transient gathered units)
stop_resume mfsdp 2 "${MPI[@]}" -- --fsdp 4
# (d) the files are the single-process layout: same tensor names, shapes and order as a 1-rank checkpoint
"$HP" train $small --threads 2 --ckpt-dir one-ck --stop-at 8 --metrics one-part.jsonl >/dev/null 2>&1 || fail "1-rank run failed"
"$HP" train $small --threads 2 --metrics one-full.jsonl >/dev/null 2>&1 || fail "1-rank full run failed"
for f in model optim; do
  for run in thr mpi mtp; do
    cmp -s <(header one-ck/step_000008/$f.safetensors) <(header $run-ck8/step_000008/$f.safetensors) || fail "$run: $f.safetensors is not the 1-rank layout"
  done
done
# the same step of the same plan gives the same file, whether pieces were local or sent by MPI
cmp -s tp-ck8/step_000008/model.safetensors mtp-ck8/step_000008/model.safetensors || fail "tp=2: threads and MPI checkpoints differ"
cmp -s tp-ck8/step_000008/optim.safetensors mtp-ck8/step_000008/optim.safetensors || fail "tp=2: threads and MPI optimizer states differ"
"$HP" export --ckpt thr-ck8/step_000008 --llmc thr.bin >/dev/null 2>&1 || fail "export of a distributed checkpoint failed"
"$HP" export --ckpt one-ck/step_000008 --llmc one.bin >/dev/null 2>&1 || fail "export of a 1-rank checkpoint failed"
[ -s thr.bin ] && [ "$(stat -c %s thr.bin)" -eq "$(stat -c %s one.bin)" ] || fail "exported llm.c files differ in size"
# (c) resharding: a TP=2 checkpoint resumed by 1 rank and by DP=2 (also one written by 2 MPI processes);
# a 1-rank checkpoint resumed by DP=2 x TP=2, threads and MPI
reshard() { # name ckpt reference launch... -- flags...
  local name="$1" ck="$2" ref="$3"; shift 3
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  cp "$ref-part-8.jsonl" "$name.jsonl"
  "${launch[@]}" "$HP" train --resume "$ck/step_000008" "$@" --ckpt-dir "$name-ck" --metrics "$name.jsonl" >"$name.log" 2>&1 || fail "$name: resume failed: $(tail -2 "$name.log")"
  read -r n m <<<"$(maxdiff "$ref-full.jsonl" "$name.jsonl")"
  echo "$name: $n steps, max |delta loss| $m against the uninterrupted run"
  [ "$n" -eq 20 ] || fail "$name: $n steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-4) }' || fail "$name: max |delta loss| $m"
}
for r in tp mtp one; do grep -v val_loss "$r-full.jsonl" | head -8 >"$r-part-8.jsonl"; done
mv one-ck one-ck8
reshard tp-to-1 tp-ck8 tp -- --tp 1
reshard tp-to-dp2 tp-ck8 tp -- --dp 2 --tp 1
reshard mtp-to-1 mtp-ck8 mtp -- --tp 1
reshard one-to-dp2tp2 one-ck8 one -- --dp 2 --tp 2
reshard one-to-mpi one-ck8 one "${MPI[@]}" -- --dp 2 --tp 2
# (e) frozen settings are still enforced; a plan file replaces inherited --dp/--tp
expect_error "differs from the checkpoint" "$HP" train --resume thr-ck8/step_000008 --batch 8
expect_error "differs from the checkpoint" "$HP" train --resume thr-ck8/step_000008 --seed 7
printf 'mesh: dp=2\nparam wte: S(0)@dp\n' > dp.plan
cp tp-part-8.jsonl plan.jsonl
"$HP" train --resume tp-ck8/step_000008 --plan dp.plan --ckpt-dir plan-ck --metrics plan.jsonl >plan.log 2>&1 || fail "resume with --plan failed: $(tail -2 plan.log)"
grep -q "mesh dp=2" plan.log || fail "resume with --plan did not use the plan: $(head -1 plan.log)"
finish
