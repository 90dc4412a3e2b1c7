# hyperpar calibrate: --quick on 1 thread writes a profile that reads back
# (--check: 21 kernel entries, 10 collective entries; python's json: the keys
# and entries, the measured peaks, threads 1, ranks 2, positive rates), the
# printed table lists every family and kind with the fit's columns, the file
# is written only under the name asked for (no temporary left), --sizes is
# honoured, and bad flags are one-line errors with a non-zero exit. Timings
# are not checked.
. "$(dirname "$0")/lib.sh"

"$HP" calibrate --quick --threads 1 --sizes 4K,32K --machine cli-box --out prof.json >out.txt 2>err.txt ||
  fail "calibrate failed: $(cat err.txt)"
[ -f prof.json ] || fail "no prof.json"
[ "$(ls | grep -c '^prof\.json')" -eq 1 ] || fail "a temporary file was left: $(ls)"
grep -q "wrote prof.json" out.txt || fail "no 'wrote prof.json' line: $(tail -3 out.txt)"
for w in gemm grouped_gemm attention pointwise norm softmax_xent embedding all_reduce all_gather reduce_scatter \
  all_to_all send alpha_us beta_GB/s "4 KiB" "32 KiB"; do
  grep -qF -- "$w" out.txt || fail "the table lacks '$w'"
done
"$HP" calibrate --check prof.json >chk.txt 2>&1 || fail "--check: $(cat chk.txt)"
grep -qF "prof.json: a valid profile: 21 kernel entries, 10 collective entries" chk.txt || fail "--check: $(cat chk.txt)"
python3 - prof.json <<'PY' || fail "profile JSON: see above"
import json, math, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "hyperpar-profile" and p["version"] == 1 and p["machine"] == "cli-box", p
assert p["threads"] == 1 and p["peak_fp32_gflops"] > 0 and p["peak_bf16_gflops"] > 0
ks = {(k["family"], k["dtype"], k["bucket"]) for k in p["kernels"]}
fams = ["gemm", "grouped_gemm", "attention", "pointwise", "norm", "softmax_xent", "embedding"]
assert {(f, "fp32", b) for f in fams for b in ("small", "medium", "large")} <= ks, ks
assert all(k["gflops"] > 0 and k["gbps"] > 0 and math.isfinite(k["gflops"]) for k in p["kernels"])
cs = {(c["tier"], c["kind"]) for c in p["collectives"]}
assert len(cs) == 10 and all(c["ranks"] == 2 and c["alpha_us"] >= 0 and c["beta_GBps"] > 0 for c in p["collectives"])
assert any("4 KiB, 32 KiB" in n for n in p["notes"]), p["notes"]
PY

echo '{"format": "hyperpar-profile"}' >bad.json
expect_error "bad.json: version: missing" "$HP" calibrate --check bad.json
expect_error "unknown flag '--bogus'" "$HP" calibrate --bogus
expect_error "--sizes: 'x' is not a size" "$HP" calibrate --quick --sizes 4K,x
expect_error "threads must be in 1..256, got 999" "$HP" calibrate --quick --threads 999 --out t.json
expect_error "must be a multiple of 8" "$HP" calibrate --quick --threads 1 --sizes 4K,5 --out t.json
[ ! -e t.json ] || fail "a failed calibration wrote t.json"
expect_error "writing the profile" "$HP" calibrate --quick --threads 1 --out /nonexistent/dir/p.json
finish
