# hyperpar bench comm: the rows it writes (JSON fields of every row, the
# collectives and tiers asked for), the inter-supernode byte counts of the
# emulated two-tier all-reduce (exact: 16 MiB per rank for 2x1, 8 MiB for
# 2x2) and both tiers' bytes and messages per rank as counted (there and on
# one supernode of 2), the speedup fields of the fused comparisons, the all-to-all's direct
# and fused rows (--sections a2a), and one-line errors for
# bad flags. Timings are not checked (benchmarks, not tests), only that each
# row's bandwidths are its bytes over its time, to the printed rounding.
. "$(dirname "$0")/lib.sh"

"$HP" bench comm --sizes 4K,1M --iters 2 --sections memcpy,supernode,shared,fused,emul --json c.json >out.txt 2>err.txt ||
  fail "bench comm failed: $(cat err.txt)"
python3 - c.json <<'PY' || fail "bench comm JSON: see above (python3 is installed by scripts/setup.sh --tests)"
import json, sys
rows = json.load(open(sys.argv[1]))
# Every figure of a row comes from one measured time: time_us = sec * 1e6,
# algbw = bytes / sec / 1e9, busbw = algbw * factor, printed to 2, 4 and 4
# decimals. So a row is checked against those roundings (half a unit of the
# last printed decimal each), not with a relative tolerance: a slow, loaded
# machine makes the bandwidths tiny, and their rounding then dominates.
HT, HB = 0.005, 0.00005  # half a unit of time_us's and of the bandwidths' last decimal
def alg_ok(r):  # algbw is bytes over the printed time, within both roundings
    t = r["time_us"]
    lo = r["bytes"] / ((t + HT) * 1e3)
    hi = r["bytes"] / ((t - HT) * 1e3) if t > HT else float("inf")
    return t > 0 and r["algbw_GBps"] >= 0 and lo - HB <= r["algbw_GBps"] <= hi + HB
def bus_ok(r, f):  # busbw = algbw * f: its own rounding plus f times algbw's
    return abs(r["busbw_GBps"] - r["algbw_GBps"] * f) <= HB * (1 + f) + 1e-12
need = {"collective", "impl", "tier", "ranks", "bytes", "time_us", "algbw_GBps", "busbw_GBps"}
bad = [r for r in rows if not need <= set(r) or not alg_ok(r) or r["impl"] not in ("hyperpar", "memcpy")]
assert not bad, f"rows without the fields, or whose bandwidth is not bytes / time: {bad[:2]}"
have = {(r["collective"], r["tier"], r["bytes"]) for r in rows}
for coll in ("reduce_scatter", "all_gather", "all_reduce"):
    for b in (4096, 1048576):
        assert (coll, "1 supernode x 2", b) in have, f"missing {coll} {b}"
    assert (coll + " 100x4K", "1 fused call", 409600) in have, f"missing fused {coll}"
for r in rows:
    if r["collective"] == "all_gather" and r["tier"] == "1 supernode x 2":
        assert bus_ok(r, 0.5), r   # (n-1)/n
    if r["collective"] == "all_reduce" and r["tier"] == "1 supernode x 2":
        assert bus_ok(r, 1.0), r   # 2(n-1)/n
    if r["tier"] == "1 fused call":
        assert r["speedup"] > 0 and len(r["speedup_runs"]) == 1, r
emul = {r["tier"]: r["inter_bytes_per_rank"] for r in rows if r["tier"].startswith("emul")}
want = {"emul 2x1 @1 GB/s": 16 << 20, "emul 2x2 @1 GB/s": 8 << 20, "emul 4x1 @1 GB/s": 3 * (8 << 20)}
assert emul == want, f"inter-supernode bytes per rank {emul}, expected {want}"
# both tiers as counted (autopar/volume's formulas): 2x1 splits the 16 MiB all-reduce (2 messages); 2x2 reads
# the peer's input and writes its output for 2 chunks of 4 MiB and swaps 8 MiB once; 4x1 sends 3 partials and
# 3 results of 4 MiB
tiers = {r["tier"]: (r["intra_bytes_per_rank"], r["intra_msgs_per_rank"], r["inter_msgs_per_rank"])
         for r in rows if r["tier"].startswith("emul")}
want = {"emul 2x1 @1 GB/s": (0, 0, 2), "emul 2x2 @1 GB/s": (16 << 20, 4, 1), "emul 4x1 @1 GB/s": (0, 0, 6)}
assert tiers == want, f"(intra bytes, intra messages, inter messages) per rank {tiers}, expected {want}"
# one supernode of 2: an all-reduce of b bytes reads b/2 and writes b/2; the others move b/2 in one message
for r in rows:
    if r["tier"] == "1 supernode x 2" and r["collective"] in ("reduce_scatter", "all_gather", "all_reduce", "all_to_all"):
        ar = r["collective"] == "all_reduce"
        got = (r["intra_bytes_per_rank"], r["intra_msgs_per_rank"])
        assert got == (r["bytes"] if ar else r["bytes"] // 2, 2 if ar else 1), (r, got)
PY
grep -q '^| memcpy ' out.txt || fail "no memcpy row in the table"

# the all-to-all with its cross-supernode leg direct and fused, 2 emulated supernodes x 2
"$HP" bench comm --sizes 4K --iters 2 --sections a2a --inter-bw 25 --inter-latency 5 --json a.json >out.txt 2>err.txt ||
  fail "bench comm --sections a2a failed: $(cat err.txt)"
python3 - a.json <<'PY' || fail "bench comm a2a JSON: see above"
import json, sys
rows = json.load(open(sys.argv[1]))
tiers = sorted(r["tier"] for r in rows if r["collective"] == "all_to_all" and r["bytes"] == 4096 and r["ranks"] == 4)
assert tiers == ["emul 2x2 @25 GB/s 5 us, direct", "emul 2x2 @25 GB/s 5 us, fused"], tiers
assert all(r["time_us"] > 0 for r in rows), rows
PY
"$HP" bench comm --sizes 4K --iters 2 --sections memcpy --a2a-fuse-bytes 0 >/dev/null 2>err.txt ||
  fail "bench comm --a2a-fuse-bytes 0 failed: $(cat err.txt)"

expect_error "--sizes: 'x' is not a size" "$HP" bench comm --sizes x
expect_error "unknown or incomplete argument '--bind'" "$HP" bench comm --bind sometimes
expect_error "--repeat in [1, 64]" "$HP" bench comm --repeat 0
expect_error "--a2a-fuse-bytes not negative" "$HP" bench comm --a2a-fuse-bytes -5
finish
