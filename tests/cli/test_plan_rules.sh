# A plan rule that matches no tensor of the model (a typo) is an error naming
# the plan file's line and the closest real name, in `hyperpar train` and
# `hyperpar plan` alike, before any step (issue 11, defect 9: it was ignored).
. "$(dirname "$0")/lib.sh"
S=(--layers 2 --channels 32 --heads 2 --batch 2 --seq 16 --max-seq 16 --threads 1 --steps 1)
printf 'mesh: dp=2\ninput tokens: S(0)@dp\ninput targets: S(0)@dp\nparam h.*.mlp.fc.wieght: R\n' > typo.plan
expect_error "typo.plan:4: param 'h.*.mlp.fc.wieght' matches no parameter of the model (closest: 'h.0.mlp.fc.weight')" \
  "$HP" train "${S[@]}" --plan typo.plan --metrics m.jsonl
[ ! -e m.jsonl ] || fail "a step ran (metrics written) before the plan error"
expect_error "typo.plan:4: param 'h.*.mlp.fc.wieght' matches no parameter" "$HP" plan "${S[@]}" --plan typo.plan
printf 'mesh: dp=2\ninput tokenz: S(0)@dp\n' > input.plan
expect_error "input.plan:2: input 'tokenz' matches no input of the model (closest: 'tokens')" \
  "$HP" plan "${S[@]}" --plan input.plan
# the fixed plan runs
printf 'mesh: dp=2\ninput tokens: S(0)@dp\ninput targets: S(0)@dp\nparam h.*.mlp.fc.weight: R\n' > ok.plan
"$HP" train "${S[@]}" --plan ok.plan >/dev/null 2>err.txt || fail "a plan whose rules all match: $(cat err.txt)"
finish
