# hyperpar plan and train against memory (issue 21, items 4 and 5): the
# per-process total is the sum of the programs of the process's ranks; a
# plan that fits --memory and one that does not (by how much, and changes
# that each fit when run through plan); train refused before allocating, with
# the same hint; and FSDP made visible: the units, shard ranges that tile each
# unit exactly, each parameter's part in a rank's shard, ZeRO-1/2's whole
# parameters, and the fsdp line of the train header.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 4 --channels 64 --vocab 256 --batch 8 --seq 32"

# ---- FSDP 4: units, shards that tile them, the parameters' parts ----
"$HP" plan $small --fsdp 4 --all-ranks --memory 100 --json f4.json >f4.txt 2>err.txt || fail "plan --fsdp 4 failed: $(cat err.txt)"
grep -q '^fsdp (rank 0): level 3 (ZeRO-3), 3 units, shard group dp=4, prefetch 1, reshard on, style hyperpar$' f4.txt ||
  fail "fsdp summary: $(grep '^fsdp (rank' f4.txt | head -1)"
grep -q '^  sharded: parameters, gradients and optimizer state over dp\[0,1,2,3\]; rank 2 is member 2 of 4$' f4.txt ||
  fail "rank 2's membership: $(grep 'sharded:' f4.txt)"
grep -Eq '^  param +h\.0\.attn\.qkv\.weight +\[3, 64, 64\] +R@dp,R@tp +\[3, 64, 64\] +unit [0-9]+: holds \[[0-9]+:[0-9]+\) of 12288$' f4.txt ||
  fail "qkv row: $(grep -E '^  param +h\.0\.attn\.qkv\.weight' f4.txt | head -1)"
python3 - f4.json <<'EOF' || fail "FSDP 4 JSON: see above"
import json, sys
d = json.load(open(sys.argv[1]))
ranks = d["ranks"]
assert len(ranks) == 4
units = ranks[0]["fsdp"]["units"]
assert [u["name"] for u in units] == ["root", "h.0", "h.1"], [u["name"] for u in units]
for i, u in enumerate(units):
    assert u["size"] == 4 * u["shard"] and u["shard"] % 16 == 0, u
    # the four ranks' shards tile the unit: [0, shard), [shard, 2 shard), ... in member order
    got = sorted((r["fsdp"]["units"][i]["begin"], r["fsdp"]["units"][i]["end"]) for r in ranks)
    assert got == [(k * u["shard"], (k + 1) * u["shard"]) for k in range(4)], (u["name"], got)
    assert all(r["fsdp"]["units"][i]["size"] == u["size"] for r in ranks)
for r in ranks:
    f = r["fsdp"]
    assert f["level"] == 3 and f["members"] == 4 and f["member"] == r["rank"] and f["shard_group"] == "dp[0,1,2,3]", f
    assert f["summary"] == "level 3 (ZeRO-3), 3 units, shard group dp=4, prefetch 1, reshard on, style hyperpar", f
# every parameter's elements are held by exactly one rank, at its place in its unit
params = [t for t in ranks[0]["tensors"] if t["kind"] == "param"]
assert len(params) == 28 and all("fsdp" in t for t in params), len(params)
for k, t in enumerate(params):
    n = 1
    for x in t["local_shape"]: n *= x
    held = 0
    for r in ranks:
        p = r["tensors"][[x["name"] for x in r["tensors"]].index(t["name"])]["fsdp"]
        u = r["fsdp"]["units"][p["unit"]]
        assert p["offset"] == t["fsdp"]["offset"] and p["unit"] == t["fsdp"]["unit"]
        assert 0 <= p["begin"] <= p["end"] <= n, p
        if p["end"] > p["begin"]:
            assert u["begin"] <= p["offset"] + p["begin"] and p["offset"] + p["end"] <= u["end"], (t["name"], p, u)
        held += p["end"] - p["begin"]
    assert held == n, (t["name"], held, n)
# the fit: this process hosts every rank-thread, the sum of their programs
fit = d["fit"]
assert fit["ranks_here"] == 4 and fit["first_rank"] == 0 and fit["fits"] and fit["source"] == "--memory", fit
assert fit["available"] == 100e9 and fit["hints"] == [] and fit["hint"] == "", fit
assert abs(fit["needed"] - sum(r["memory"]["total"] for r in ranks)) < 1, (fit["needed"], [r["memory"]["total"] for r in ranks])
EOF
grep -Eq '^per process \(4 ranks: 0\.\.3\): [0-9.]+ MB of 100\.0 GB available \(--memory\): fits$' f4.txt ||
  fail "fit line: $(grep '^per process' f4.txt)"

# two processes: each hosts two ranks, their units in transient slots
"$HP" plan $small --fsdp 4 --processes 2 --all-ranks --memory 100 --json p2.json >p2.txt 2>err.txt || fail "plan --processes 2 failed: $(cat err.txt)"
python3 - p2.json <<'EOF' || fail "2 processes' JSON: see above"
import json, sys
d = json.load(open(sys.argv[1]))
fit, ranks = d["fit"], d["ranks"]
assert fit["ranks_here"] == 2 and fit["first_rank"] == 0, fit
assert abs(fit["needed"] - ranks[0]["memory"]["total"] - ranks[1]["memory"]["total"]) < 1, fit
assert ranks[0]["fsdp"]["transient_slots"] > 0 and "transient slots" in ranks[0]["fsdp"]["summary"], ranks[0]["fsdp"]
EOF

# ---- ZeRO-1 and ZeRO-2: parameters whole, state (and gradients) sharded ----
"$HP" plan $small --zero 1 --dp 2 --rank 1 >z1.txt 2>err.txt || fail "plan --zero 1 failed: $(cat err.txt)"
grep -q '^fsdp (rank 1): level 1 (ZeRO-1), 3 units, shard group dp=2, ' z1.txt || fail "ZeRO-1 summary: $(grep '^fsdp (rank' z1.txt)"
grep -q '^  sharded: optimizer state over dp\[0,1\]; rank 1 is member 1 of 2; parameters whole on every rank$' z1.txt ||
  fail "ZeRO-1: $(grep 'sharded:' z1.txt)"
grep -Eq '^  param +wte +\[256, 64\] +R@dp,R@tp +\[256, 64\] +unit 0: whole; state of \[[0-9]+:16384\) of 16384$' z1.txt ||
  fail "ZeRO-1 wte row: $(grep -E '^  param +wte ' z1.txt)"
"$HP" plan $small --zero 2 --dp 2 >z2.txt 2>err.txt || fail "plan --zero 2 failed: $(cat err.txt)"
grep -Eq '^  param +wte .* unit 0: whole; gradient and state of \[0:[0-9]+\) of 16384$' z2.txt || fail "ZeRO-2 wte row: $(grep -E '^  param +wte ' z2.txt)"
# without FSDP: no fsdp column or section
"$HP" plan $small --dp 2 >dp.txt 2>&1 || fail "plan --dp 2 failed"
grep -q '^fsdp (rank\|unit [0-9]' dp.txt && fail "plan --dp 2 shows FSDP"

# check_hints JSON MEM KINDS FLAGS...: the plan's fit (JSON, --memory MEM) does not fit, by the right amount;
# its hints include the KINDS (first flags) and each fits, with the bytes it names, when planned with FLAGS
check_hints() {
  local json="$1" mem="$2" kinds="$3"; shift 3
  python3 - "$json" "$mem" "$kinds" >hints.txt <<'EOF' || { fail "hints of $*: see above"; return; }
import json, sys
fit = json.load(open(sys.argv[1]))["fit"]
avail = float(sys.argv[2]) * 1e9
# (--memory is read as a float: its last bits)
assert not fit["fits"] and abs(fit["available"] - avail) < 1e-6 * avail, fit
assert abs(fit["short"] - (fit["needed"] - fit["available"])) < 1, fit
avail = fit["available"]
assert fit["hint"].startswith("to fit: ") and not fit["closest"] and fit["hints"], fit
kinds = set()
for h in fit["hints"]:
    assert h["needed"] <= avail, h
    flags = ("--processes %d " % h["processes"] if h["processes"] else "") + h["flags"]
    kinds.add(flags.split()[0])
    print("%s|%r" % (flags, h["needed"]))
assert set(sys.argv[3].split()) <= kinds, kinds
EOF
  local flags needed
  while IFS='|' read -r flags needed; do
    "$HP" plan "$@" $flags --memory "$mem" --json h.json >h.txt 2>err.txt || { fail "plan $* $flags failed: $(cat err.txt)"; continue; }
    python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fit"]; assert f["fits"] and abs(f["needed"]-float(sys.argv[2]))<1, (f, sys.argv[2])' h.json "$needed" ||
      fail "the hint '$flags' of $* does not fit when planned"
  done <hints.txt
}

# ---- a plan that does not fit: by how much, and hints that fit ----
big="--layers 4 --heads 4 --channels 256 --vocab 256 --max-seq 256 --batch 16 --seq 256 --fsdp 4"
"$HP" plan $big --memory 1000 --json need.json >/dev/null 2>err.txt || fail "plan (big) failed: $(cat err.txt)"
need=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fit"]["needed"])' need.json)
mem=$(awk -v n="$need" 'BEGIN { printf "%.6f", n * 0.6 / 1e9 }') # 60% of what it needs
"$HP" plan $big --memory "$mem" --json short.json >short.txt 2>err.txt || fail "plan (does not fit) should still exit 0: $(cat err.txt)"
grep -Eq "^per process \(4 ranks: 0\.\.3\): does not fit: [0-9.]+ [MG]B needed, [0-9.]+ [MG]B available \(--memory\) \([0-9.]+ [MG]B short\); to fit:$" short.txt ||
  fail "verdict: $(grep -A1 '^per process' short.txt)"
check_hints short.json "$mem" "--processes --batch --seq" $big
# one rank: more ranks (FSDP over processes of one rank each), a smaller batch, a shorter sequence
one="--layers 4 --heads 4 --channels 256 --vocab 256 --max-seq 256 --batch 16 --seq 64"
"$HP" plan $one --memory 1000 --json need1.json >/dev/null 2>err.txt || fail "plan (1 rank) failed: $(cat err.txt)"
mem1=$(python3 -c 'import json,sys; print("%.6f" % (json.load(open(sys.argv[1]))["fit"]["needed"] * 0.75 / 1e9))' need1.json)
"$HP" plan $one --memory "$mem1" --json short1.json >/dev/null 2>err.txt || fail "plan (1 rank, short) failed: $(cat err.txt)"
check_hints short1.json "$mem1" "--processes --batch --seq" $one
grep -q '^--processes 2 --fsdp 2|' hints.txt || fail "1 rank: no FSDP hint: $(cat hints.txt)"

# nothing alone fits: a combination does (processes, then micro-batches)
"$HP" plan $big --memory 1000 --processes 4 --batch 4 --grad-accum 4 --json c.json >/dev/null 2>err.txt || fail "plan (combined) failed: $(cat err.txt)"
cmem=$(python3 -c 'import json,sys; print("%.6f" % (json.load(open(sys.argv[1]))["fit"]["needed"] * 1.0001 / 1e9))' c.json)
"$HP" plan $big --memory "$cmem" --json comb.json >comb.txt 2>err.txt || fail "plan (tight) failed: $(cat err.txt)"
python3 - comb.json >comb_hint.txt <<'EOF' || fail "combined hint: see above"
import json, sys
fit = json.load(open(sys.argv[1]))["fit"]
assert not fit["fits"] and len(fit["hints"]) == 1 and not fit["closest"], fit
h = fit["hints"][0]
assert h["processes"] > 1 and "--batch" in h["flags"], h
print(("--processes %d " % h["processes"]) + h["flags"])
EOF
"$HP" plan $big $(cat comb_hint.txt) --memory "$cmem" --json cc.json >/dev/null 2>err.txt || fail "plan $(cat comb_hint.txt) failed: $(cat err.txt)"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["fit"]["fits"]' cc.json || fail "the combined hint does not fit when planned"
# and when nothing does, the closest is named as such
"$HP" plan $big --memory 0.000001 >none.txt 2>&1 || fail "plan (nothing fits) failed"
grep -q 'nothing tried fits, the closest:$' none.txt || fail "nothing fits: $(grep -A1 '^per process' none.txt)"

# ---- train: refused before allocating, with the hint ----
# the issue's model (1.5B parameters, 4 rank-threads): its activation arenas alone are far past --memory 23;
# the refusal comes before any of it is allocated (no 'cannot allocate'), and quickly
huge="--layers 48 --heads 25 --channels 1600 --vocab 256 --max-seq 1024 --batch 16 --seq 1024 --fsdp 4"
expect_error "does not fit in memory: this process's 4 ranks need " timeout 120 "$HP" train $huge --memory 23 --steps 2 --run-dir none
grep -q '23.0 GB available (the limit given): [0-9.]* GB short, nothing allocated; ' err.txt || fail "train's shortfall: $(cat err.txt)"
grep -q 'to fit: \|the closest: ' err.txt || fail "train's error has no hint: $(cat err.txt)"
grep -q 'cannot allocate' err.txt && fail "train allocated before refusing: $(cat err.txt)"
grep -q '^step\|step *1' out.txt && fail "train ran a step: $(cat out.txt)"
# the plan says the same about it, and its hint fits when planned
"$HP" plan $huge --memory 23 --json hp.json >hp.txt 2>err.txt || fail "plan (huge) failed: $(cat err.txt)"
grep -q 'does not fit: .* 23.0 GB available (--memory)' hp.txt || fail "plan (huge): $(grep -A2 '^per process' hp.txt)"
hflags=$(python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["fit"]["hints"][0]; print(("--processes %d " % h["processes"] if h["processes"] else "") + h["flags"])' hp.json)
"$HP" plan $huge $hflags --memory 23 --json hh.json >/dev/null 2>err.txt || fail "plan $hflags failed: $(cat err.txt)"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["fit"]["fits"]' hh.json || fail "the huge model's hint '$hflags' does not fit"
# a run that fits trains, and --memory < 0 turns the check off
"$HP" train $small --fsdp 2 --steps 2 --memory 100 --run-dir none >ok.txt 2>err.txt || fail "train --memory 100 failed: $(cat err.txt)"
"$HP" train $small --steps 1 --memory -1 --run-dir none >/dev/null 2>err.txt || fail "train --memory -1 failed: $(cat err.txt)"
expect_error "does not fit in memory: this process's 1 rank needs " "$HP" train $small --steps 1 --memory 0.000001 --run-dir none

# ---- the train header: FSDP level, units, shard group; rank 0's memory as plan predicts it ----
grep -q '^fsdp: level 3 (ZeRO-3), 3 units, shard group dp=2, prefetch 1, reshard on, style hyperpar$' ok.txt ||
  fail "train --fsdp 2 header: $(head -4 ok.txt)"
"$HP" plan $small --fsdp 2 --json f2.json >/dev/null 2>&1 || fail "plan --fsdp 2 failed"
want=$(python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["ranks"][0]["memory"]["total"] / 1e6))' f2.json)
grep -q "^memory of rank 0: $want MB " ok.txt || fail "train's rank 0 memory vs plan's $want MB: $(grep '^memory of rank 0' ok.txt)"
"$HP" train $small --zero 2 --dp 2 --prefetch 2 --reshard off --steps 1 --run-dir none >z.txt 2>&1 || fail "train --zero 2 failed: $(tail -2 z.txt)"
grep -q '^fsdp: level 2 (ZeRO-2), 3 units, shard group dp=2, prefetch 2, reshard off, style hyperpar$' z.txt ||
  fail "train --zero 2 header: $(grep '^fsdp' z.txt)"
"$HP" train $small --hsdp 2,2 --steps 1 --run-dir none >h.txt 2>&1 || fail "train --hsdp 2,2 failed: $(tail -2 h.txt)"
grep -q '^fsdp: level 3 (ZeRO-3), 3 units, shard group dp=2, replicas rep=2 (HSDP), prefetch 1, ' h.txt ||
  fail "train --hsdp header: $(grep '^fsdp' h.txt)"
"$HP" train $small --dp 2 --steps 1 --run-dir none >d.txt 2>&1 || fail "train --dp 2 failed"
grep -q '^fsdp:' d.txt && fail "train --dp 2 prints an fsdp line"
finish
