# `hyperpar bench muon` (issue 25): the rows' values, not their speed. One
# layer of the small model, one timed step, FSDP and HSDP over 2 emulated
# supernodes: every row present in the table and the JSON; AdamW's optimizer
# has no Muon parts and every Muon row has them (gather, Newton-Schulz,
# update; a return trip for the single-owner strategies, none for gather-all
# and ZeRO-1's gather); the parts add up to no more than the optimizer phase;
# the plan's Newton-Schulz GFLOP of layout <= round-robin <= gather-all, and
# GPT-2 124M's balance at 4, 8 and 64 ranks <= 1.10 (max/mean; 64 with teams); bad flags refused
# in one line.
. "$(dirname "$0")/lib.sh"
"$HP" bench muon --layers 1 --steps 1 --json bm.json >bm.txt 2>bm.err || fail "bench muon failed: $(tail -3 bm.err)"
for s in adamw layout round-robin zero1-gather all-to-all gather-all; do
  [ "$(grep -cE "^$s +[0-9]" bm.txt)" -eq 2 ] || fail "the table lacks $s's two rows (FSDP, HSDP): $(cat bm.txt)"
done
grep -q "layout vs the best competitor" bm.txt || fail "no comparison line"
python3 - <<'PY' || fail "bench muon's JSON: see above"
import json
rows = json.load(open("bm.json"))
runs = [r for r in rows if not r.get("balance_only")]
bal = [r for r in rows if r.get("balance_only")]
assert len(runs) == 12, len(runs)
assert {r["layout"] for r in runs} == {"fsdp", "hsdp"}
for r in runs:
    parts = r["gather_ms"] + r["ns_ms"] + r["return_ms"] + r["update_ms"] + r["rest_ms"]
    assert parts <= r["optimizer_ms"] * 1.02 + 0.05, r
    assert r["step_ms"] >= r["optimizer_ms"] > 0, r
    if r["optimizer"] == "adamw":
        assert r["muon_dist"] is None and r["ns_ms"] == r["gather_ms"] == r["update_ms"] == r["return_ms"] == 0, r
        assert r["ns_gflop_max"] == 0, r
    else:
        assert r["ns_ms"] > 0 and r["gather_ms"] > 0 and r["update_ms"] > 0, r
        assert r["ns_gflop_max"] > 0, r
        if r["muon_dist"] in ("gather-all", "zero1-gather"):
            assert r["return_ms"] == 0, r
        elif r["layout"] == "fsdp":
            assert r["return_ms"] > 0, r
for lay in ("fsdp", "hsdp"):
    g = {r["muon_dist"]: r["ns_gflop_max"] for r in runs if r["layout"] == lay and r["muon_dist"]}
    assert g["layout"] <= g["round-robin"] <= g["gather-all"], g
    # gather-all: every rank orthogonalises everything
    tot = [r for r in runs if r["layout"] == lay and r["muon_dist"] == "gather-all"][0]
    assert abs(tot["ns_imbalance"] - 1) < 1e-9, tot
assert len(bal) == 15, len(bal)
for r in bal:
    if r["muon_dist"] == "layout" and r["ranks"] in (4, 8, 64):  # 64: with teams
        assert r["ns_imbalance"] <= 1.10, r
    if r["muon_dist"] == "gather-all":
        assert abs(r["ns_gflop_total"] - r["ranks"] * r["ns_gflop_max"]) < 1e-6 * r["ns_gflop_total"], r
PY
expect_error "--layouts: 'nope' is not fsdp or hsdp" "$HP" bench muon --layouts nope
expect_error "--supernodes must be >= 2" "$HP" bench muon --supernodes 1
"$HP" bench muon --layers 1 --steps 1 --layouts fsdp --supernodes 1 --balance 0 >f.txt 2>f.err || fail "FSDP on one supernode failed: $(tail -2 f.err)"
[ "$(grep -cE '^layout +[0-9]' f.txt)" -eq 1 ] || fail "--layouts fsdp: $(cat f.txt)"
finish
