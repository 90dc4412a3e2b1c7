#!/usr/bin/env bash
# hyperpar train --run-dir and hyperpar report: the run directory's files;
# the page of a short real run checked from its DOM (one SVG per plot, the
# points of every curve, no external reference); --compare (a run with itself:
# Pearson 1 and max |dloss| 0; two runs: the values computed here in Python);
# a run killed with SIGKILL still reports up to its last completed step; bad
# input gives one-line errors naming the file and line; a cut-short last line
# gives a page with a note; --bench pages. The page's figures (issue 21 item
# 11): the step-time split stacked (each layer the running sum of the
# metrics' parts), the loss smoothed (TensorBoard's debiased EMA, 0.6 as the
# page opens, raw faint behind), every axis and bar with its unit and every
# value rounded; a one-rank run without an empty collectives table or "1
# ranks"; the compare page with identical curves dashed over each other and
# said to coincide, and every run's step-time split and memory; a run marked
# oversubscribed (item 6) warns and marks the traces' exposed column.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CHECK="python3 $HERE/report_check.py"
SMALL=(--layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --threads 2 --val-steps 1 --log-every 100)

# ---- a traced DP=2 run with its run directory
printf 'warmup = 4\n' >a.cfg
"$HP" train "${SMALL[@]}" --dp 2 --steps 20 --val-every 5 --lr 1e-2 --run-dir a --trace on --trace-steps 3 \
  --config a.cfg >a.out 2>&1 || fail "train --run-dir a: $(tail -3 a.out)"
for f in run.json config.json plan.json machine.json metrics.jsonl trace.rank0.json trace.rank1.json; do
  [ -s "a/$f" ] || fail "run directory lacks $f"
done
python3 - a <<'PY' || fail "run directory contents"
import json, sys
d = sys.argv[1]
run = json.load(open(f"{d}/run.json"))
assert run["status"] == "done" and run["last_step"] == 20 and run["ranks"] == 2 and run["mesh"] == "dp=2,tp=1", run
assert run["trace"].endswith("/a/trace") and run["metrics"].endswith("/a/metrics.jsonl"), run
src = {s["key"]: (s["value"], s["source"]) for s in json.load(open(f"{d}/config.json"))["settings"]}
assert src["steps"] == ("20", "flag") and src["warmup"] == ("4", "config") and src["vocab"] == ("256", "default"), src
assert src["lr"][1] == "flag" and abs(float(src["lr"][0]) - 1e-2) < 1e-9, src["lr"]
plan = json.load(open(f"{d}/plan.json"))
assert plan["mesh"] == "dp=2,tp=1" and len(plan["ranks"]) == 2, plan["mesh"]
for r in plan["ranks"]:
    assert r["memory"]["params"] > 0 and r["memory"]["total"] >= r["memory"]["params"], r["memory"]
    assert any(t["name"] == "wte" and t["layout"] == "R@dp,R@tp" for t in r["tensors"]), r["tensors"][:3]
    assert any(c["phase"] == "bwd" and "all-reduce" in c["steps"] for c in r["collectives"])
m = json.load(open(f"{d}/machine.json"))
assert m["cores_online"] >= 1 and m["kernel_isa"] in ("avx512", "avx2+fma", "scalar") and "OpenBLAS" in m["openblas"], m
assert m["cpu"] and m["mpi"] and m["hyperpar"], m
PY
"$HP" report a >r.out 2>&1 || fail "report a: $(cat r.out)"
grep -q "report: a/report.html" r.out || fail "report names its page: $(cat r.out)"
grep -q "20 steps, 2 traced ranks, communication hidden" r.out || fail "report summary: $(cat r.out)"
nval=$(grep -c val_loss a/metrics.jsonl)
[ "$nval" = 4 ] || fail "4 validations expected, got $nval"
SPLIT="compute_ms=compute,comm_ms=exposed communication,optimizer_ms=optimizer,other_ms=other"
# MFU: a record has it unless the peak measured at start was under the achieved rate (the sanitizer
# build measures its FMA peak unvectorised while OpenBLAS runs at speed)
nmfu=$(grep -c '"mfu"' a/metrics.jsonl)
if [ "$nmfu" -gt 0 ]; then MFU=(plot-mfu:="$nmfu"); else MFU=(--no-figure plot-mfu); fi
$CHECK a/report.html plot-loss:training=20 plot-loss:validation=4 plot-lr:=20 plot-grad-norm:=20 plot-tokens:=20 \
  plot-step-ms:=20 --text "Resolved configuration" --text "Layouts" --text "h.0.attn.qkv.weight" \
  --text "R@dp,R@tp" --text "per-rank timeline" --text "rank 1 kernels" --text "hidden behind compute" \
  --text "memory per rank" --text "kernel_isa" "${MFU[@]}" plot-split:compute=20 "plot-split:exposed communication=20" \
  plot-split:optimizer=20 plot-split:other=20 --stacked "plot-split=a/metrics.jsonl:$SPLIT" \
  "plot-loss:training smoothed=20" --smoothed plot-loss:training=0.6 --axis-units --text "memory (kB)" \
  --text "time per step (ms)" --text "peak memory (resident, this process)" --text "smoothed (weight 0.60)" \
  --text "mesh" --text ", 2 ranks" --no-text "Oversubscribed" || fail "page of run a"
grep -q '<label class="smoothing" hidden>smoothing <input type="range" min="0" max="0.99"' a/report.html ||
  fail "no smoothing slider (hidden until the script shows it)"
# the peak memory rounded with its unit (run.json has it in MiB, unrounded)
python3 - a/run.json a/report.html <<'PY' || fail "peak memory in the summary"
import json, re, sys
mib = json.load(open(sys.argv[1]))["peak_rss_mb"]
m = re.search(r"peak memory \(resident, this process\)</th><td>([0-9.]+) MB</td>", open(sys.argv[2]).read())
assert m, "no peak memory row in MB"
assert abs(float(m.group(1)) - mib * 1.048576) <= 0.05 + 0.001 * mib, (m.group(1), mib)
assert len(m.group(1).replace(".", "").lstrip("0")) <= 3 or "." not in m.group(1), m.group(1)
PY
# the step split adds up to the step, and every step has an MFU
python3 - a/metrics.jsonl <<'PY' || fail "the metrics' step split or MFU: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(rows) == 20, len(rows)
for r in rows:
    parts = r["compute_ms"] + r["comm_ms"] + r["optimizer_ms"] + r["other_ms"]
    assert abs(parts - r["step_ms"]) <= 0.02 * r["step_ms"] + 0.01, r
    assert r["compute_ms"] > 0 and r["comm_ms"] > 0 and r["optimizer_ms"] > 0, r  # DP=2: the reductions count
    assert "mfu" not in r or 0 < r["mfu"] <= 1, r
PY
grep -q 'id="plot-timeline"' a/report.html || fail "no timeline"
grep -q 'id="plot-memory"' a/report.html || fail "no memory chart"
# the timeline's step range
"$HP" report a --trace-steps 2:3 -o a2.html >r2.out 2>&1 || fail "report --trace-steps: $(cat r2.out)"
grep -q "traced steps 2 to 3 of 3" a2.html || fail "trace range not shown"
expect_error "--trace-steps: expected 1 <= A <= B" "$HP" report a --trace-steps 3:1

# a resumed run: the settings it inherits are marked as the checkpoint's
"$HP" train "${SMALL[@]}" --steps 4 --lr 2e-3 --ckpt-dir ck --run-dir r1 >r1.out 2>&1 || fail "train r1: $(tail -3 r1.out)"
"$HP" train --resume ck --steps 6 --threads 2 --run-dir r2 >r2.out 2>&1 || fail "resume r2: $(tail -3 r2.out)"
python3 - r2 <<'PY' || fail "resumed run's settings"
import json, sys
src = {s["key"]: (s["value"], s["source"]) for s in json.load(open(f"{sys.argv[1]}/config.json"))["settings"]}
assert src["lr"][1] == "checkpoint" and abs(float(src["lr"][0]) - 2e-3) < 1e-9 and src["steps"] == ("6", "flag"), (src["lr"], src["steps"])
assert src["resume"] == ("ck", "flag") and src["layers"] == ("1", "checkpoint"), (src["resume"], src["layers"])
run = json.load(open(f"{sys.argv[1]}/run.json"))
assert run["start_step"] == 4 and run["last_step"] == 6 and run["status"] == "done", run
PY
[ "$(grep -c '"loss"' r2/metrics.jsonl)" = 2 ] || fail "resumed run's metrics: $(cat r2/metrics.jsonl)"

# ---- --compare: a run with itself, and two runs (values computed here)
"$HP" train "${SMALL[@]}" --steps 20 --val-every 5 --lr 5e-3 --run-dir b >b.out 2>&1 || fail "train b: $(tail -3 b.out)"
"$HP" report a --compare a -o self.html >self.out 2>&1 || fail "compare self: $(cat self.out)"
grep -q "compare a with a: 20 common steps, pearson 1.000000000, max |dloss| 0$" self.out || fail "self compare: $(cat self.out)"
# identical curves: the second dashed over the first, and said to coincide
$CHECK self.html --text "coincides with a train: dashed over it" --text "coincides with a val: dashed over it" \
  --text "identical: the curves coincide" plot-split:compute=20 plot-split-1:compute=20 || fail "self-compare page"
python3 - self.html <<'PY' || fail "identical curves are not drawn apart"
import re, sys
lin = open(sys.argv[1]).read().split('id="plot-loss"')[1].split('class="view-log"')[0]
paths = re.findall(r'<path class="series raw" data-series="a train"[^>]*>', lin)
assert len(paths) == 2, paths
assert "stroke-dasharray" not in paths[0] and 'stroke-dasharray="6 6"' in paths[1], paths
PY
"$HP" report a --compare b -o ab.html >ab.out 2>&1 || fail "compare a b: $(cat ab.out)"
python3 - a/metrics.jsonl b/metrics.jsonl ab.out <<'PY' || fail "two-run compare: $(cat ab.out)"
import json, math, re, sys
def losses(p):
    d = {}
    for line in open(p):
        o = json.loads(line)
        if "loss" in o and o["loss"] is not None:
            d[o["step"]] = o["loss"]
    return d
a, b = losses(sys.argv[1]), losses(sys.argv[2])
common = sorted(set(a) & set(b))
x, y = [a[s] for s in common], [b[s] for s in common]
mx, my = sum(x) / len(x), sum(y) / len(y)
r = sum((p - mx) * (q - my) for p, q in zip(x, y)) / math.sqrt(sum((p - mx) ** 2 for p in x) * sum((q - my) ** 2 for q in y))
dmax = max(abs(p - q) for p, q in zip(x, y))
out = open(sys.argv[3]).read()
m = re.search(r"compare b with a: (\d+) common steps, pearson ([-0-9.]+), max \|dloss\| ([0-9.e+-]+)", out)
assert m, out
assert int(m.group(1)) == len(common) == 20, m.group(1)
assert abs(float(m.group(2)) - r) < 2e-9, (m.group(2), r)
assert abs(float(m.group(3)) - dmax) <= 1e-7 * dmax, (m.group(3), dmax)
assert dmax > 0 and r < 1
PY
$CHECK ab.html plot-loss:"a train"=20 plot-loss:"b train"=20 plot-loss:"a val"=4 plot-lr:a=20 plot-lr:b=20 \
  --text "Comparison of training losses" --no-text "coincides" --smoothed "plot-loss:a train=0.6" \
  --smoothed "plot-loss:b train=0.6" --stacked "plot-split=a/metrics.jsonl:$SPLIT" \
  --stacked "plot-split-1=b/metrics.jsonl:$SPLIT" --text "step-time split: b" --text "a: rank 1" \
  --text "b: rank 0" --axis-units || fail "compare page"
# a run of one rank: no empty collectives table, no "1 ranks"
"$HP" report b -o b.html >bo1.out 2>&1 || fail "report b: $(cat bo1.out)"
$CHECK b.html --text "1 rank (no plan)" --no-text ", 1 rank" --text "None: one rank has no one to talk to" \
  --no-text "bytes sent" --axis-units || fail "one-rank page"

# ---- a run marked oversubscribed (run.json, issue 21 item 6): a warning, and the exposed column marked
cp -r a ov
python3 - ov/run.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["oversubscribed"] = {"ranks": 2, "threads_per_rank": 2, "cores": 1}
json.dump(r, open(sys.argv[1], "w"))
PY
"$HP" report ov >ov.out 2>&1 || fail "report of an oversubscribed run: $(cat ov.out)"
$CHECK ov/report.html --text "Oversubscribed:" --text "2 ranks × 2 threads = 4 threads on 1 core" \
  --text "waiting includes time descheduled" --text "* includes time descheduled" || fail "oversubscribed page"
grep -q '<p class="note warn" id="oversubscribed">' ov/report.html || fail "no visible oversubscription warning"
grep -q '<th class="exposed">exposed<sup>\*</sup></th>' ov/report.html || fail "the exposed column is not marked"
grep -q '<th class="exposed">exposed</th>' a/report.html || fail "a run on enough cores has its exposed column marked"

# ---- a run killed with SIGKILL mid-way: the report shows it up to its last step. How many steps it
# makes before the kill depends on the machine's load: a model of ~10 ms a step and a 10000-pixel plot
# keep every step's point on the page (no decimation) whatever the delay, short of minutes
KILLED=(--layers 2 --heads 4 --channels 128 --batch 8 --seq 64 --threads 2 --val-steps 1 --log-every 100)
"$HP" train "${KILLED[@]}" --steps 100000 --val-every 0 --run-dir k >k.out 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ "$(grep -c '"loss"' k/metrics.jsonl 2>/dev/null || echo 0)" -ge 30 ] && break
  sleep 0.5
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
n=$(grep -c '"loss".*}$' k/metrics.jsonl)
last=$(tail -n 1 k/metrics.jsonl)
[ "$n" -ge 30 ] || fail "killed run wrote only $n steps"
grep -q '"status":"running"' k/run.json || fail "killed run's status: $(cat k/run.json)"
"$HP" report k --width 10000 >k.rep 2>&1 || fail "report of a killed run: $(cat k.rep)"
grep -q ": $n steps, run not finished" k.rep || fail "killed run report: $(cat k.rep) (expected $n steps; last line $last)"
$CHECK k/report.html plot-loss:training="$n" --text "The run did not finish" --text "last completed step, $n" || fail "killed page"

# ---- bad input: one-line errors naming the file and line
expect_error "nope: no such run directory" "$HP" report nope
mkdir -p empty
expect_error "empty: no metrics.jsonl" "$HP" report empty
mkdir -p t1 t2 t3 t4 t5
head -n 5 b/metrics.jsonl >t1/metrics.jsonl
sed -n 6p b/metrics.jsonl | head -c 30 >>t1/metrics.jsonl; echo >>t1/metrics.jsonl
tail -n +7 b/metrics.jsonl >>t1/metrics.jsonl
expect_error "t1/metrics.jsonl:6: not valid JSON" "$HP" report t1
head -n 2 b/metrics.jsonl >t2/metrics.jsonl
echo '{"step": 3, "loss": [5.1, 5.2]}' >>t2/metrics.jsonl
expect_error "t2/metrics.jsonl:3: field 'loss': an array is not a metrics value" "$HP" report t2
printf '{"step": 1, "loss": 5.5}\n{"step": 2, "loss": "high"}\n' >t3/metrics.jsonl
expect_error "t3/metrics.jsonl:2: field 'loss': expected a number or null, got a string" "$HP" report t3
printf '{"step": 1, "loss": 5.5}\n{"loss": 5.4}\n' >t4/metrics.jsonl
expect_error "t4/metrics.jsonl:2: missing field 'step'" "$HP" report t4
cp b/metrics.jsonl t5/metrics.jsonl && printf '{"step": 1}\n{"step": 2, "lo' >t5/run.json
expect_error "t5/run.json:2: json: offset" "$HP" report t5
# a cut-short LAST line: a page, with a note
total=$(grep -c '"loss"' b/metrics.jsonl)
mkdir -p cut && cp b/metrics.jsonl cut/ && printf '{"step": 21, "loss": 2.9' >>cut/metrics.jsonl
"$HP" report cut >cut.out 2>&1 || fail "cut-short last line: $(cat cut.out)"
grep -q "last metrics line cut short" cut.out || fail "cut summary: $(cat cut.out)"
$CHECK cut/report.html plot-loss:training="$total" --text "the last line is cut short" || fail "cut page"
grep -q 'id="truncated"' cut/report.html || fail "no visible note"
# a metrics file alone
"$HP" report b/metrics.jsonl >m.out 2>&1 || fail "report of a metrics file: $(cat m.out)"
[ -s b/metrics.html ] || fail "metrics page not beside the file: $(cat m.out)"

# ---- train: the default run directory, none, and --trace on without one
mkdir -p d && (cd d && "$HP" train "${SMALL[@]}" --steps 2 >out.txt 2>&1) || fail "default run dir train"
ls d/runs/*/metrics.jsonl >/dev/null 2>&1 || fail "no default run directory: $(ls -R d)"
grep -q "run directory: runs/" d/out.txt || fail "run directory not printed: $(cat d/out.txt)"
mkdir -p e && (cd e && "$HP" train "${SMALL[@]}" --steps 2 --run-dir none >/dev/null 2>&1) || fail "--run-dir none"
[ ! -e e/runs ] || fail "--run-dir none made runs/"
mkdir -p f && (cd f && "$HP" train "${SMALL[@]}" --steps 2 --metrics m.jsonl >/dev/null 2>&1) || fail "--metrics"
[ ! -e f/runs ] || fail "--metrics made runs/"
expect_error "--trace on puts the traces in the run directory" "$HP" train "${SMALL[@]}" --steps 2 --metrics m.jsonl --trace on

# ---- --bench: the rows of bench, bench parallel and bench comm
cat >bench.json <<'J'
[
  {"config": "small", "threads": 2, "B": 4, "T": 64, "tokens_per_s": 9000.5, "step_ms": 28.4, "forward_ms": 9.1, "backward_ms": 17.2, "optimizer_ms": 2.1, "gflops": 40.2, "peak_gflops": 150.0, "mfu": 0.268, "peak_rss_mb": 80.1, "fma_isa": "avx512", "openblas_coretype": "", "openblas_core": "Cooperlake"},
  {"config": "medium", "threads": 2, "B": 4, "T": 128, "tokens_per_s": 5000.0, "step_ms": 102.4, "forward_ms": 30.0, "backward_ms": 66.0, "optimizer_ms": 6.4, "gflops": 51.0, "peak_gflops": 150.0, "mfu": 0.34, "peak_rss_mb": 300.0, "fma_isa": "avx512", "openblas_coretype": "", "openblas_core": "Cooperlake"}
]
J
cat >par.json <<'J'
[
  {"config": "plain", "model": "small", "dp": 0, "tp": 0, "threads": 2, "tokens_per_s": 9000, "step_ms": 28.0, "compute_ms": 25.0, "comm_ms": 0.0, "optimizer_ms": 2.0, "other_ms": 1.0},
  {"config": "dp2", "model": "small", "dp": 2, "tp": 1, "threads": 2, "tokens_per_s": 8000, "step_ms": 31.0, "compute_ms": 25.0, "comm_ms": 2.5, "optimizer_ms": 2.0, "other_ms": 1.5}
]
J
"$HP" bench comm --sizes 64K,1M --sections memcpy,supernode --json comm.json >comm.out 2>&1 || fail "bench comm: $(tail -3 comm.out)"
"$HP" report --bench bench.json par.json comm.json -o bench.html >bo.out 2>&1 || fail "report --bench: $(cat bo.out)"
ncomm=$(python3 -c "import json,sys; rows=json.load(open('comm.json')); print(len(rows))")
[ "$ncomm" -ge 2 ] || fail "bench comm wrote $ncomm rows"
series=$(python3 - comm.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
keys = {}
for r in rows:
    if r["bytes"] > 0:
        k = f'{r["collective"]} {r["impl"]} {r["tier"]} x{r["ranks"]}'
        keys.setdefault(k, set()).add(r["bytes"])
print(" ".join(f"bench2-busbw:{k}={len(v)}".replace(" ", "\x01") for k, v in keys.items()))
PY
)
args=()
for s in $series; do args+=("${s//$'\x01'/ }"); done
$CHECK bench.html "${args[@]}" --text "bench.json (2 rows)" --text "step-time split" --text "tokens_per_s" \
  --text "medium" --text "dp2" --text "bus bandwidth (GB/s)" --text "tokens_per_s (tokens/s)" \
  --text "peak_rss_mb (MB)" --text "message size (bytes)" --axis-units || fail "bench page"
grep -c '<rect class="bar"' bench.html | grep -qv '^0$' || fail "no bars"
# bench muon's rows: runs (the optimizer's split) and plan-only balance rows, drawn apart, labelled by ranks
cat >muon.json <<'J'
[
  {"model": "small", "layout": "fsdp", "ranks": 2, "mpi": 0, "optimizer": "muon", "muon_dist": "layout", "step_ms": 270.5, "optimizer_ms": 130.2, "gather_ms": 2.1, "ns_ms": 120.4, "return_ms": 4.3, "update_ms": 1.2, "rest_ms": 2.2, "ns_gflop_max": 10.07, "ns_imbalance": 1.0},
  {"model": "small", "layout": "fsdp", "ranks": 2, "mpi": 1, "optimizer": "muon", "muon_dist": "round-robin", "step_ms": 280.5, "optimizer_ms": 140.2, "gather_ms": 2.0, "ns_ms": 130.4, "return_ms": 4.0, "update_ms": 1.3, "rest_ms": 2.5, "ns_gflop_max": 12.08, "ns_imbalance": 1.2},
  {"model": "gpt2-124m", "layout": "fsdp", "ranks": 64, "balance_only": 1, "muon_dist": "layout", "ns_gflop_max": 27.18, "ns_gflop_total": 1630.7, "ns_imbalance": 1.067}
]
J
"$HP" report --bench muon.json -o muon.html >mo.out 2>&1 || fail "report --bench muon.json: $(cat mo.out)"
$CHECK muon.html --text "optimizer split" --text "ns_gflop_total" --text "gpt2-124m fsdp layout x64" \
  --text "small fsdp muon round-robin x2 MPI" || fail "bench muon page"
grep -q 'ns_gflop_total.*small fsdp muon layout' muon.html && fail "the balance rows' fields are drawn for the runs"
printf '[{"config": "x", "tokens_per_s": {"a": 1}}]\n' >badbench.json
expect_error "badbench.json: row 0: field 'tokens_per_s': an object is not a benchmark value" "$HP" report --bench badbench.json
finish
