# Per-rank traces (--trace): Chrome/Perfetto trace-event JSON, one file per
# rank, that parses, holds every rank's events (pid = rank) for the traced
# steps, has a compute track and collective tracks, and shows each overlapped
# gradient reduction as one event from its start to its wait, with the
# backward kernels that ran meanwhile inside its span. Also `bench --trace`,
# a prefix in directories that do not exist yet (made, as --ckpt-dir's are),
# the trace files a run directory's run.json records, and a trace path that
# cannot be written.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 3 --val-every 0 --threads 4"
"$HP" train $small --dp 2 --tp 2 --trace tr --trace-steps 2 >log.txt 2>&1 || fail "traced run failed: $(tail -2 log.txt)"
for r in 0 1 2 3; do [ -f "tr.rank$r.json" ] || fail "no trace file for rank $r"; done
python3 - <<'PY' || fail "trace contents: see above"
import json
for rank in range(4):
    d = json.load(open(f"tr.rank{rank}.json"))
    ev = d["traceEvents"]
    meta = [e for e in ev if e["ph"] == "M"]
    x = [e for e in ev if e["ph"] == "X"]
    assert all(e["pid"] == rank for e in ev), rank
    assert any(e["name"] == "process_name" and e["args"]["name"] == f"rank {rank}" for e in meta)
    assert any(e["name"] == "thread_name" and e["tid"] == 0 and e["args"]["name"] == "compute" for e in meta)
    comp = [e for e in x if e["tid"] == 0]
    coll = [e for e in x if e["tid"] > 0]
    assert {e["cat"] for e in comp} == {"fwd", "bwd", "opt"}, {e["cat"] for e in comp}
    # two traced steps: every compute step appears twice
    names = {}
    for e in comp:
        names[e["name"]] = names.get(e["name"], 0) + 1
    assert names.get("adamw_update[28 tensors]") == 2, names.get("adamw_update[16 tensors]")
    assert all(e["dur"] >= 0 for e in coll)
    waits = [e for e in coll if e["name"].endswith(".wait")]
    assert all(w["args"]["bytes"] > 0 for w in waits), "reductions carry their bytes"
    assert any(e["name"] == "sumsq_combine" and e["args"]["bytes"] == 24 for e in coll), "the norm's all-gather" 
    assert len(waits) == 2 * 28, len(waits)  # every parameter's gradient, overlapped, per step
    starts = {(e["name"], e["ts"]) for e in comp if e["name"].endswith(".redistribute")}
    inside = 0
    for w in waits:
        # the collective spans its start (the start step's own event begins at the same instant) to its wait
        assert (w["name"][:-len(".wait")], w["ts"]) in starts, w["name"]
        end = w["ts"] + w["dur"]
        inside += sum(1 for e in comp if e["cat"] == "bwd" and e["ts"] > w["ts"] and e["ts"] + e["dur"] < end
                      and not e["name"].endswith(".redistribute"))
    assert inside > 0, "no backward kernel ran while a reduction was in flight"
    fwd = [e for e in coll if e["cat"] == "fwd"]
    assert fwd, "tensor-parallel all-reduces in the forward"
    assert d["otherData"]["dropped_events"] == 0
print("traces: 4 ranks checked")
PY
# one rank
"$HP" train $small --trace one >log.txt 2>&1 || fail "1-rank traced run failed: $(tail -2 log.txt)"
python3 -c "import json; d = json.load(open('one.rank0.json')); assert any(e.get('cat') == 'opt' for e in d['traceEvents'])" ||
  fail "1-rank trace"
# bench
"$HP" bench --model small --steps 2 --trace bt >log.txt 2>&1 || fail "bench --trace failed: $(tail -2 log.txt)"
python3 -c "import json; d = json.load(open('bt.small.rank0.json')); assert len([e for e in d['traceEvents'] if e['ph'] == 'X']) > 100" ||
  fail "bench trace"
# a prefix with directories: they are made, as --ckpt-dir's are
"$HP" train $small --steps 1 --trace sub/dir/t >log.txt 2>&1 || fail "--trace sub/dir/t failed: $(tail -2 log.txt)"
[ -f sub/dir/t.rank0.json ] || fail "--trace sub/dir/t wrote no sub/dir/t.rank0.json"
# the run directory records the trace files the ranks wrote (PREFIX.rankN.json), absolute
"$HP" train $small --steps 1 --dp 2 --run-dir rd --trace tdir/p >log.txt 2>&1 || fail "traced run with a run dir failed: $(tail -2 log.txt)"
"$HP" train $small --steps 1 --dp 2 --run-dir ro --trace on >log.txt 2>&1 || fail "--trace on failed: $(tail -2 log.txt)"
python3 - "$PWD" <<'PY' || fail "run.json's trace files: see above"
import json, os, sys
cwd = sys.argv[1]
for run, prefix in (("rd", "tdir/p"), ("ro", "ro/trace")):
    r = json.load(open(f"{run}/run.json"))
    want = [os.path.join(cwd, f"{prefix}.rank{k}.json") for k in range(2)]
    assert r["trace"] == os.path.join(cwd, prefix), (run, r["trace"])
    assert r["trace_files"] == want, (run, r["trace_files"], want)
    for f in r["trace_files"]:
        assert os.path.isfile(f) and json.load(open(f))["otherData"]["rank"] == int(f[-6]), f
print("run.json trace files checked")
PY
# a trace that cannot be written: one line naming the prefix, non-zero exit, before the first step
echo x >afile
expect_error "afile/t: the trace file prefix cannot be created: afile is not a directory" "$HP" train $small --trace afile/t
finish
