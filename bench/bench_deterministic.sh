#!/usr/bin/env bash
# What the deterministic mode costs (docs/benchmarks.md, "FSDP deterministic
# mode"): `hyperpar train` at 1, 2 and 4 FSDP rank-threads, default against
# --deterministic (8 slices), the same model, global batch and threads,
# alternating runs; prints per row the median over runs of each run's median
# step time (steps after the first 3), and the ratio.
# Usage: bench/bench_deterministic.sh HYPERPAR [RUNS] [STEPS] [EXTRA FLAGS...]
set -euo pipefail
HP="$1" RUNS="${2:-3}" STEPS="${3:-15}"
shift $(($# < 3 ? $# : 3))
OUT=$(mktemp -d /tmp/hp-det-XXXXXX)
model="--layers 4 --heads 4 --channels 256 --batch 16 --seq 128 --val-every 0 --run-dir none --threads 2 $*"
for i in $(seq 1 "$RUNS"); do
  for n in 1 2 4; do
    f=""; [ "$n" -gt 1 ] && f="--fsdp $n"
    "$HP" train $model $f --steps "$STEPS" --metrics "$OUT/def_${n}_$i.jsonl" >/dev/null
    "$HP" train $model $f --steps "$STEPS" --deterministic --metrics "$OUT/det_${n}_$i.jsonl" >/dev/null
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def step_ms(f):
    ms = [json.loads(l)["step_ms"] for l in open(f) if '"step_ms"' in l]
    return statistics.median(ms[3:])
print("| FSDP ranks | default step ms | deterministic step ms | ratio |")
print("|---|---|---|---|")
for n in (1, 2, 4):
    d = statistics.median(step_ms(f"{out}/def_{n}_{i}.jsonl") for i in range(1, runs + 1))
    t = statistics.median(step_ms(f"{out}/det_{n}_{i}.jsonl") for i in range(1, runs + 1))
    print("| %d | %.1f | %.1f | %.2f |" % (n, d, t, t / d))
print("files in", out)
PY
