#!/usr/bin/env bash
# Operators are recognised through what they declare (hp_opdef.describe for
# collectives, queries in src/ops for the others), never by pointer: no file
# under src/ outside src/ops compares an operator pointer (`op == &hp_op_X`,
# `op != &hp_op_X`) unless it defines hp_op_X itself (the operator's own
# file). Fails naming file, line and operator.
# Usage: check_op_compare.sh [REPO_ROOT]
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
bad=0
while IFS=: read -r f line text; do
  case "$f" in "$root"/src/ops/*) continue ;; esac
  for op in $(printf '%s' "$text" | grep -oE 'op[[:space:]]*[!=]=[[:space:]]*&hp_op_[A-Za-z0-9_]+' | sed 's/.*&//'); do
    grep -qE "^const hp_opdef $op[[:space:]]*=" "$f" && continue
    echo "${f#$root/}:$line: compares the operator pointer &$op (read its descriptor or an ops query instead)"
    bad=1
  done
done < <(grep -rnE 'op[[:space:]]*[!=]=[[:space:]]*&hp_op_' "$root/src" --include='*.c' --include='*.h')
[ "$bad" = 0 ] && echo "no operator-pointer comparison outside src/ops and the operators' own files"
exit "$bad"
