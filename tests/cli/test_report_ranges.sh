#!/usr/bin/env bash
# `hyperpar report` on numbers out of range (issue 22 items 4 and 8): every
# number the report makes an integer is range-checked first, so a plan.json
# with "nranks": 1e60 (which the release build printed as -2147483648 ranks,
# undefined behaviour that the sanitizer build's float-cast-overflow check
# stops) is a one-line error naming the file, the field and the value; so are
# rank numbers, run.json's rank count, first traced step and oversubscription,
# a trace's rank and dropped count, and a metrics step beyond 2^53. A trace
# event with ts or dur of 1e308 (drawn as x="-nan") is refused naming the
# event and the field. Huge but finite values elsewhere (losses of +-1e308,
# memory of 1e308 bytes, benchmark rows of 1e308) draw a page without a NaN
# or infinite coordinate. Runs in the release and the sanitizer build.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CHECK="python3 $HERE/report_check.py"
SMALL=(--layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --threads 2 --val-steps 1 --log-every 100)

"$HP" train "${SMALL[@]}" --dp 2 --steps 3 --val-every 0 --run-dir a --trace on --trace-steps 2 >a.out 2>&1 ||
  fail "train: $(tail -3 a.out)"
"$HP" report a >r.out 2>&1 || fail "report of the run as written: $(cat r.out)"

# bad NAME FILE PYTHON NEEDLE: a copy of run a with FILE edited by PYTHON (on j, its JSON) fails with NEEDLE
bad() {
  local name=$1 file=$2 code=$3 needle=$4
  rm -rf "$name" && cp -r a "$name"
  python3 - "$name/$file" "$code" <<'PY' || fail "$name: editing $file"
import json, sys
j = json.load(open(sys.argv[1]))
exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(j))
PY
  expect_error "$needle" "$HP" report "$name"
  grep -q "runtime error" err.txt && fail "$name: undefined behaviour: $(grep -m1 'runtime error' err.txt)"
}
bad n1 plan.json 'j["nranks"] = 1e60' "n1/plan.json: field 'nranks': expected a whole number in 1..1048576, got 1e+60"
bad n2 plan.json 'j["nranks"] = 2.5' "n2/plan.json: field 'nranks': expected a whole number in 1..1048576, got 2.5"
bad n3 plan.json 'j["ranks"][1]["rank"] = -1e60' "n3/plan.json: field 'ranks[1].rank': expected a whole number in 0..1048575, got -1e+60"
bad n4 run.json 'j["ranks"] = 1e60' "n4/run.json: field 'ranks': expected a whole number in 0..1048576, got 1e+60"
bad n5 run.json 'j["trace_first_step"] = 1e300' "n5/run.json: field 'trace_first_step': expected a whole number in 1..9007199254740992, got 1e+300"
bad n6 run.json 'j["oversubscribed"] = {"ranks": 2, "threads_per_rank": 2, "cores": 1e60}' \
  "n6/run.json: field 'oversubscribed.cores': expected a whole number in 1..1048576, got 1e+60"
bad n7 run.json 'j["oversubscribed"] = "yes"' "n7/run.json: field 'oversubscribed': expected an object, got a string"
bad n8 trace.rank1.json 'j["otherData"]["rank"] = 1e60' "n8/trace.rank1.json: field 'otherData.rank': expected a whole number in 0..1048575, got 1e+60"
bad n9 trace.rank0.json 'j["otherData"]["dropped_events"] = 1e300' "n9/trace.rank0.json: field 'otherData.dropped_events': expected a whole number in 0..9007199254740992, got 1e+300"
# a trace event at 1e308 microseconds, or lasting that long (item 8)
X='k = [i for i, e in enumerate(j["traceEvents"]) if e.get("ph") == "X"][3]; j["traceEvents"][k]'
bad t1 trace.rank0.json "$X[\"ts\"] = 1e308" "t1/trace.rank0.json: traceEvents[" 
grep -q "field 'ts': expected microseconds in -1e15..1e15, got 1e+308" err.txt || fail "t1: $(cat err.txt)"
bad t2 trace.rank1.json "$X[\"dur\"] = 1e308" "field 'dur': expected microseconds in 0..1e15, got 1e+308"
bad t3 trace.rank1.json "$X[\"dur\"] = -5" "field 'dur': expected microseconds in 0..1e15, got -5"
# a metrics step beyond 2^53 (an int64 that a double rounds up past the range of long)
mkdir -p m1 && printf '{"step": 1, "loss": 5}\n{"step": 9223372036854775807, "loss": 4}\n' >m1/metrics.jsonl
expect_error "m1/metrics.jsonl:2: field 'step': 9223372036854775807 is more than 2^53" "$HP" report m1
grep -q "runtime error" err.txt && fail "m1: undefined behaviour: $(grep -m1 'runtime error' err.txt)"
# a traced step range past an int
expect_error "trace steps 1..99999999999: at most 2147483647" "$HP" report a --trace-steps 1:99999999999

# huge finite values: a page, every coordinate a number
mkdir -p h1 && cp a/run.json a/plan.json h1/
printf '{"step": 1, "loss": 1e308, "lr": 1e-308, "grad_norm": -1e308}\n{"step": 2, "loss": -1e308, "lr": 1e308, "grad_norm": 1e308}\n{"step": 3, "loss": 2, "lr": 1e-3, "grad_norm": 0, "compute_ms": 1e308, "comm_ms": 1e308, "optimizer_ms": 0, "other_ms": 1e308}\n' \
  >h1/metrics.jsonl
python3 - h1/plan.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for r in j["ranks"]:
    r["memory"].update(params=1e308, grads=1e308, optimizer=1e308)
open(sys.argv[1], "w").write(json.dumps(j))
PY
"$HP" report h1 >h1.out 2>&1 || fail "report of huge values: $(cat h1.out)"
grep -q "runtime error" h1.out && fail "h1: undefined behaviour: $(grep -m1 'runtime error' h1.out)"
$CHECK h1/report.html plot-loss:training=3 plot-lr:=3 || fail "page of huge values"
grep -qi 'nan\|inf"' h1/report.html && fail "a NaN or infinity in the page of huge values: $(grep -oi '.\{40\}nan.\{10\}' h1/report.html | head -2)"
printf '[{"config": "a", "tokens_per_s": 1e308, "step_ms": 1e308, "compute_ms": 1e308, "comm_ms": 1e308, "optimizer_ms": 1e308, "other_ms": 1e308},\n {"config": "b", "tokens_per_s": -1e308, "step_ms": 5, "compute_ms": 1, "comm_ms": 2, "optimizer_ms": 1, "other_ms": 1}]\n' >hb.json
printf '[{"collective": "all-reduce", "impl": "x", "tier": "y", "ranks": 2, "bytes": 1e308, "busbw_GBps": 1e308},\n {"collective": "all-reduce", "impl": "x", "tier": "y", "ranks": 2, "bytes": 1e-308, "busbw_GBps": 1}]\n' >hc.json
"$HP" report --bench hb.json hc.json -o hb.html >hb.out 2>&1 || fail "bench page of huge values: $(cat hb.out)"
grep -q "runtime error" hb.out && fail "hb: undefined behaviour: $(grep -m1 'runtime error' hb.out)"
$CHECK hb.html || fail "bench page of huge values"
grep -qi 'nan\|inf"' hb.html && fail "a NaN or infinity in the bench page: $(grep -oi '.\{40\}nan.\{10\}' hb.html | head -2)"
finish
