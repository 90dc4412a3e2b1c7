#!/usr/bin/env bash
# plan --auto against plans tried by hand (issue 28's third figure): the search picks a plan for N ranks on
# this machine, then the winner and each hand plan are trained here (`simulate --check`: the median step of
# STEPS timed steps) in alternating order, three times; prints each one's measured step and the winner's against
# the best hand plan. Usage: bench/auto_check.sh BUILD/hyperpar PROFILES [N] [STEPS]
set -u
HP="$1"; PROF="$2"; N="${3:-8}"; STEPS="${4:-10}"
model="--layers 4 --heads 4 --channels 256 --vocab 256 --seq 128 --batch 8 --threads 2"
out=$("$HP" plan --auto --world "$N" $model --profile "$PROF" --max-micro 4 --out /tmp/auto_check.plan 2>&1)
echo "$out" | sed -n '1,12p'
winner=$(echo "$out" | sed -n 's/^  1 .*  \(--batch .*\)$/\1/p')
[ -n "$winner" ] || { echo "no winner: $out"; exit 1; }
hands=("--batch 8 --dp $N" "--batch 8 --fsdp $N" "--batch 8 --dp $N --zero 1" "--batch 8 --dp $((N / 2)) --tp 2"
       "--batch 8 --dp $((N / 4)) --tp 4" "--batch 4 --pp 2 --dp $((N / 2)) --grad-accum 2"
       "--batch 8 --hsdp 2,$((N / 2))")
measure() { # flags... -> ms
  # shellcheck disable=SC2086
  "$HP" simulate --layers 4 --heads 4 --channels 256 --vocab 256 --seq 128 --threads 2 $* --profile "$PROF" \
    --check --check-steps "$STEPS" 2>&1 | sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p'
}
declare -A best
for round in 1 2 3; do
  for f in "$winner" "${hands[@]}"; do
    ms=$(measure $f)
    echo "round $round: $f: $ms ms"
    prev="${best[$f]:-}"
    if [ -z "$prev" ] || awk -v a="$ms" -v b="$prev" 'BEGIN { exit !(a < b) }'; then best[$f]="$ms"; fi
  done
done
w="${best[$winner]}"; hb=""; hf=""
for f in "${hands[@]}"; do
  v="${best[$f]}"
  if [ -z "$hb" ] || awk -v a="$v" -v b="$hb" 'BEGIN { exit !(a < b) }'; then hb="$v"; hf="$f"; fi
done
echo "winner ($winner): $w ms (best of 3); best hand plan ($hf): $hb ms"
awk -v w="$w" -v h="$hb" 'BEGIN { printf "winner / best hand: %.3f\n", w / h }'
