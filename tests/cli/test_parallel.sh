# Loss equivalence: 200 steps of DP=2 x TP=2 against 1 rank from the same seed
# (Pearson >= 0.999999, max |delta loss| <= 1e-4), on rank threads and across
# 2 MPI processes (2 rank threads each); and plan errors caught up front.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 200 --val-every 100 --warmup 10 --lr 6e-4"
"$HP" train $small --metrics one.jsonl >/dev/null 2>&1 || fail "1-rank run failed"
"$HP" train $small --dp 2 --tp 2 --metrics par.jsonl >log.txt 2>&1 || fail "dp2 x tp2 run failed: $(tail -2 log.txt)"
timeout 600 "${MPIRUN[@]}" "$HP" train $small --dp 2 --tp 2 --metrics mpi.jsonl >mlog.txt 2>&1 || fail "2-process run failed: $(tail -3 mlog.txt)"
compare() { # a b: prints "n pearson maxdiff"
  paste <(losses "$1") <(losses "$2") | awk '{ n++; x=$1; y=$2; sx+=x; sy+=y; sxx+=x*x; syy+=y*y; sxy+=x*y; d=x-y; if (d<0) d=-d; if (d>m) m=d }
    END { r=(n*sxy-sx*sy)/sqrt((n*sxx-sx*sx)*(n*syy-sy*sy)); printf "%d %.9f %.3g\n", n, r, m }'; }
for run in par mpi; do
  read -r n r m <<<"$(compare one.jsonl $run.jsonl)"
  echo "$run: $n steps, Pearson $r, max |delta loss| $m"
  [ "$n" -eq 200 ] || fail "$run: $n steps compared"
  awk -v r="$r" -v m="$m" 'BEGIN { exit !(r >= 0.999999 && m <= 1e-4) }' || fail "$run: Pearson $r, max delta $m"
done
# the loss must really fall (the comparison is not of two flat lines)
awk -v a="$(losses par.jsonl | head -1)" -v b="$(losses par.jsonl | tail -1)" 'BEGIN { exit !(b < a - 1.0) }' || fail "loss did not fall"
# plan errors, before any step
expect_error "heads" "$HP" train --layers 1 --heads 3 --channels 48 --tp 2 --steps 1
printf 'mesh: dp=3\nparam wte: S(0)@dp\n' > three.plan
expect_error_any "3 ranks" timeout 60 "${MPIRUN[@]}" "$HP" train --plan three.plan --steps 1 --layers 1 --channels 32 --heads 2
printf 'mesh: dp=2\nparam wte: S(5)@dp\n' > bad.plan
expect_error "bad.plan" "$HP" train --plan bad.plan --steps 1
finish
