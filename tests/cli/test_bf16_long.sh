# bf16 against fp32 over 1,000 steps of the small config (L4 NH4 C256 T128
# B8, the same seed and data; issue 10): the two loss curves' Pearson
# correlation >= 0.999 and the final losses within 1% of each other.
. "$(dirname "$0")/lib.sh"
common="--layers 4 --heads 4 --channels 256 --seq 128 --batch 8 --steps 1000 --threads 2 --seed 0 --run-dir none --val-steps 1 --val-every 0 --log-every 100"
"$HP" train $common --dtype fp32 --metrics f32.jsonl >f32.log 2>&1 || fail "fp32 run failed: $(tail -2 f32.log)"
"$HP" train $common --dtype bf16 --metrics b16.jsonl >b16.log 2>&1 || fail "bf16 run failed: $(tail -2 b16.log)"
read -r n r fa fb <<<"$(paste <(losses f32.jsonl) <(losses b16.jsonl) | awk '{ n++; x=$1; y=$2; sx+=x; sy+=y; sxx+=x*x; syy+=y*y; sxy+=x*y; fa=x; fb=y }
  END { r=(n*sxy-sx*sy)/sqrt((n*sxx-sx*sx)*(n*syy-sy*sy)); printf "%d %.6f %s %s\n", n, r, fa, fb }')"
echo "bf16 vs fp32: $n steps, Pearson $r, final loss fp32 $fa bf16 $fb"
[ "$n" -eq 1000 ] || fail "$n steps compared"
awk -v r="$r" 'BEGIN { exit !(r >= 0.999) }' || fail "Pearson $r < 0.999"
awk -v a="$fa" -v b="$fb" 'BEGIN { d=(a-b)/a; if (d<0) d=-d; exit !(d <= 0.01) }' || fail "final losses $fa (fp32) and $fb (bf16) differ by more than 1%"
finish
