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
