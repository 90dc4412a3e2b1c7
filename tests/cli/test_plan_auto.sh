# hyperpar plan --auto (issue 28, item 3): the search over every plan for --world ranks, ranked by the cost
# model. What it prints (the method, the top candidates by predicted step, why the others lost) and writes
# (the best plan file, and the flags train needs beside it) is checked; the plan it writes and a sample of the
# other candidates it ranks (each row's flags are train's flags) train like one rank: the same global batch,
# losses within 1e-5 over 20 steps. Bad input: one-line errors.
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
shape="--layers 2 --heads 4 --channels 64 --vocab 256 --seq 32"
train="--steps 20 --lr 6e-4 --threads 2 --seed 0 --shuffle 0"
prof="--profile $SRC/profiles/generic-cpu.json"

"$HP" plan --auto --world 2 $shape --batch 8 $prof --max-micro 4 --top 8 --out best.plan >auto.txt 2>err.txt ||
  fail "plan --auto failed: $(cat err.txt)"
grep -q '^method: exhaustive: ' auto.txt || fail "no method line"
grep -q '^wrote best.plan; train with:' auto.txt || fail "no plan written: $(tail -3 auto.txt)"
[ -s best.plan ] || fail "best.plan is empty"
grep -q '^mesh' best.plan || fail "best.plan has no mesh line: $(head -3 best.plan)"
python3 - auto.txt <<'PY' || fail "the ranking: see above"
import re, sys
t = open(sys.argv[1]).read()
rows = re.findall(r"^  (\d+) +([0-9.]+) +\d+ .*?  (--batch .*)$", t, re.M)
assert len(rows) >= 4, rows
steps = [float(r[1]) for r in rows]
assert steps == sorted(steps), steps          # fastest first
assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
assert "why the others lost" in t
PY

# the written plan and a sample of the ranked rows train like one rank (global batch 8)
"$HP" train $shape --batch 8 $train --metrics one.jsonl >one.log 2>&1 || fail "1 rank failed: $(tail -2 one.log)"
flags=$(sed -n 's/^  hyperpar train --plan best.plan //p' auto.txt)
check_equiv one.jsonl 20 1e-5 best "$HP" train $shape $train --plan best.plan $flags
sed -n 's/^  [0-9] .*  \(--batch .*\)$/\1/p' auto.txt | sed -n '2p;4p;6p' >sample.txt
[ "$(wc -l <sample.txt)" -eq 3 ] || fail "sample: $(cat sample.txt)"
i=0
while read -r row; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  check_equiv one.jsonl 20 1e-5 "row$i" "$HP" train $shape $train $row
done <sample.txt

# bad input
expect_error "give --world N" "$HP" plan --auto $shape $prof
expect_error "leave out --plan, --dp" "$HP" plan --auto --world 2 --dp 2 $shape $prof
expect_error "nope.json" "$HP" plan --auto --world 2 $shape --profile nope.json
finish
