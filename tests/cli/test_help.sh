# --help of every command with a flag table: each flag's description starts
# in one column (a flag too long for the column has a line of its own, its
# description on the next line, at the same column) and ends with the flag's
# default as a setting is written; settings (config.json, state.json) are the
# shortest text that reads back to the same float.
. "$(dirname "$0")/lib.sh"
# desc_columns FILE: the column (1-based) of every flag's description.
desc_columns() {
  awk '
    /^flags / { on = 1; next }
    !on { next }
    pending { match($0, /^ +/); if (RLENGTH > 2 && substr($0, RLENGTH + 1) != "") print RLENGTH + 1; else print "none:" NR; pending = 0; next }
    /^  --/ { if (match($0, /^  --[^ ]+( [^ ]+)?  +/)) print RLENGTH + 1; else pending = 1 }
    END { if (pending) print "none:end" }' "$1"
}
for cmd in train plan sample export bench "bench parallel"; do
  # shellcheck disable=SC2086
  "$HP" $cmd --help >help.txt 2>&1 || { fail "hyperpar $cmd --help failed: $(cat help.txt)"; continue; }
  nflags=$(grep -c '^  --' help.txt)
  [ "$nflags" -ge 3 ] || fail "hyperpar $cmd --help lists $nflags flags"
  desc_columns help.txt >cols.txt
  [ "$(wc -l <cols.txt)" -eq "$nflags" ] || fail "hyperpar $cmd --help: $(wc -l <cols.txt) descriptions for $nflags flags"
  grep -q none cols.txt && fail "hyperpar $cmd --help: a flag without a description (line $(grep none cols.txt | head -1))"
  [ "$(sort -u cols.txt | wc -l)" -eq 1 ] ||
    fail "hyperpar $cmd --help: descriptions start in columns $(sort -un cols.txt | tr '\n' ' ')"
  # defaults as a setting is written; none for an off flag, and never a marker or float noise
  grep -E 'default (-2147483648|false|true)|000000|99999' help.txt && fail "hyperpar $cmd --help: a default shown wrong"
done
# each flag's default (issue 21, item 9): train's shape flags hold markers while it parses,
# and flags given before --help are not applied (the defaults still show)
"$HP" train --lr 0.5 --layers 9 --help >help.txt 2>&1 || fail "train --help: $(cat help.txt)"
for want in '--lr X .*peak learning rate \(AdamW\) \(default 0\.001\)$' '--steps N .*\(default 300\)$' \
    '--layers N .*\(default 4\)$' '--eps X .*\(default 1e-08\)$' '--comm-timeout X .*\(default 300\)$' \
    '--beta2 X .*\(default 0\.95\)$' '--schedule STR .*\(default cosine\)$' '--seed N .*\(default 1337\)$' \
    '--data STR .*\(default /usr/share/common-licenses/\*\)$'; do
  grep -qE -- "^  $want" help.txt || fail "train --help lacks /$want/: $(grep -E -- "^  ${want%% *} " help.txt)"
done
grep -E -- '^  --(shuffle|metrics STR|ckpt-dir STR) ' help.txt | grep -qE '\(default [^)]*\)$' && fail "train --help: a default for an off flag or an empty string"
"$HP" bench --help >help.txt 2>&1 || fail "bench --help: $(cat help.txt)"
grep -qE -- '^  --threads N .*\(default 2\)$' help.txt || fail "bench --help: no --threads default: $(cat help.txt)"
grep -qE -- '^  --dtype STR .*\(default fp32\)$' help.txt || fail "bench --help: no --dtype default"
"$HP" sample --help >help.txt 2>&1 || fail "sample --help: $(cat help.txt)"
grep -qE -- '^  --temperature X .*\(default 0\.8\)$' help.txt || fail "sample --help: no --temperature 0.8: $(cat help.txt)"
# settings as the shortest text that reads back to the same float: config.json and
# state.json say 0.001 for --lr 1e-3 (was 0.00100000005), and a resume reads them back
S=(--layers 1 --channels 32 --heads 2 --batch 2 --seq 16 --max-seq 16 --threads 1 --val-steps 1)
"$HP" train "${S[@]}" --steps 2 --lr 1e-3 --beta1 0.85 --eps 1e-7 --weight-decay 0.1 --min-lr-frac 0.05 \
  --val-fraction 0.3 --grad-clip 0.7 --run-dir run --ckpt-dir ck >out.txt 2>&1 || fail "train: $(tail -3 out.txt)"
python3 - run/config.json "ck/$(cat ck/latest)/state.json" <<'PY' || fail "settings written with float noise: see above"
import json, struct, sys
want = {"lr": "0.001", "beta1": "0.85", "beta2": "0.95", "eps": "1e-07", "weight-decay": "0.1",
        "min-lr-frac": "0.05", "val-fraction": "0.3", "grad-clip": "0.7", "comm-timeout": "300"}
def f32(s): return struct.unpack("f", struct.pack("f", float(s)))[0]
cfg = json.load(open(sys.argv[1]))
found = {}
def walk(x):
    if isinstance(x, dict):
        if "key" in x and "value" in x: found[x["key"]] = x["value"]
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(cfg)
args = json.load(open(sys.argv[2]))["args"]
bad = 0
for where, got in (("config.json", found), ("state.json", args)):
    for k, v in want.items():
        if got.get(k) != v: print(f"{where}: {k} = {got.get(k)!r}, want {v!r}"); bad += 1
    for k, v in got.items():  # every float setting: no more digits than it needs
        try: x = float(v)
        except (TypeError, ValueError): continue
        if "." in v or "e" in v:
            if any(f32(f"{x:.{p}g}") == f32(v) and len(f"{x:.{p}g}") < len(v) for p in range(1, 10)):
                print(f"{where}: {k} = {v!r} is not the shortest"); bad += 1
sys.exit(1 if bad else 0)
PY
"$HP" train --resume ck --steps 3 --run-dir none >out.txt 2>&1 || fail "resume from the short settings: $(tail -3 out.txt)"
finish
