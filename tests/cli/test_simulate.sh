# hyperpar simulate (issue 28, item 4): a plan's step predicted from its compiled programs. The split adds up
# to the step, tokens/s is the batch's tokens over it, a pipeline has a bubble, a cluster file's assumptions
# are printed, the timeline is written in the trace format (one file per stage, compute events in order), and
# bad input gets a one-line error naming the file or flag.
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
small="--layers 2 --heads 4 --channels 64 --vocab 256 --batch 8 --seq 32"
prof="--profile $SRC/profiles/generic-cpu.json"

# the split adds up; tokens/s = batch x seq / step
"$HP" simulate $small $prof --dp 2 >dp2.txt 2>err.txt || fail "simulate --dp 2 failed: $(cat err.txt)"
python3 - dp2.txt <<'PY' || fail "dp 2's split: see above"
import re, sys
t = open(sys.argv[1]).read()
def ms(name):
    return float(re.search(r"^\s*" + name + r"\s+([0-9.]+) ms", t, re.M).group(1))
step = ms("predicted step")
parts = [ms("compute"), ms("exposed intra"), ms("exposed inter"), ms("pipeline bubble"), ms("optimizer")]
assert step > 0 and abs(sum(parts) - step) <= 0.003, (step, parts)
tok = float(re.search(r"^tokens/s\s+([0-9]+)", t, re.M).group(1))
assert abs(tok - 8 * 32 / (step * 1e-3)) <= 0.002 * tok + 1, (tok, step)
assert re.search(r"^  0 +[0-9.]+ [KMG]?B", t, re.M), "memory row"
assert "2 ranks, 1 stage" in t
PY

# a pipeline of 2 stages: a bubble, two memory rows, one trace per stage
"$HP" simulate $small $prof --pp 2 --grad-accum 4 --timeline tl >pp.txt 2>err.txt || fail "simulate --pp 2 failed: $(cat err.txt)"
grep -Eq '^  pipeline bubble +[0-9.]*[1-9][0-9.]* ms' pp.txt || fail "no bubble: $(grep bubble pp.txt)"
grep -Eq '^  1 +[0-9.]+ [KMG]?B' pp.txt || fail "stage 1's memory row missing"
python3 - tl.rank0.json tl.rank1.json <<'PY' || fail "the timeline: see above"
import json, sys
for f in sys.argv[1:]:
    ev = [e for e in json.load(open(f))["traceEvents"] if e.get("ph") == "X"]
    comp = [e for e in ev if e["tid"] == 0]
    assert len(comp) > 20, (f, len(comp))
    for a, b in zip(comp, comp[1:]):
        assert b["ts"] >= a["ts"] + a["dur"] - 0.002, (f, a, b)
    assert any(e["tid"] > 0 for e in ev), (f, "no collective track")
PY

# the timeline drawn by `hyperpar report`: a directory holding a simulated step (its .sim.json and traces) gets
# the prediction's page, its step the one simulate printed, one timeline row per stage
"$HP" simulate $small $prof --pp 2 --dp 2 --grad-accum 2 --timeline sim/step >sim.txt 2>err.txt ||
  fail "simulate --timeline sim/step failed: $(cat err.txt)"
[ -f sim/step.sim.json ] && [ -f sim/step.rank0.json ] && [ -f sim/step.rank2.json ] ||
  fail "simulate --timeline: expected sim/step.sim.json, .rank0.json and .rank2.json: $(ls sim)"
pred=$(sed -n 's/^predicted step *\([0-9.]*\) ms.*/\1/p' sim.txt)
"$HP" report sim >rep.txt 2>err.txt || fail "report of a simulated step failed: $(cat err.txt)"
grep -q "a simulated step (predicted $pred ms), 2 traced ranks" rep.txt ||
  fail "report: expected 'a simulated step (predicted $pred ms), 2 traced ranks', got: $(cat rep.txt)"
python3 - sim/report.html sim/step.sim.json "$pred" <<'PY' || fail "the simulated step's page: see above"
import json, re, sys
page, sim, pred = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), float(sys.argv[3])
assert 'id="sim"' in page and 'id="plot-timeline"' in page and 'id="assumptions"' in page, "sections missing"
assert "plot-loss" not in page, "a simulated step has no curves"
assert abs(sim["step_ms"] - pred) < 1e-3 * pred, (sim["step_ms"], pred)
parts = sum(sim[k] for k in ("compute_ms", "optimizer_ms", "exposed_intra_ms", "exposed_inter_ms", "bubble_ms"))
assert abs(parts - sim["step_ms"]) < 1e-6 * sim["step_ms"], (parts, sim["step_ms"])
assert sim["ranks_traced"] == [0, 2] and sim["mesh"].startswith("pp=2,dp=2"), sim
rows = re.findall(r'<tr><td>(\d+)</td><td class="num">1</td>', page)
assert rows == ["0", "2"], rows
PY
"$HP" report sim/step.sim.json >rep2.txt 2>err.txt || fail "report of a named .sim.json failed: $(cat err.txt)"
[ -f sim/step.sim.html ] || fail "report NAME.sim.json: expected NAME.sim.html beside it"
# bad simulated steps: one line naming the file and the field, non-zero exit
cp -r sim bad1 && sed -i 's/"hyperpar-simulated-step"/"other"/' bad1/step.sim.json
expect_error "bad1/step.sim.json: field 'format'" "$HP" report bad1
cp -r sim bad2 && rm bad2/step.rank2.json
expect_error "bad2/step.rank2.json: the timeline of rank 2 is missing" "$HP" report bad2
cp -r sim bad3 && sed -i 's/"step_ms":[0-9.e+-]*/"step_ms":-1/' bad3/step.sim.json
expect_error "field 'step_ms': expected a number >= 0" "$HP" report bad3
cp -r sim bad4 && cp sim/step.sim.json bad4/other.sim.json
expect_error "two simulated timelines" "$HP" report bad4

# a cluster file: its name and assumptions printed, links from it
"$HP" simulate $small $prof --dp 4 --cluster "$SRC/clusters/ascend910-2048.cluster" >asc.txt 2>err.txt ||
  fail "simulate --cluster failed: $(cat err.txt)"
grep -q "on cluster 'ascend910-2048'" asc.txt || fail "cluster name: $(head -1 asc.txt)"
grep -q "collectives priced at the cluster's links" asc.txt || fail "links: $(sed -n 2p asc.txt)"
grep -q '^  - ascend910-2048: ' asc.txt || fail "the cluster's assumptions are not printed"

# bad input
expect_error "nope.json" "$HP" simulate $small --profile nope.json --dp 2
expect_error "--links must be auto, cluster or profile, got 'x'" "$HP" simulate $small $prof --links x
printf 'name: c\nsupernodes: 1\n' >bad.cluster
expect_error "bad.cluster" "$HP" simulate $small $prof --cluster bad.cluster
finish
