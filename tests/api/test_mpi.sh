#!/usr/bin/env bash
# tests/api/test_mpi.sh TRAIN_TINY: the example over the public API under
# mpirun -np 2 with DP=2 x TP=2 (2 processes x 2 rank-threads): both
# processes exit 0, and only the one hosting rank 0 reports (one result line,
# the loss fell).
set -euo pipefail
exe=${1:?usage: test_mpi.sh TRAIN_TINY}
. "$(dirname "$0")/../../scripts/mpienv.sh"
out=$(env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 mpirun -np 2 "$exe" /usr/share/common-licenses/GPL-3 10 2 2 2>&1) || {
    echo "$out"; echo "api/train_tiny_mpi: FAIL: mpirun exited non-zero"; exit 1; }
n=$(grep -c "^train_tiny: loss" <<<"$out" || true)
[[ $n == 1 ]] || { echo "$out"; echo "api/train_tiny_mpi: FAIL: $n result lines, expected 1"; exit 1; }
grep -q "mesh dp=2,tp=2 (4 ranks)" <<<"$out" || { echo "$out"; echo "api/train_tiny_mpi: FAIL: no start line"; exit 1; }
grep -q "falls" <<<"$out" || { echo "$out"; echo "api/train_tiny_mpi: FAIL: the loss did not fall"; exit 1; }
echo "api/train_tiny_mpi: ok ($(grep '^train_tiny: loss' <<<"$out"))"
