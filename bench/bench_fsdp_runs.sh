#!/usr/bin/env bash
# Issue 9's FSDP figures from alternating runs (docs/benchmarks.md, "FSDP side
# by side"): RUNS times, one after the other,
#   (a) `hyperpar bench fsdp` on an emulated two-supernode link (LINK_FLAGS),
#   (b) `hyperpar bench fsdp` with no emulated delay (NODELAY_FLAGS), and
#   (c) where PyTorch >= 2.4 imports (PYTHON, default python3), the PyTorch
#       peer (bench/peers/torch_fsdp2.py: FSDP2 over 2 gloo processes and one
#       plain process) on the same model, batch and threads;
# then prints, per configuration, the median over runs of each run's step
# time, exposed share and tokens/s against the 1-rank row of the same run, and
# the ratios the issue names. Where PyTorch is missing the table says so.
# Usage: bench/bench_fsdp_runs.sh HYPERPAR [RUNS] [LAYERS]
set -euo pipefail
HP="$1" RUNS="${2:-3}" LAYERS="${3:-24}"
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=$(mktemp -d /tmp/hp-fsdp-XXXXXX)
LINK_FLAGS=${LINK_FLAGS:-"--ranks 2 --supernodes 2 --inter-bw 0.25 --inter-latency 50 --steps 7 --layers $LAYERS"}
NODELAY_FLAGS=${NODELAY_FLAGS:-"--ranks 2 --supernodes 1 --inter-bw 0 --inter-latency 0 --steps 9"}
torch_ok=0
"$PY" -c 'import torch, torch.distributed.fsdp as f; assert hasattr(f, "fully_shard")' 2>/dev/null && torch_ok=1
for i in $(seq 1 "$RUNS"); do
  "$HP" bench fsdp $LINK_FLAGS --json "$OUT/link_$i.json" >/dev/null
  "$HP" bench fsdp $NODELAY_FLAGS --json "$OUT/nodelay_$i.json" >/dev/null
  if [ "$torch_ok" = 1 ]; then
    "$PY" "$HERE/peers/torch_fsdp2.py" --model small --ranks 2 --threads 2 --steps 9 --style fsdp2 >"$OUT/torch2_$i.json"
    "$PY" "$HERE/peers/torch_fsdp2.py" --model small --ranks 1 --threads 2 --steps 9 --style ddp >"$OUT/torch1_$i.json"
  fi
done
"$PY" - "$OUT" "$RUNS" "$torch_ok" <<'PY'
import json, statistics, sys
out, runs, torch_ok = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
med = statistics.median
def rows(kind):
    return [{r["config"]: r for r in json.load(open(f"{out}/{kind}_{i}.json"))} for i in range(1, runs + 1)]
for kind, title in (("link", "emulated two-supernode link"), ("nodelay", "no emulated delay")):
    rs = rows(kind)
    r0 = rs[0]["dp"]
    print(f"\n{title}: {r0['model']} L={r0['layers']}, {r0['ranks']} ranks in "
          f"{r0['supernodes']} supernode(s), link {r0['inter_bw_gbps']} GB/s {r0['inter_latency_us']} us, "
          f"medians of {runs} runs")
    print("| config | step ms | exposed % | vs 1 rank (tok/s) | memory MB / rank |")
    print("|---|---|---|---|---|")
    for name in rs[0]:
        step = med(r[name]["step_ms"] for r in rs)
        exp = med(100 * r[name]["exposed_comm_ms"] / r[name]["step_ms"] for r in rs)
        vs1 = med(r[name]["tokens_per_s"] / r["1 rank"]["tokens_per_s"] for r in rs)
        print(f"| {name} | {step:.1f} | {exp:.2f} | {100 * vs1:.1f}% | {rs[0][name]['memory_mb']:.2f} |")
    for style in ("fsdp", "hsdp"):
        a, b = f"hyperpar {style}", f"fsdp2-style {style}"
        ratio = med(r[a]["step_ms"] / r[b]["step_ms"] for r in rs)
        print(f"{a} step / {b} step (median of per-run ratios): {ratio:.3f} ({100 * (1 - ratio):.1f}% below)")
if torch_ok:
    t2 = [json.load(open(f"{out}/torch2_{i}.json")) for i in range(1, runs + 1)]
    t1 = [json.load(open(f"{out}/torch1_{i}.json")) for i in range(1, runs + 1)]
    nd = rows("nodelay")
    print(f"\nPyTorch {t2[0]['torch']} peer (no link emulation: gloo on 127.0.0.1), the same runs:")
    print("| config | step ms | vs its 1 rank (tok/s) | hyperpar fsdp step / this step |")
    print("|---|---|---|---|")
    print(f"| torch 1 process | {med(t['step_ms'] for t in t1):.1f} | 100% | |")
    print(f"| torch FSDP2, 2 processes | {med(t['step_ms'] for t in t2):.1f} | "
          f"{100 * med(b['step_ms'] / a['step_ms'] for a, b in zip(t2, t1)):.1f}% | "
          f"{med(n['hyperpar fsdp']['step_ms'] / t['step_ms'] for n, t in zip(nd, t2)):.3f} |")
else:
    print("\nPyTorch peer: not run (PyTorch >= 2.4 does not import here; python3 -m venv V && V/bin/pip install torch,"
          " then PYTHON=V/bin/python3)")
PY
