#!/usr/bin/env bash
# Issue 24's FSDP figures from alternating runs (docs/benchmarks.md, "FSDP at
# GPT-2 124M's proportions"): RUNS times, one after the other, each of the
# given `hyperpar bench fsdp` flag sets (separated by ' ;; '), then per flag
# set and row the median over runs of the step time, the exposed share, the
# memory, and of each run's ratio of the row's step to the fsdp2 style's
# row of the same kind (hsdp to fsdp2-hsdp, fsdp to fsdp2-fsdp) in that run.
# Usage: bench/bench_fsdp_alt.sh HYPERPAR RUNS 'FLAGS A ;; FLAGS B ...'
set -euo pipefail
HP="$1" RUNS="$2" SETS="$3"
OUT=$(mktemp -d /tmp/hp-fsdp-alt-XXXXXX)
IFS=$'\n' read -r -d '' -a flagsets < <(printf '%s' "$SETS" | sed 's/ *;; */\n/g' && printf '\0')
for i in $(seq 1 "$RUNS"); do
  for k in "${!flagsets[@]}"; do
    # shellcheck disable=SC2086
    "$HP" bench fsdp ${flagsets[$k]} --json "$OUT/set${k}_$i.json" >/dev/null
  done
done
python3 - "$OUT" "$RUNS" "${#flagsets[@]}" "${flagsets[@]}" <<'PY'
import json, statistics, sys
out, runs, nsets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
flags = sys.argv[4:]
med = statistics.median
for k in range(nsets):
    rs = [{r["config"]: r for r in json.load(open(f"{out}/set{k}_{i}.json"))} for i in range(1, runs + 1)]
    print(f"\n`hyperpar bench fsdp {flags[k]}`, medians of {runs} alternating runs")
    print("| config | step ms | exposed % | step / fsdp2 style's | memory MB / rank |")
    print("|---|---|---|---|---|")
    for name in rs[0]:
        step = med(r[name]["step_ms"] for r in rs)
        exp = med(100 * r[name]["exposed_comm_ms"] / r[name]["step_ms"] for r in rs)
        peer = "fsdp2-style " + name.split()[-1] if name.startswith("hyperpar") else None
        ratio = ""
        if peer and all(peer in r for r in rs):
            ratio = f"{med(r[name]['step_ms'] / r[peer]['step_ms'] for r in rs):.3f}"
        print(f"| {name} | {step:.1f} | {exp:.2f} | {ratio} | {rs[0][name]['memory_mb']:.1f} |")
PY
rm -rf "$OUT"
