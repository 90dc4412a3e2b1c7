# Golden losses: 12 steps of a small GPT-2 from seed 7 under the plain engine,
# DP=2, TP=2, DP=2 x TP=2, and Muon (1 rank, DP=2), each compared bit for bit
# (the losses as the metrics print them, %.9g: every float round-trips) with
# the losses recorded from commit c6917f4, the last before the training step
# became one compiled program. --threads is explicit: the bits of a run depend
# on its pool size.
. "$(dirname "$0")/lib.sh"
small="--layers 2 --heads 4 --channels 64 --batch 4 --seq 32 --steps 12 --val-every 0 --warmup 3 --lr 6e-4 --threads 2 --seed 7"
check() { # name "expected losses" flags...
  local name="$1" want="$2"; shift 2
  "$HP" train $small "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || { fail "$name: run failed: $(tail -2 "$name.log")"; return; }
  local got; got=$(losses "$name.jsonl" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "$name: losses differ from the golden run
  want $want
  got  $got"
}
check plain  "5.51852465 5.49590588 5.37418985 5.22273016 5.14127779 5.07319832 4.97954178 4.94358206 4.93398523 4.9517417 4.88874865 4.84395075"
check dp2    "5.51852417 5.49590588 5.37418985 5.22272968 5.14127779 5.07319832 4.97954178 4.94358206 4.93398571 4.95174122 4.88874817 4.84395027" --dp 2
check tp2    "5.51852465 5.49590588 5.37418985 5.22273016 5.14127779 5.07319832 4.97954178 4.94358206 4.93398523 4.9517417 4.88874865 4.84395075" --tp 2
check dp2tp2 "5.51852417 5.49590588 5.37418985 5.22273016 5.14127779 5.07319832 4.97954178 4.94358206 4.93398571 4.95174122 4.88874817 4.84395027" --dp 2 --tp 2
check muon   "5.51852465 5.49757099 5.37507105 5.21278572 5.12471104 5.05723906 4.9591403 4.93263292 4.91602373 4.9352684 4.88635874 4.83192015" --optimizer muon
check muondp2 "5.51852417 5.49757099 5.37507153 5.21278572 5.12471104 5.05723858 4.9591403 4.93263292 4.91602325 4.9352684 4.88635921 4.83192062" --dp 2 --optimizer muon
finish
