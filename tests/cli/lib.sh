# Shared helpers for the command-line tests: $HP is the hyperpar binary, each
# test works in its own temporary directory, and every check prints what failed.
set -u
HP="$1"
WORK=$(mktemp -d /tmp/hp-cli-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
# expect_error "<needle>" cmd...: the command must exit non-zero with a one-line
# error on stderr that contains the needle.
expect_error() {
  local needle="$1"; shift
  if "$@" >out.txt 2>err.txt; then fail "succeeded, expected error '$needle': $*"; return; fi
  grep -qF -- "$needle" err.txt || fail "error lacks '$needle': $(cat err.txt) [$*]"
  [ "$(grep -c . err.txt)" -le 1 ] || fail "error is not one line: $(cat err.txt)"
}
# MPI launches: Open MPI's own allocations are reported by LeakSanitizer under
# the sanitizer build (plugins unloaded at finalize), so leak checking is off
# there; ASan and UBSan stay on.
MPIRUN=(env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 mpirun -np 2)
# expect_error_any "<needle>" cmd...: the same, for launches (mpirun) where
# every process reports the error on its own line.
expect_error_any() {
  local needle="$1"; shift
  if "$@" >out.txt 2>err.txt; then fail "succeeded, expected error '$needle': $*"; return; fi
  grep -qF -- "$needle" err.txt || fail "error lacks '$needle': $(cat err.txt) [$*]"
}
# losses FILE: the training losses of a metrics file, one per line.
losses() { grep -v val_loss "$1" | sed -n 's/.*"loss": \([^,]*\),.*/\1/p'; }
# maxdiff a b: "n maxdiff" over two metrics files' training losses (n: the steps compared)
maxdiff() { paste <(losses "$1") <(losses "$2") | awk '{ n++; d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%d %.3g\n", n, m }'; }
# check_equiv REF STEPS TOL NAME cmd...: runs cmd with --metrics NAME.jsonl (its output in NAME.log); it must
# succeed, and its training losses match REF's over STEPS steps within TOL (max |delta loss|).
check_equiv() {
  local ref=$1 steps=$2 tol=$3 name=$4 n m
  shift 4
  "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 || { fail "$name failed: $(tail -2 "$name.log")"; return; }
  read -r n m <<<"$(maxdiff "$ref" "$name.jsonl")"
  echo "$name: $n steps, max |delta loss| $m"
  [ "$n" -eq "$steps" ] || fail "$name: $n steps compared"
  awk -v m="$m" -v t="$tol" 'BEGIN { exit !(m <= t) }' || fail "$name: max |delta loss| $m above $tol"
}
finish() {
  if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed"; exit 1; fi
  echo "all checks passed"
}
