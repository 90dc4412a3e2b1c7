#!/usr/bin/env bash
# tools/ uses the public API only: every file under tools/ may include
# "hyperpar/hyperpar.h", its own headers (files in tools/), and C and system
# library headers in <...> that are not the project's (nothing from src/ or
# include/ but hyperpar/hyperpar.h). Fails naming file, line and header.
# Usage: check_tools_includes.sh [REPO_ROOT]
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
bad=0
for f in "$root"/tools/*.c "$root"/tools/*.h; do
  [ -e "$f" ] || continue
  while IFS=: read -r line text; do
    h=$(printf '%s' "$text" | sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]\([^">]*\)[">].*/\1/p')
    [ -n "$h" ] || continue
    quoted=0; printf '%s' "$text" | grep -q '#[[:space:]]*include[[:space:]]*"' && quoted=1
    if [ "$h" = "hyperpar/hyperpar.h" ]; then continue; fi
    if [ "$quoted" = 1 ] && [ -e "$root/tools/$h" ]; then continue; fi
    if [ "$quoted" = 0 ] && [ ! -e "$root/src/$h" ] && [ ! -e "$root/include/$h" ]; then continue; fi
    echo "${f#$root/}:$line: includes '$h' (tools/ may include only hyperpar/hyperpar.h, its own headers and system headers)"
    bad=1
  done < <(grep -n '#[[:space:]]*include' "$f")
done
[ "$bad" = 0 ] && echo "tools/ includes only the public API"
exit "$bad"
