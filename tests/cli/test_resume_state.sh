# A checkpoint's state.json is validated field by field before anything is
# resumed, sampled or exported: a one-line error naming the file and the
# field (issue 11, defect 10: a negative or huge step, a wrong "format" and
# non-string args were accepted; a number in "args" was silently dropped, so
# the resumed run used the default in its place).
. "$(dirname "$0")/lib.sh"
S=(--layers 1 --channels 32 --heads 2 --batch 2 --seq 16 --max-seq 16 --threads 1 --val-steps 1)
"$HP" train "${S[@]}" --steps 2 --ckpt-dir ck >/dev/null 2>err.txt || fail "the run to resume: $(cat err.txt)"
# edit EXPR: c/ as ck/step_000002 with state.json changed by the Python expression
edit() {
  rm -rf c; cp -r ck/step_000002 c
  python3 -c 'import json,sys; p="c/state.json"; j=json.load(open(p)); exec(sys.argv[1]); open(p,"w").write(json.dumps(j))' "$1"
}
bad() { # EXPR NEEDLE: train --resume, sample and export all refuse it
  edit "$1"
  expect_error "c/state.json: $2" "$HP" train --resume c --steps 3
  expect_error "c/state.json: $2" "$HP" sample --ckpt c --tokens 1 --threads 1
  expect_error "c/state.json: $2" "$HP" export --ckpt c --llmc out.bin
}
bad 'j["step"] = -5' "key 'step': -5 is negative"
bad 'j["step"] = 10**15' "key 'step': 1000000000000000 is above the limit of 1099511627776"
bad 'j["step"] = 2.5' "key 'step': expected an integer"
bad 'j["step"] = "2"' "key 'step': expected an integer, got a string"
bad 'j["format"] = "hyperpar-train-9"' "key 'format': expected \"hyperpar-train-1\", got \"hyperpar-train-9\""
bad 'j["format"] = 1' "key 'format': expected \"hyperpar-train-1\", got a number"
bad 'del j["format"]' "missing key 'format'"
bad 'j["args"]["lr"] = 5' "args: key 'lr': expected a string, got a number"
bad 'j["args"]["shuffle"] = False' "args: key 'shuffle': expected a string, got"
bad 'j["args"] = ["lr"]' "key 'args': expected an object, got an array"
bad 'j["data"]["position"] = -1' "data: key 'position': -1 is negative"
bad 'j["data"]["epoch"] = 9' "data: key 'epoch': 9 is more than the step 2"
bad 'j["data"] = 7' "key 'data': expected an object, got a number"
bad 'del j["data"]' "missing key 'data'"
bad 'j["model"]["C"] = 10**8' "model: gpt2: channels (C) = 100000000 is above the limit of 65536"
bad 'j["model"] = "gpt2"' "key 'model': expected an object, got a string"
# a step past the run's last step: resume refuses it (sample and export do not care)
edit 'pass'
expect_error "c/state.json: key 'step': 2 is past the run's last step 1 (steps)" "$HP" train --resume c --steps 1
# the untouched checkpoint still resumes
"$HP" train --resume c --steps 3 >/dev/null 2>err.txt || fail "a valid state.json: $(cat err.txt)"
finish
