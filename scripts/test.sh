#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the suite, then
# runs it again under AddressSanitizer and UBSan, then fuzzes every parser
# and file reader for FUZZ_SECONDS (default 20) each under ASan + UBSan
# (libFuzzer, tests/fuzz/run.sh); a finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --sanitize --tests
. scripts/mpienv.sh
jobs=$(nproc 2>/dev/null || echo 2)
echo "== tests (release build)"
(cd build && ctest --output-on-failure -j"$jobs")
echo "== tests (ASan + UBSan build)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export HP_TEST_BIG=0 # the comm tests' 64 MiB cell runs in the release pass only
(cd build-san && ctest --output-on-failure -j"$jobs" -LE no-sanitize)
echo "== fuzzing (libFuzzer + ASan + UBSan, ${FUZZ_SECONDS:-20} s per target)"
bash tests/fuzz/run.sh "${FUZZ_SECONDS:-20}"
