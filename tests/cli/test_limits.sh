# Model shapes beyond the stated limits are refused up front, naming the
# limit (issue 11, defect 8): before, --vocab 2147483647 overflowed in the
# config check, --channels 2147483647 overflowed the element count, and
# --layers 100000000 built a graph for minutes. `timeout` only bounds a
# regression; the checks are on the messages.
. "$(dirname "$0")/lib.sh"
S=(--steps 1 --threads 1 --batch 2 --seq 16 --max-seq 16)
lim() { expect_error "$1" timeout 300 "$HP" "${@:2}"; }
lim "vocabulary (V) = 2147483647 is above the limit of 16777216" train "${S[@]}" --vocab 2147483647
lim "channels (C) = 2147483647 is above the limit of 65536" train "${S[@]}" --channels 2147483647 --heads 1
lim "layers (L) = 100000000 is above the limit of 1024" train "${S[@]}" --layers 100000000
lim "max sequence length (maxT) = 2147483647 is above the limit of 1048576" train --steps 1 --max-seq 2147483647
lim "heads (NH) = 4096 is above the limit of 1024" train "${S[@]}" --heads 4096 --channels 4096
# every factor within its limit, the product not: the parameter count
lim "parameters (L=1024 C=65536 Vp=256 maxT=16) are above the limit of 1099511627776" \
  train "${S[@]}" --layers 1024 --channels 65536 --heads 1024
# a batch whose logits would exceed the element limit of one tensor
lim "has more than the 1099511627776 elements a tensor may have" train "${S[@]}" --batch 2147483647 --layers 1 --channels 32 --heads 2
# hyperpar plan builds the same model: the same refusals
lim "layers (L) = 100000000 is above the limit of 1024" plan "${S[@]}" --layers 100000000 --dp 2
finish
