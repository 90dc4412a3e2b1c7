# NaN and Inf guards (issue 11, defect 4): a diverging run (--lr 1e30) stops
# with a one-line error naming the step, exit 1, metrics that stay valid JSON
# (null plus a flag) and no checkpoint of the non-finite state; with
# --on-nan skip-step it trains on, skips those steps (their updates are not
# applied: the final checkpoint's weights are finite and resume), and flags
# them in the metrics; non-finite initial weights (an llm.c file holding a
# NaN) are refused before any step, naming the parameter.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 6 --val-every 0 --threads 2 --warmup 0"
"$HP" train $small --lr 1e30 --metrics m.jsonl --ckpt-dir ck --ckpt-every 2 >out.txt 2>err.txt && fail "a diverging run exited 0"
grep -q "step 2: loss -\?nan, gradient norm -\?nan: not finite; the run stops without writing a checkpoint" err.txt ||
  fail "error: $(cat err.txt)"
[ "$(grep -c . err.txt)" -le 1 ] || fail "error is not one line: $(cat err.txt)"
[ ! -e ck/step_000002 ] || fail "a checkpoint of the non-finite state was written"
python3 - m.jsonl <<'PY' || fail "metrics are not valid JSON lines with null and a flag"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[0]["step"] == 1 and rows[0]["loss"] > 0 and "nonfinite" not in rows[0]
assert rows[-1]["step"] == 2 and rows[-1]["loss"] is None and rows[-1]["grad_norm"] is None and rows[-1]["nonfinite"] is True
PY
# skip-step: the run goes on; the skipped steps are flagged; the weights it saves are finite
"$HP" train $small --lr 1e30 --on-nan skip-step --metrics s.jsonl --ckpt-dir sk >out.txt 2>&1 || fail "skip-step run failed: $(tail -2 out.txt)"
grep -q "step 2: loss -\?nan, gradient norm -\?nan: not finite, the step was skipped (--on-nan skip-step)" out.txt || fail "no skip note"
python3 - s.jsonl <<'PY' || fail "skip-step metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" not in l]
assert len(rows) == 6, len(rows)
assert all(r["skipped"] and r["nonfinite"] and r["loss"] is None for r in rows[1:]), rows
PY
"$HP" train --resume sk --steps 7 --lr 1e-3 >out.txt 2>&1 || fail "the skip-step run's checkpoint does not resume: $(tail -1 out.txt)"
# non-finite initial weights
"$HP" train $small --steps 1 --ckpt-dir good >/dev/null 2>&1 || fail "short run failed"
"$HP" export --ckpt good --llmc good.bin >/dev/null 2>&1 || fail "export failed"
python3 - good.bin bad.bin <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off = 256 * 4 + 4 * 100   # a float inside wte (the first tensor), after the 256-int header
b[off:off + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(bytes(b))
PY
expect_error "the initial weights: parameter 'wte' holds a non-finite value (nan at element 100)" "$HP" train $small --init bad.bin
expect_error "--on-nan must be stop or skip-step, got 'maybe'" "$HP" train $small --on-nan maybe
# skip-step gives up on a run that diverged for good: --max-skipped-steps consecutive skips end it (issue 22, item 8)
expect_error "step 4: 3 consecutive steps with a non-finite loss or gradient norm were skipped: the run has diverged and stops (--max-skipped-steps 3)" \
  "$HP" train $small --steps 20 --lr 1e30 --on-nan skip-step --max-skipped-steps 3 --run-dir none
expect_error "--max-skipped-steps must be >= 1, got 0" "$HP" train $small --on-nan skip-step --max-skipped-steps 0
finish
