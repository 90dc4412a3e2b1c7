#!/usr/bin/env bash
# Every kind of record the trainer writes to its metrics is valid JSON that
# `hyperpar report` reads (issue 22 item 3): a run directory's step records
# (loss, lr, gradient norm, throughput, step time, its split and, when the
# peak measured at start is above the achieved rate, MFU) and
# validation records; a --metrics file's step records (no MFU); with
# --on-nan skip-step, step records whose figures are null, flagged nonfinite
# and skipped, and validation losses that are null and flagged (they were
# written as -nan, which JSON does not have, and the report refused the
# file); a diverging run that stops, its last record null and flagged. Each
# line is parsed strictly (no NaN or Infinity), every null comes with
# "nonfinite": true, and each run's page draws exactly its finite values.
# run.json is rewritten as steps go by, not only at validations and
# checkpoints (issue 22 item 8): a run with neither, killed after some steps,
# names a step past 0 (--run-refresh 0: every step, so no clock is involved).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CHECK="python3 $HERE/report_check.py"
SMALL=(--layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --threads 2 --val-steps 1 --warmup 0 --log-every 100)

"$HP" train "${SMALL[@]}" --steps 4 --val-every 2 --run-dir ok >ok.out 2>&1 || fail "train ok: $(tail -3 ok.out)"
"$HP" train "${SMALL[@]}" --steps 3 --val-every 2 --metrics plain.jsonl >plain.out 2>&1 ||
  fail "train --metrics: $(tail -3 plain.out)"
"$HP" train "${SMALL[@]}" --steps 6 --val-every 2 --lr 1e30 --on-nan skip-step --run-dir skip >skip.out 2>&1 ||
  fail "train skip-step: $(tail -3 skip.out)"
"$HP" train "${SMALL[@]}" --steps 6 --val-every 2 --lr 1e30 --run-dir stop >stop.out 2>&1 &&
  fail "a diverging run exited 0"
grep -q "not finite; the run stops" stop.out || fail "the diverging run did not stop on the NaN: $(tail -3 stop.out)"

# strict JSON; the kinds of record seen; nulls flagged
python3 - ok/metrics.jsonl plain.jsonl skip/metrics.jsonl stop/metrics.jsonl <<'PY' || fail "the metrics records"
import json, sys
def strict(s):
    raise ValueError(f"not JSON: {s}")
kinds = set()
for path in sys.argv[1:]:
    for n, line in enumerate(open(path), 1):
        r = json.loads(line, parse_constant=strict)
        nulls = [k for k, v in r.items() if v is None]
        assert not nulls or r.get("nonfinite") is True, (path, n, "nulls without the flag", line)
        assert r.get("nonfinite") is not True or nulls, (path, n, "a flag without a null", line)
        if "val_loss" in r:
            assert set(r) <= {"step", "val_loss", "nonfinite"}, (path, n, line)
            kinds.add("val null" if r["val_loss"] is None else "val")
            continue
        want = {"step", "loss", "lr", "grad_norm", "tokens_per_s", "step_ms", "compute_ms", "comm_ms", "optimizer_ms",
                "other_ms"}
        assert want <= set(r) <= want | {"mfu", "nonfinite", "skipped"}, (path, n, line)
        if r["loss"] is None:
            kinds.add("step null skipped" if r.get("skipped") else "step null stop")
        else:
            kinds.add("step mfu" if "mfu" in r else "step")
# (with MFU unless the peak measured at start was under the achieved rate: the sanitizer build's)
every = {"step", "step null skipped", "step null stop", "val", "val null"}
assert every <= kinds <= every | {"step mfu"}, f"kinds of record seen: {sorted(kinds)}; missing {sorted(every - kinds)}"
PY

# each one read back by the report: the finite values drawn, the nulls counted
for run in ok plain.jsonl skip stop; do
  "$HP" report "$run" -o "$run.html" >"$run.rep" 2>&1 || fail "report $run: $(cat "$run.rep")"
done
counts() { # FILE FIELD: the finite values of FIELD
  python3 -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if type(json.loads(l).get(sys.argv[2])) in (int, float)))" "$1" "$2"
}
nmfu=$(grep -c '"mfu"' ok/metrics.jsonl)
if [ "$nmfu" -gt 0 ]; then MFU=(plot-mfu:="$nmfu"); else MFU=(--no-figure plot-mfu); fi
$CHECK ok.html plot-loss:training=4 plot-loss:validation=2 "${MFU[@]}" plot-split:compute=4 --no-text "not finite" ||
  fail "page of ok"
$CHECK plain.jsonl.html plot-loss:training=3 plot-loss:validation=2 --no-figure plot-mfu || fail "page of plain.jsonl"
nl=$(counts skip/metrics.jsonl loss)
[ "$nl" -ge 1 ] && [ "$nl" -lt 6 ] || fail "skip-step run: $nl finite losses"
$CHECK skip.html plot-loss:training="$nl" plot-lr:=6 plot-split:compute=6 --no-figure plot-x-skipped \
  --text "values were not finite (null in the metrics)" || fail "page of skip"
grep -q '"val_loss": null, "nonfinite": true' skip/metrics.jsonl || fail "no null validation loss in the skip-step run"
$CHECK stop.html plot-loss:training="$(counts stop/metrics.jsonl loss)" --text "values were not finite" ||
  fail "page of stop"
# a run with no validation and no checkpoint, killed: run.json still says how far it got
"$HP" train --layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --max-seq 16 --threads 1 --steps 100000000 \
  --val-every 0 --ckpt-every 0 --run-dir live --run-refresh 0 >live.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -f live/metrics.jsonl ] && [ "$(grep -c '"step"' live/metrics.jsonl)" -ge 3 ] && break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
python3 - live/run.json <<'PY' || fail "run.json was not refreshed while steps went by: $(cat live/run.json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "running" and r["last_step"] >= 2, r
PY
expect_error "run-refresh must be" "$HP" train --run-refresh -1 --steps 1 --run-dir none
finish
