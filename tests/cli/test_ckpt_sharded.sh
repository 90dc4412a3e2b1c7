# Sharded checkpoints (--ckpt-format sharded) from the command line: a run
# stopped and resumed under the same plan gives the uninterrupted run's losses
# bit for bit (1 rank, DP=2 x TP=2 and FSDP=2 on rank threads, 2 MPI
# processes, also under FSDP); the
# directory holds pieces.json and one data file per writing rank, no whole
# tensors; 'hyperpar ckpt convert' turns it into the single-process files
# byte for byte equal to the same run's --ckpt-format single checkpoint (also
# for the MPI run's pieces), and back; export reads it; another plan resumes
# it; a save killed at any of its points (io/fault) leaves the previous or the
# new checkpoint, never a broken one; bad flags and arguments get one-line errors. (Every plan loading every
# other's pieces bit for bit: tests/engine/test_ckpt_sharded.c.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
MPI=(env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 timeout 300 mpirun --bind-to none -np 2)
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 12 --val-every 6 --warmup 4 --lr 6e-4"
# stop_resume NAME THREADS LAUNCH... -- PLAN...: full run vs sharded --stop-at 6 + --resume, bit for bit
stop_resume() {
  local name="$1" threads="$2"; shift 2
  local launch=() plan=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift; plan=("$@")
  "${launch[@]}" "$HP" train $small --threads "$threads" "${plan[@]}" --metrics "$name-full.jsonl" --ckpt-dir "$name-one" --stop-at 6 >"$name.log" 2>&1 || fail "$name: single-format run failed: $(tail -2 "$name.log")"
  "${launch[@]}" "$HP" train $small --threads "$threads" "${plan[@]}" --metrics "$name-full.jsonl" >"$name.log" 2>&1 || fail "$name: full run failed: $(tail -2 "$name.log")"
  "${launch[@]}" "$HP" train $small --threads "$threads" "${plan[@]}" --metrics "$name-part.jsonl" --ckpt-dir "$name-ck" --ckpt-format sharded --stop-at 6 >"$name.log" 2>&1 || fail "$name: first half failed: $(tail -2 "$name.log")"
  local d="$name-ck/step_000006"
  [ -f "$d/pieces.json" ] && [ -f "$d/state.json" ] && [ -f "$d/rank0.bin" ] || fail "$name: pieces.json, state.json or rank0.bin missing"
  [ -e "$d/model.safetensors" ] && fail "$name: a sharded checkpoint holds whole tensors"
  ls "$name-ck" | grep -q tmp && fail "$name: temporary checkpoint left behind"
  [ "$(cat "$name-ck/latest")" = step_000006 ] || fail "$name: latest is not step_000006"
  cp -r "$name-ck" "$name-ck6"
  "${launch[@]}" "$HP" train --resume "$name-ck" --threads "$threads" --metrics "$name-part.jsonl" >"$name.log" 2>&1 || fail "$name: resume failed: $(tail -2 "$name.log")"
  grep -q "resumed at step 6" "$name.log" || fail "$name: did not resume at step 6"
  [ "$(losses "$name-full.jsonl" | wc -l)" -eq 12 ] || fail "$name: full run has $(losses "$name-full.jsonl" | wc -l) steps"
  diff <(losses "$name-full.jsonl") <(losses "$name-part.jsonl") >/dev/null || fail "$name: resumed losses differ"
  [ -f "$name-ck/step_000012/pieces.json" ] || fail "$name: the resumed run did not keep the sharded format"
  # the pieces, made whole, are the same run's single-format checkpoint byte for byte
  "$HP" ckpt convert "$name-ck6/step_000006" "$name-conv" >"$name.log" 2>&1 || fail "$name: convert failed: $(cat "$name.log")"
  grep -q "single format, from the sharded" "$name.log" || fail "$name: convert said: $(cat "$name.log")"
  for f in model.safetensors optim.safetensors; do
    cmp -s "$name-conv/$f" "$name-one/step_000006/$f" || fail "$name: converted $f differs from the single-format checkpoint"
  done
}
stop_resume one 2 --
stop_resume thr 2 -- --dp 2 --tp 2
# rank threads write: DP=2 x TP=2 has two writers (the TP ranks of the first replica)
[ "$(ls thr-ck6/step_000006/*.bin | wc -l)" -eq 2 ] || fail "dp2 x tp2: $(ls thr-ck6/step_000006/*.bin | wc -l) data files, expected 2"
grep -q '"name":"rank1.bin"' thr-ck6/step_000006/pieces.json || fail "dp2 x tp2: rank 1 wrote no file"
# 2 MPI processes, each writing its own rank's file (TP=2: one rank per process)
stop_resume mtp 1 "${MPI[@]}" -- --tp 2
stop_resume mpi 2 "${MPI[@]}" -- --dp 2 --tp 2
# FSDP: every rank writes its own shards, flat ranges of the tensors (units cross tensor boundaries)
stop_resume fsdp 2 -- --fsdp 2
stop_resume mfsdp 1 "${MPI[@]}" -- --fsdp 2
grep -q '"begin":' fsdp-ck6/step_000006/pieces.json || fail "fsdp: no flat range in pieces.json"
[ -f mfsdp-ck6/step_000006/rank1.bin ] || fail "mpi fsdp: rank 1's process wrote no file"
[ -f mtp-ck6/step_000006/rank1.bin ] || fail "mpi tp2: rank 1's process wrote no file"
# the same step of the same plan: MPI processes' pieces equal rank threads' (TP=2, one thread per rank)
"$HP" train $small --threads 2 --tp 2 --ckpt-dir ttp --ckpt-format sharded --stop-at 6 --metrics ttp.jsonl >ttp.log 2>&1 || fail "tp2 threads run failed"
"$HP" ckpt convert ttp/step_000006 ttp-conv >/dev/null 2>&1 || fail "convert ttp failed"
cmp -s ttp-conv/model.safetensors mtp-conv/model.safetensors || fail "tp2: threads and MPI pieces differ"
cmp -s ttp-conv/optim.safetensors mtp-conv/optim.safetensors || fail "tp2: threads and MPI optimizer pieces differ"
# single -> sharded -> single is the identity
"$HP" ckpt convert one-one/step_000006 rt-sharded --format sharded >/dev/null 2>&1 || fail "convert to sharded failed"
[ -f rt-sharded/pieces.json ] && [ ! -e rt-sharded/model.safetensors ] || fail "convert --format sharded wrote no sharded checkpoint"
"$HP" ckpt convert rt-sharded rt-single >/dev/null 2>&1 || fail "convert back failed"
for f in model.safetensors optim.safetensors state.json; do
  cmp -s "rt-single/$f" "one-one/step_000006/$f" || fail "round trip: $f differs"
done
# export reads the pieces: the same llm.c file as from the whole tensors
"$HP" export --ckpt thr-ck6/step_000006 --llmc thr.bin >/dev/null 2>&1 || fail "export of a sharded checkpoint failed"
"$HP" export --ckpt thr-conv --llmc thr-conv.bin >/dev/null 2>&1 || fail "export of the converted checkpoint failed"
cmp -s thr.bin thr-conv.bin || fail "export: sharded and single give different llm.c files"
"$HP" sample --ckpt thr-ck6 --tokens 4 --threads 1 >sample.log 2>&1 || fail "sample from a sharded run directory failed: $(tail -1 sample.log)"
# another plan (and world size) resumes the pieces: 1 rank and DP=2 from TP=2, losses within 1e-4
grep -v val_loss ttp.jsonl | head -6 >ref6.jsonl
"$HP" train $small --threads 2 --tp 2 --metrics ttp-full.jsonl >/dev/null 2>&1 || fail "tp2 full run failed"
for plan in "--tp 1" "--dp 2 --tp 1" "--dp 2 --tp 2" "--fsdp 2 --tp 1"; do
  n=$(echo "$plan" | tr -d ' -')
  cp ref6.jsonl "re-$n.jsonl"
  "$HP" train --resume ttp/step_000006 $plan --threads 2 --ckpt-dir "re-$n" --metrics "re-$n.jsonl" >"re-$n.log" 2>&1 || fail "resume under $plan failed: $(tail -2 "re-$n.log")"
  read -r cnt m <<<"$(maxdiff ttp-full.jsonl "re-$n.jsonl")"
  [ "$cnt" -eq 12 ] || fail "resume under $plan: $cnt steps compared"
  awk -v m="$m" 'BEGIN { exit !(m <= 1e-4) }' || fail "resume under $plan: max |delta loss| $m"
done
# FSDP's flat shards resumed by TP=2 and by 1 rank
"$HP" train $small --threads 2 --fsdp 2 --metrics fsdp-full2.jsonl >/dev/null 2>&1 || fail "fsdp full run failed"
grep -v val_loss fsdp-full2.jsonl | head -6 >fref6.jsonl
for plan in "--tp 2" "--tp 1"; do
  n=f$(echo "$plan" | tr -d ' -')
  cp fref6.jsonl "re-$n.jsonl"
  "$HP" train --resume fsdp-ck6/step_000006 $plan --fsdp 1 --threads 2 --ckpt-dir "re-$n" --metrics "re-$n.jsonl" >"re-$n.log" 2>&1 || fail "resume of fsdp pieces under $plan failed: $(tail -2 "re-$n.log")"
  read -r cnt m <<<"$(maxdiff fsdp-full2.jsonl "re-$n.jsonl")"
  [ "$cnt" -eq 12 ] && awk -v m="$m" 'BEGIN { exit !(m <= 1e-4) }' || fail "resume of fsdp pieces under $plan: $cnt steps, max |delta loss| $m"
done
# 2 MPI processes (one rank each, DP=2) resume the rank threads' TP=2 pieces
cp ref6.jsonl re-mpi.jsonl
"${MPI[@]}" "$HP" train --resume ttp/step_000006 --dp 2 --tp 1 --threads 1 --ckpt-dir re-mpi --metrics re-mpi.jsonl >re-mpi.log 2>&1 || fail "mpi resume of tp2 pieces failed: $(tail -2 re-mpi.log)"
read -r cnt m <<<"$(maxdiff ttp-full.jsonl re-mpi.jsonl)"
[ "$cnt" -eq 12 ] && awk -v m="$m" 'BEGIN { exit !(m <= 1e-4) }' || fail "mpi resume of tp2 pieces: $cnt steps, max |delta loss| $m"
# crash injection (io/fault's HP_FAULT_AT): a sharded save under TP=2 killed (SIGKILL) at each of
# its points (every rank's data file, pieces.json, state.json, the stage's rename, latest; the
# first and the last write of each file); a resume finds the previous checkpoint (before latest
# names the new one) or the new one, continues with the uninterrupted run's losses, and leaves
# only step_* and latest behind (a resume of the new one trains step 7: only steps 1-6 compared)
losses ttp-full.jsonl | head -6 >cref6.txt
cbase() { rm -rf cck cm.jsonl; "$HP" train $small --threads 2 --tp 2 --ckpt-dir cck --ckpt-format sharded --stop-at 3 --metrics cm.jsonl >/dev/null 2>&1 || fail "crash: base run failed"; }
cbase
rm -f cpts.txt
(HP_FAULT_LOG="$PWD/cpts.txt" exec "$HP" train --resume cck --stop-at 6) >/dev/null 2>&1 || fail "crash: listing the points failed"
committed=$(grep -n '^rename:latest$' cpts.txt | cut -d: -f1)
[ -n "$committed" ] && grep -q '^create:rank1.bin$' cpts.txt && grep -q '^rename:pieces.json$' cpts.txt || fail "crash: the save's points are not the expected ones"
ctrials=0
while read -r pt total; do
  nths=1; [ "$total" -gt 1 ] && nths="1 $total"
  for nth in $nths; do
    line=$(grep -nxF -- "$pt" cpts.txt | sed -n "${nth}p" | cut -d: -f1)
    want=3; [ "$line" -gt "$committed" ] && want=6
    cbase
    rc=0; { (HP_FAULT_AT="$pt#$nth" exec "$HP" train --resume cck --stop-at 6) >ck.out 2>&1; } 2>/dev/null || rc=$?
    [ "$rc" -eq 137 ] || fail "crash $pt#$nth: not killed there (exit $rc)"
    "$HP" train --resume cck --stop-at 6 >cres.out 2>&1 || { fail "crash $pt#$nth: resume failed: $(tail -1 cres.out)"; continue; }
    grep -q "resumed at step $want " cres.out || fail "crash $pt#$nth: $(grep -o 'resumed at step [0-9]*' cres.out), expected step $want"
    losses cm.jsonl | head -6 | diff -q - cref6.txt >/dev/null || fail "crash $pt#$nth: losses differ from the uninterrupted run's"
    left=$(ls -A cck | grep -v -E '^(latest|step_[0-9]+)$' | tr '\n' ' ')
    [ -z "$left" ] || fail "crash $pt#$nth: left behind: $left"
    [ -f "cck/$(cat cck/latest)/pieces.json" ] || fail "crash $pt#$nth: latest names no sharded checkpoint"
    ctrials=$((ctrials + 1))
  done
done < <(awk '{c[$0]++; if (!($0 in f)) { f[$0] = 1; o[++n] = $0 } } END { for (i = 1; i <= n; i++) print o[i], c[o[i]] }' cpts.txt)
echo "crash injection: $ctrials sharded saves killed, one at each point"
[ "$ctrials" -ge 25 ] || fail "crash: only $ctrials trials"
# bad flags and arguments
expect_error "--ckpt-format must be single or sharded, got 'zip'" "$HP" train $small --ckpt-format zip
expect_error "exists; the converted checkpoint goes to a new directory" "$HP" ckpt convert rt-sharded rt-single
expect_error "--format must be sharded or single" "$HP" ckpt convert rt-sharded new --format tar
expect_error "expected SRC and DST" "$HP" ckpt convert rt-sharded
mkdir half && cp thr-ck6/step_000006/rank0.bin thr-ck6/step_000006/state.json half/
expect_error "half/model.safetensors: cannot open: No such file or directory (and no pieces.json: not a complete checkpoint)" "$HP" ckpt convert half new
cp -r thr-ck6/step_000006 cut && truncate -s 100 cut/rank1.bin
expect_error "cut/rank1.bin: 100 bytes, but files[1].bytes in cut/pieces.json" "$HP" train --resume cut
[ -e new ] && fail "a failed convert left its destination behind"
finish
