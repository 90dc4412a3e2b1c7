# Validation mode: `train --dp 2 --tp 2 --validate` checks every operator of
# the first step against one rank, prints the gradient-equivalence table (worst
# relative error <= 1e-5), then trains on exactly as without --validate; a
# 1-rank run has nothing to validate; validation refuses ranks spread over MPI
# processes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../scripts/mpienv.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 2 --threads 2"
"$HP" train $small --dp 2 --tp 2 --validate --metrics val.jsonl >log.txt 2>&1 || fail "validated run failed: $(tail -2 log.txt)"
grep -qE '^validation: [0-9]+ operators checked, every layout and value agrees' log.txt || fail "no validation summary: $(head -3 log.txt)"
ops=$(sed -n 's/^validation: \([0-9]*\) operators checked.*/\1/p' log.txt)
[ "${ops:-0}" -ge 40 ] || fail "only ${ops:-0} operators checked"
# one table line per parameter (2 layers: 12 each, plus wte, wpe, lnf.weight, lnf.bias)
rows=$(grep -cE '^  [a-z0-9_.]+ +[RSP].*@dp.*@tp +[0-9.e+-]+$' log.txt)
[ "$rows" -eq 28 ] || fail "gradient table has $rows rows, expected 28"
grep -qE '^  h\.0\.attn\.qkv\.weight +R@dp,S\(1\)@tp ' log.txt || fail "table lacks the qkv weight's layout"
worst=$(sed -n 's/^validation: worst gradient relative error \([^ ]*\) .*/\1/p' log.txt)
[ -n "$worst" ] || fail "no worst gradient error printed"
awk -v w="${worst:-1}" 'BEGIN { exit !(w <= 1e-5) }' || fail "worst gradient relative error $worst > 1e-5"
echo "validated: $ops operators, worst gradient relative error $worst"
# training continues: both steps ran, with the same losses as a run without --validate
"$HP" train $small --dp 2 --tp 2 --metrics plain.jsonl >/dev/null 2>&1 || fail "plain run failed"
[ "$(losses val.jsonl | wc -l)" -eq 2 ] || fail "validated run did not train 2 steps"
[ "$(losses val.jsonl)" = "$(losses plain.jsonl)" ] || fail "losses differ from the run without --validate"
# nothing to validate on 1 rank (and the run still trains)
"$HP" train --layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --steps 1 --validate >one.txt 2>&1 || fail "1-rank --validate failed"
grep -q "nothing to validate" one.txt || fail "1-rank --validate did not say there is nothing to validate: $(head -2 one.txt)"
# ranks in other processes cannot be validated
expect_error_any "validation mode needs all ranks in one process" timeout 120 "${MPIRUN[@]}" "$HP" train --layers 1 --heads 2 --channels 32 --batch 2 --seq 16 --steps 1 --dp 2 --validate
finish
