#!/usr/bin/env bash
# tests/rooms/test_check_includes.sh ROOT: check_includes.sh itself fails,
# naming file, line and room, on a tree with one include from a room not in
# the list, and on a src/ folder that is not a room; and passes on a clean one.
set -u
root=${1:?usage: test_check_includes.sh SOURCE_ROOT}
check=$root/tests/rooms/check_includes.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/src/core" "$tmp/src/ops"
cat >"$tmp/CMakeLists.txt" <<'CML'
set(HP_ROOMS core ops)
set(HP_DEPS_core "")
set(HP_DEPS_ops core)
CML
printf '#include "core/a.h"\n' >"$tmp/src/ops/b.c"
printf '#include <stdio.h>\n#include "a2.h"\n' >"$tmp/src/core/a.h"
out=$(bash "$check" "$tmp") || fail "clean tree rejected: $out"

printf '/* x */\n#include "core/a.h"\n  #  include "ops/b.h"\n' >"$tmp/src/core/a.c"
out=$(bash "$check" "$tmp") && fail "upward include passed: $out"
grep -q '^src/core/a.c:3: room core includes ops/' <<<"$out" || fail "no file:line:room in: $out"
[[ $(grep -c 'room core includes' <<<"$out") == 1 ]] || fail "wrong count in: $out"
rm "$tmp/src/core/a.c"

mkdir -p "$tmp/src/attic"
out=$(bash "$check" "$tmp") && fail "unknown room passed: $out"
grep -q '^src/attic: folder is not a room' <<<"$out" || fail "unknown room not named: $out"
echo "test_check_includes: ok"
