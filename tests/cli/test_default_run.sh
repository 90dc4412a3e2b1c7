# The embedded default (no data flags) trains and its loss visibly falls.
. "$(dirname "$0")/lib.sh"
"$HP" train --steps 60 --val-every 60 --metrics m.jsonl >log.txt 2>&1 || fail "default run failed: $(tail -3 log.txt)"
first=$(losses m.jsonl | head -1); last=$(losses m.jsonl | tail -1)
[ "$(losses m.jsonl | wc -l)" -eq 60 ] || fail "expected 60 metric lines"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 5.0 && b < a - 1.5) }' || fail "loss did not fall enough: $first -> $last"
grep -q '"tokens_per_s"' m.jsonl && grep -q '"step_ms"' m.jsonl && grep -q '"lr"' m.jsonl || fail "metrics fields missing"
grep -q "val loss" log.txt || fail "no validation loss printed"
finish
