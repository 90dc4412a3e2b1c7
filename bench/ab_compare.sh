#!/usr/bin/env bash
# Side-by-side step benchmarks of two hyperpar binaries, alternating runs on
# the same machine (docs/benchmarks.md): `hyperpar bench` (small, gpt2-124m)
# and `hyperpar bench parallel`, RUNS times each, A then B; prints the medians
# of every row's tok/s and of bench parallel's other% per binary.
# Usage: bench/ab_compare.sh OLD_BINARY NEW_BINARY [RUNS] [OUTDIR]
set -euo pipefail
A="$1" B="$2" RUNS="${3:-5}" OUT="${4:-$(mktemp -d /tmp/hp-ab-XXXXXX)}"
mkdir -p "$OUT"
for i in $(seq 1 "$RUNS"); do
  for side in A B; do
    bin=$A; [ "$side" = B ] && bin=$B
    "$bin" bench --model small --json "$OUT/bench_small_${side}_$i.json" >/dev/null
    "$bin" bench --model gpt2-124m --json "$OUT/bench_124m_${side}_$i.json" >/dev/null
    "$bin" bench parallel --json "$OUT/parallel_${side}_$i.json" >/dev/null
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def rows(kind, side):
    return [json.load(open(f"{out}/{kind}_{side}_{i}.json")) for i in range(1, runs + 1)]
for kind in ("bench_small", "bench_124m"):
    for side in "AB":
        r = [x[0] for x in rows(kind, side)]
        tok = [x["tokens_per_s"] for x in r]
        runs_s = ", ".join("%.0f" % v for v in tok)
        print("%s %s: tok/s median %.0f (runs %s), step ms %.1f, opt ms %.2f" % (
            kind, side, statistics.median(tok), runs_s, statistics.median(x["step_ms"] for x in r),
            statistics.median(x["optimizer_ms"] for x in r)))
for side in "AB":
    rs = rows("parallel", side)
    for j, cfg in enumerate(x["config"] for x in rs[0]):
        t = [r[j]["tokens_per_s"] for r in rs]
        other = [100 * r[j]["other_ms"] / r[j]["step_ms"] for r in rs]
        comm = [r[j]["comm_ms"] for r in rs]
        runs_s = ", ".join("%.0f" % v for v in t)
        print("parallel %s %-12s: tok/s median %.0f (runs %s), comm ms %.2f, other %.2f%%" % (
            side, cfg, statistics.median(t), runs_s, statistics.median(comm), statistics.median(other)))
print("files in", out)
PY
