#!/usr/bin/env bash
# The cost model against measurement (issue 28, item 5 and its figure): `hyperpar simulate --check` on a
# grid of plans at 1 to 8 rank-threads, some over 2 emulated supernodes; prints predicted vs measured per
# configuration and the mean absolute percentage error. Usage:
#   bench/sim_check.sh BUILD/hyperpar PROFILES [STEPS]
# PROFILES: a comma-separated list of `hyperpar calibrate` profiles of this machine (one per --threads, e.g.
# 1 and 2: each configuration is priced with the one at its ranks' threads).
set -u
HP="$1"; PROF="$2"; STEPS="${3:-10}"
model="--layers 4 --heads 4 --channels 256 --vocab 256 --seq 128 --batch 8 --threads 2"
link="--inter-bw 1 --inter-latency 20"
configs=(
  "1 rank|"
  "dp 2|--dp 2"
  "tp 2|--tp 2"
  "zero-1 dp 2|--dp 2 --zero 1"
  "fsdp 2|--fsdp 2"
  "pp 2 1f1b m4|--pp 2 --grad-accum 4"
  "pp 2 gpipe m4|--pp 2 --grad-accum 4 --pp-schedule gpipe"
  "dp 2 tp 2|--dp 2 --tp 2"
  "dp 4|--dp 4"
  "fsdp 4|--fsdp 4"
  "pp 2 dp 2 m2|--pp 2 --dp 2 --grad-accum 2"
  "dp 8|--dp 8"
  "dp 2 / 2 sn|--dp 2 --supernodes 2 $link"
  "fsdp 4 / 2 sn|--fsdp 4 --supernodes 2 $link"
  "hsdp 2,2 / 2 sn|--hsdp 2,2 --supernodes 2 $link"
  "tp 2 dp 2 / 2 sn|--dp 2 --tp 2 --supernodes 2 $link"
)
printf '%-18s %12s %12s %9s\n' config predicted_ms measured_ms error
sum=0; n=0
for c in "${configs[@]}"; do
  name="${c%%|*}"; flags="${c#*|}"
  # shellcheck disable=SC2086
  line=$("$HP" simulate $model $flags --profile "$PROF" --check --check-steps "$STEPS" 2>&1 | grep '^check:')
  p=$(sed -n 's/^check: predicted \([0-9.]*\) ms.*/\1/p' <<<"$line")
  m=$(sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p' <<<"$line")
  if [ -z "$p" ] || [ -z "$m" ]; then echo "$name: failed: $line"; continue; fi
  e=$(awk -v p="$p" -v m="$m" 'BEGIN { printf "%+.1f", 100 * (p / m - 1) }')
  printf '%-18s %12s %12s %8s%%\n' "$name" "$p" "$m" "$e"
  [ -n "${first:-}" ] || first="$m"
  sum=$(awk -v s="$sum" -v e="$e" 'BEGIN { if (e < 0) e = -e; print s + e }'); n=$((n + 1))
done
awk -v s="$sum" -v n="$n" 'BEGIN { printf "MAPE over %d configurations: %.1f%%\n", n, s / n }'
# the host's drift over the grid: the first configuration measured again (this shared host changes speed for
# minutes at a time; a grid across such a change, or calibrated before one, mispredicts every plan alike)
again=$("$HP" simulate $model --profile "$PROF" --check --check-steps "$STEPS" 2>&1 | sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p')
awk -v a="$first" -v b="$again" 'BEGIN { if (a > 0 && b > 0) printf "host drift: 1 rank measured %s ms first, %s ms last (%+.1f%%)\n", a, b, 100 * (b / a - 1) }'
