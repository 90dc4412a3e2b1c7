#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...]: builds the libFuzzer targets with
# clang under ASan + UBSan (build-fuzz/, see tests/fuzz/CMakeLists.txt) and
# fuzzes each TARGET (default: all of them) for SECONDS (default 30), from
# its seed corpus tests/fuzz/corpus/<target>/ (read only; what the fuzzer
# adds goes to build-fuzz/corpus/<target>/, emptied first). Prints one line
# per target: executions, coverage (libFuzzer's cov and ft counters at the
# end) and corpus size; a crash, leak, timeout (10 s per input) or broken
# property fails the run and leaves the input in build-fuzz/artifacts/.
# A finding is fixed in the reader and its input copied into the seed
# corpus as regress_<what> (tests/fuzz/corpus/<target>/), where
# fuzz/replay_<target> runs it in every test suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-30}
shift || true
[[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || { echo "run.sh: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
all=$(cd tests/fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
targets=${*:-$all}
for t in $targets; do
    [[ -f tests/fuzz/fuzz_$t.c ]] || { echo "run.sh: no fuzz target '$t' (have: $(echo $all))" >&2; exit 2; }
done

cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "run.sh: $cc not found (scripts/setup.sh --tests installs clang)" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S tests/fuzz -B build-fuzz -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build build-fuzz -j"$jobs" >/dev/null

# The targets' scratch files: in memory when /dev/shm is there, and removed
# even when a target dies on a finding.
base=/tmp
[[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
export TMPDIR
TMPDIR=$(mktemp -d "$base/hp-fuzz.XXXXXX")
trap 'rm -rf "$TMPDIR"' EXIT
# libFuzzer sets up ASan's reporting itself; UBSan stops at the first error.
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
printf '%-12s %10s %8s %8s %8s %6s  %s\n' target execs exec/s cov ft corpus result
for t in $targets; do
    work=build-fuzz/corpus/$t art=build-fuzz/artifacts/$t log=build-fuzz/logs/$t.log
    rm -rf "$work" "$art"
    mkdir -p "$work" "$art" build-fuzz/logs
    rc=0
    build-fuzz/fuzz_"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "$work" tests/fuzz/corpus/"$t" >"$log" 2>&1 || rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    last=$(grep -E '(pulse|NEW|REDUCE|INITED|DONE) +cov:' "$log" | tail -1 || true)
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || true)
    ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || true)
    corp=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*' || true)
    result=ok
    if [[ $rc -ne 0 ]]; then
        result="FAILED (exit $rc; input: $(ls "$art" 2>/dev/null | head -1 || true); log: $log)"
        failed+=("$t")
    fi
    printf '%-12s %10s %8s %8s %8s %6s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
if [[ ${#failed[@]} -gt 0 ]]; then
    for t in "${failed[@]}"; do
        echo "== fuzz_$t: the report in build-fuzz/logs/$t.log"
        grep -m1 -B12 -A30 -E '==ERROR|runtime error|fuzz property failed|ALARM|out-of-memory|deadly signal' \
            "build-fuzz/logs/$t.log" | head -52 || true
        # The input itself, so that a finding on another machine can be replayed here.
        for f in build-fuzz/artifacts/"$t"/*; do
            [[ -f $f ]] || continue
            echo "== the input $(basename "$f") ($(wc -c <"$f") bytes; od -c, first 1 KiB):"
            head -c 1024 "$f" | od -An -c -w32
        done
        echo "== ... and its end"
        tail -12 "build-fuzz/logs/$t.log"
    done
    echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
    exit 1
fi
