# hyperpar plan: the layouts, inserted collectives and memory a plan compiles
# to (text and JSON), and deliberately wrong plans caught before any step,
# through both `hyperpar plan` and `hyperpar train`, with one-line messages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --vocab 256 --batch 4 --seq 32"

# ---- layouts and local shapes, DP=2 x TP=2 ----
"$HP" plan $small --dp 2 --tp 2 --json p.json >out.txt 2>err.txt || fail "plan --dp 2 --tp 2 failed: $(cat err.txt)"
grep -q '^mesh dp=2,tp=2: 4 ranks (world 4)' out.txt || fail "mesh line: $(head -1 out.txt)"
# the passes of hp_compile, in order, with what each did
[ "$(sed -n '/^passes (hp_compile, rank 0)/,/^$/p' out.txt | awk 'NR > 1 && NF { print $1 }' | tr '\n' ' ')" = \
  "autodiff propagate fsdp lower optimizer wgrad schedule memory " ] || fail "passes: $(sed -n '/^passes/,/^$/p' out.txt)"
grep -Eq '^  optimizer +adamw: 28 adamw tensors, 0 muon shape groups, 56 state tensors; clip 1; norm summed over ranks' out.txt ||
  fail "optimizer pass: $(grep '^  optimizer' out.txt)"
grep -Eq '^  schedule +[0-9]+ steps .*; 28 gradient reductions overlapped' out.txt || fail "schedule pass: $(grep '^  schedule' out.txt)"
grep -Eq '^  opt +sumsq_combine +world\[0\.\.3\] ' out.txt || fail "no gradient-norm all-gather in the optimizer phase"
row() { # name: "layout local-shape" of a tensor row
  awk -v n="$1" '$2 == n { l = $0; sub(/^.*\]  +/, "", l); print l }' out.txt | sed 's/  */ /g'; }
check_row() { [ "$(row "$1")" = "$2" ] || fail "$1: '$(row "$1")', expected '$2'"; }
check_row h.0.attn.qkv.weight "R@dp,S(1)@tp [3, 32, 64]"
check_row h.0.attn.qkv.bias "R@dp,S(1)@tp [3, 32]"
check_row h.0.attn.proj.weight "R@dp,S(1)@tp [64, 32]"
check_row h.1.mlp.fc.weight "R@dp,S(0)@tp [128, 64]"
check_row h.1.mlp.proj.bias "R@dp,R@tp [64]"
check_row wte "R@dp,S(0)@tp [128, 64]"
check_row tokens "S(0)@dp,R@tp [2, 32]"
grep -q '^  act ' out.txt && fail "activations listed without --all"
# collectives: Megatron's 2 all-reduces per layer + 1 over tp each way; over
# dp the loss (forward) and every parameter's gradient (backward: 4 + 12 L)
count() { awk -v ph="$1" -v g="$2" -v k="$3" '$1 == ph && $3 ~ "^"g"\\[" && index($0, k) { n++ } END { print n + 0 }' out.txt; }
[ "$(count fwd tp 'all-reduce(tp')" = 5 ] || fail "forward tp all-reduces: $(count fwd tp 'all-reduce(tp')"
[ "$(count bwd tp 'all-reduce(tp')" = 5 ] || fail "backward tp all-reduces: $(count bwd tp 'all-reduce(tp')"
[ "$(count fwd dp 'all-reduce(dp')" = 1 ] || fail "forward dp all-reduces: $(count fwd dp 'all-reduce(dp')"
[ "$(count bwd dp 'all-reduce(dp')" = 28 ] || fail "backward dp all-reduces: $(count bwd dp 'all-reduce(dp')"
grep -Eq '^  fwd +loss +dp\[0,2\] ' out.txt || fail "no loss all-reduce over dp[0,2]"
grep -Eq '^  bwd +h\.0\.attn\.qkv\.weight\.grad +dp\[0,2\] ' out.txt || fail "no qkv gradient all-reduce"
grep -Eq '^  fwd +all-reduce +6 ' out.txt || fail "forward all-reduce total: $(grep -E '^  fwd +all-reduce' out.txt)"
grep -Eq '^  bwd +all-reduce +33 ' out.txt || fail "backward all-reduce total: $(grep -E '^  bwd +all-reduce' out.txt)"
grep -Eq '^  0 +[0-9.]+ [KMG]?B ' out.txt || fail "no memory row for rank 0"
grep -q 'every operator has a sharding rule' out.txt || fail "notes: $(tail -2 out.txt)"

# ---- tensor parallel alone: 2L+1 all-reduces each way (L = 3) ----
"$HP" plan --layers 3 --heads 4 --channels 64 --tp 2 >out.txt 2>err.txt || fail "plan --tp 2 failed: $(cat err.txt)"
[ "$(count fwd tp 'all-reduce(tp')" = 7 ] || fail "tp=2, L=3: forward all-reduces $(count fwd tp 'all-reduce(tp')"
[ "$(count bwd tp 'all-reduce(tp')" = 7 ] || fail "tp=2, L=3: backward all-reduces $(count bwd tp 'all-reduce(tp')"
grep -q 'all-gather(tp) .* (cross-entropy statistics)' out.txt || fail "no cross-entropy statistics all-gather"

# ---- JSON: the same report ----
python3 - p.json <<'EOF' || fail "JSON report: see above (python3 is installed by scripts/setup.sh --tests)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mesh"] == "dp=2,tp=2" and d["nranks"] == 4 and d["world"] == 4, d["mesh"]
assert [a["name"] for a in d["axes"]] == ["dp", "tp"]
assert d["model"]["L"] == 2 and d["model"]["B"] == 4 and d["model"]["T"] == 32
assert d["plan"].startswith("mesh: dp=2,tp=2")
r = d["ranks"][0]
assert r["rank"] == 0 and len(d["ranks"]) == 1
t = {x["name"]: x for x in r["tensors"]}
q = t["h.0.attn.qkv.weight"]
assert q["kind"] == "param" and q["shape"] == [3, 64, 64] and q["layout"] == "R@dp,S(1)@tp" and q["local_shape"] == [3, 32, 64], q
assert t["tokens"]["kind"] == "input" and t["tokens"]["local_shape"] == [2, 32]
c = r["collectives"]
ar = [x for x in c if x["phase"] == "fwd" and x["steps"].startswith("all-reduce(tp")]
assert len(ar) == 5 and all(x["groups"] == "tp[0,1]" and x["bytes"] > 0 and x["communicates"] for x in ar), ar
tot = {(x["phase"], x["kind"]): x for x in r["totals"]}
assert tot[("fwd", "all-reduce")]["count"] == 6 and tot[("bwd", "all-reduce")]["count"] == 33, tot
m = r["memory"]
assert m["grads"] == m["params"] and m["optimizer"] == 2 * m["params"] and m["activations"] > 0
assert abs(m["total"] - sum(m[k] for k in ("params", "grads", "optimizer", "activations", "scratch", "inputs"))) < 1
assert d["notes"] == []
assert [p["name"] for p in d["passes"]] == ["autodiff", "propagate", "fsdp", "lower", "optimizer", "wgrad first", "schedule", "memory"], d["passes"]
assert all(p["note"] for p in d["passes"])
EOF

# ---- --all-ranks (uneven shards: 256 rows over 3) and --all ----
"$HP" plan --layers 1 --heads 6 --channels 96 --tp 3 --all-ranks --all >out.txt 2>err.txt || fail "plan --tp 3 failed: $(cat err.txt)"
[ "$(grep -c '^==== rank ' out.txt)" = 3 ] || fail "--all-ranks: $(grep -c '^==== rank ' out.txt) rank sections"
[ "$(grep -E '^  param +wte ' out.txt | sed 's/.*S(0)@tp  *//' | tr '\n' '|')" = "[86, 96]|[86, 96]|[84, 96]|" ] ||
  fail "uneven wte pieces: $(grep -E '^  param +wte ' out.txt)"
grep -Eq '^  act +h\.0\.attn\.linear:0 .*,S\(3\)@tp ' out.txt || fail "--all: no qkv activation split by heads"
grep -Eq '^  fwd +h\.0\.attn\.linear +- .* to-partial\(tp' out.txt || fail "--all: no local to-partial of a bias"
"$HP" plan >/dev/null 2>err.txt || fail "plan with defaults failed: $(cat err.txt)"

# ---- wrong plans, caught before any step ----
# a mesh that does not match the world
expect_error "mesh 'dp=2,tp=2' has 4 ranks but the world has 3" "$HP" plan $small --dp 2 --tp 2 --world 3
printf 'mesh: dp=3\nparam wte: S(0)@dp\n' > three.plan
expect_error "has 3 ranks but the world has 2" "$HP" plan $small --plan three.plan --world 2
expect_error_any "3 ranks" timeout 60 "${MPIRUN[@]}" "$HP" train $small --plan three.plan --steps 1
expect_error "--rank 4 is not a rank of mesh 'dp=2,tp=2'" "$HP" plan $small --dp 2 --tp 2 --rank 4
# incompatible shards on a contraction: weight on its contraction dim, bias on rows
printf 'mesh: tp=2\nparam h.*.mlp.fc.weight: S(1)@tp\nparam h.*.mlp.fc.bias: S(0)@tp\n' > fc.plan
msg="h.0.mlp.linear: parameter 'h.0.mlp.fc.bias' is S(0)@tp where the operator needs P(sum)@tp or R@tp (with parameter 'h.0.mlp.fc.weight' S(1)@tp): no strategy on mesh axis 'tp' fits without moving a parameter across ranks"
expect_error "$msg" "$HP" plan $small --plan fc.plan
expect_error "$msg" "$HP" train $small --plan fc.plan --steps 1
# the fused QKV split on its contraction dim: row parallel with a Replicate bias ...
printf 'mesh: tp=2\nparam h.*.attn.qkv.weight: S(2)@tp\n' > qkv.plan
"$HP" plan $small --plan qkv.plan >out.txt 2>err.txt || fail "row-parallel QKV plan failed: $(cat err.txt)"
check_row h.0.attn.qkv.weight "S(2)@tp [3, 64, 32]"
grep -Eq '^  fwd +h\.0\.attn\.attention +tp\[0,1\] .*all-reduce\(tp' out.txt || fail "QKV output not all-reduced before attention"
# ... but not with the bias split by heads
printf 'mesh: tp=2\nparam h.*.attn.qkv.weight: S(2)@tp\nparam h.*.attn.qkv.bias: S(1)@tp\n' > qkvb.plan
msg="h.0.attn.linear: parameter 'h.0.attn.qkv.bias' is S(1)@tp where the operator needs P(sum)@tp or R@tp (with parameter 'h.0.attn.qkv.weight' S(2)@tp)"
expect_error "$msg" "$HP" plan $small --plan qkvb.plan
expect_error "$msg" "$HP" train $small --plan qkvb.plan --steps 1
# a weight split on its contraction dim by both axes, its input split by batch on dp
printf 'mesh: dp=2,tp=2\ninput *: S(0)@dp\nparam h.*.mlp.fc.weight: S(1)@dp,S(1)@tp\n' > two.plan
msg="h.0.mlp.linear: parameter 'h.0.mlp.fc.weight' is S(1)@dp,S(1)@tp where the operator needs R@dp,S(1)@tp (with input 'h.0.mlp.layernorm:0' S(0)@dp,R@tp): no strategy on mesh axis 'dp'"
expect_error "$msg" "$HP" plan $small --plan two.plan
expect_error "$msg" "$HP" train $small --plan two.plan --steps 1
# a layer norm weight split (norms use their weights whole)
printf 'mesh: tp=2\nparam h.0.ln2.weight: S(0)@tp\n' > ln.plan
expect_error "h.0.mlp.layernorm: parameter 'h.0.ln2.weight' is S(0)@tp where the operator needs R@tp" "$HP" plan $small --plan ln.plan
# heads that cannot be split evenly
expect_error "3 heads of size 16 cannot be split 2 ways" "$HP" plan --layers 1 --heads 3 --channels 48 --tp 2
expect_error "3 heads of size 16 cannot be split 2 ways" "$HP" train --layers 1 --heads 3 --channels 48 --tp 2 --steps 1
# plan-file mistakes: a tensor dim out of range, an unknown axis
printf 'mesh: dp=2\nparam wte: S(2)@dp\n' > dim.plan
expect_error "dim.plan:2: param 'wte': layout 'S(2)@dp': tensor 'wte' has 2 dims" "$HP" plan $small --plan dim.plan
expect_error "dim.plan:2: param 'wte': layout 'S(2)@dp': tensor 'wte' has 2 dims" "$HP" train $small --plan dim.plan --steps 1
printf 'mesh: dp=2\nparam wte: S(0)@pp\n' > axis.plan
expect_error "axis.plan:2: param 'wte': layout 'S(0)@pp': unknown axis 'pp' (mesh dp=2)" "$HP" plan $small --plan axis.plan
expect_error "axis.plan:2: param 'wte': layout 'S(0)@pp': unknown axis 'pp' (mesh dp=2)" "$HP" train $small --plan axis.plan --steps 1
expect_error "give --plan or --dp/--tp, not both" "$HP" plan --plan fc.plan --dp 2
# distributed Muon's plan (issue 25): groups from the layouts, one owner per matrix (or a team: FSDP 4 deals
# the QKV stacks' matrices to teams by the default --muon-balance), per-rank work and bytes; under FSDP, TP
# and HSDP x TP the programs run distributed Muon; training refuses Muon on a matrix cut along two mesh axes
# (yet), whose programs shown are then AdamW's
"$HP" plan --optimizer muon --fsdp 4 $small --json muon.json >muon.txt 2>&1 || fail "plan --optimizer muon --fsdp 4 failed: $(tail -2 muon.txt)"
grep -Eq "distributed muon \(layout-driven\): 8 matrices in 1 group, 2 iterated by teams of ranks" muon.txt || fail "no muon plan: $(grep -i muon muon.txt | head -3)"
"$HP" plan --optimizer muon --fsdp 4 --muon-balance 0 $small >muon0.txt 2>&1 || fail "plan --muon-balance 0 failed: $(tail -2 muon0.txt)"
grep -q "distributed muon (layout-driven): 8 matrices in 1 group, one owner each" muon0.txt || fail "--muon-balance 0: $(grep -i muon muon0.txt | head -3)"
printf 'mesh: dp=2,tp=2\nparam h.*.mlp.fc.weight: S(0)@dp,S(1)@tp\n' > two.plan
"$HP" plan --optimizer muon --plan two.plan $small --json muon_two.json >muon_two.txt 2>&1 || fail "plan --optimizer muon --plan two.plan failed: $(tail -2 muon_two.txt)"
grep -q "today:" muon.txt && fail "the muon plan says FSDP is refused: $(grep today: muon.txt)"
"$HP" plan --optimizer muon --dp 2 --tp 2 $small --json muon_tp.json >muon_tp.txt 2>&1 || fail "plan --optimizer muon --dp 2 --tp 2 failed: $(tail -2 muon_tp.txt)"
"$HP" plan --optimizer muon --hsdp 2,2 --tp 2 $small --json muon_ft.json >muon_ft.txt 2>&1 || fail "plan --optimizer muon --hsdp 2,2 --tp 2 failed: $(tail -2 muon_ft.txt)"
"$HP" plan --optimizer muon --dp 2 $small --json muon_dp.json >muon_dp.txt 2>&1 || fail "plan --optimizer muon --dp 2 failed: $(tail -2 muon_dp.txt)"
python3 - <<'PY' || fail "muon plan JSON: see above"
import json
d = json.load(open("muon.json"))["muon"]
assert d["matrices"] == 8 and d["refused"] == 0 and [g["key"] for g in d["groups"]] == ["dp=F"], d
assert sorted({o["owner"] for o in d["owners"]}) == [0, 1, 2, 3], d["owners"]
assert d["split"] == 2 and sorted(o["team"] for o in d["owners"]) == [1] * 6 + [2, 2], d["owners"]
ranks = d["ranks"]
assert abs(sum(r["gflops"] for r in ranks) - d["groups"][0]["gflops"]) < 1e-9, ranks
assert all(r["sent"] > 0 and r["received"] > 0 for r in ranks), ranks
st = {x["name"]: x for x in d["strategies"]}
assert list(st) == ["layout", "round-robin", "zero1-gather", "all-to-all", "gather-all"], d["strategies"]
assert all(x["max_gflops"] >= st["layout"]["max_gflops"] - 1e-9 for x in st.values()), st
assert abs(st["gather-all"]["total_gflops"] - 4 * st["layout"]["total_gflops"]) < 1e-6, st
t = json.load(open("muon_tp.json"))["muon"]
assert sorted(g["key"] for g in t["groups"]) == ["dp=R tp=Sc", "dp=R tp=Sr"] and t["refused"] == 0, t["groups"]
f = json.load(open("muon_ft.json"))["muon"]
assert f["refused"] == 0 and sorted(g["key"] for g in f["groups"]) == ["rep=R dp=F tp=Sc", "rep=R dp=F tp=Sr"], f["groups"]
assert json.load(open("muon_two.json"))["muon"]["refused"] == 1
p = json.load(open("muon_dp.json"))
assert p["muon"]["refused"] == 0 and [g["key"] for g in p["muon"]["groups"]] == ["dp=R"], p["muon"]
opt = lambda d: [q["note"] for q in d["passes"] if q["name"] == "optimizer"][0]
assert opt(p).startswith("muon"), p["passes"]  # DP: the programs run Muon
assert opt(json.load(open("muon.json"))).startswith("muon"), "FSDP: the programs run distributed Muon"
assert opt(json.load(open("muon_tp.json"))).startswith("muon"), "TP: the programs run distributed Muon"
assert opt(json.load(open("muon_ft.json"))).startswith("muon"), "HSDP x TP: the programs run distributed Muon"
assert opt(json.load(open("muon_two.json"))).startswith("adamw"), "refused (two cuts): AdamW's programs"
PY
finish
