# The tools include check fails on a tools/ file that includes a library
# header from src/ (quoted or in <...>) and passes the public header, a tools
# header and system headers.
set -u
check="$1/tests/rooms/check_tools_includes.sh"
t=$(mktemp -d /tmp/hp-tools-inc-XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/tools" "$t/src/core" "$t/include/hyperpar"
touch "$t/src/core/graph.h" "$t/include/hyperpar/hyperpar.h" "$t/tools/own.h"
printf '#include <stdio.h>\n#include <mpi.h>\n#include "hyperpar/hyperpar.h"\n#include "own.h"\n' > "$t/tools/ok.c"
bash "$check" "$t" >/dev/null || { echo "FAIL: a clean tools/ tree was rejected"; exit 1; }
printf '#include <stdio.h>\n#include "core/graph.h"\n' > "$t/tools/bad.c"
out=$(bash "$check" "$t") && { echo "FAIL: a src/ include was accepted"; exit 1; }
echo "$out" | grep -q "tools/bad.c:2: includes 'core/graph.h'" || { echo "FAIL: message: $out"; exit 1; }
printf '#include <core/graph.h>\n' > "$t/tools/bad.c"
bash "$check" "$t" >/dev/null && { echo "FAIL: an angle-bracket src/ include was accepted"; exit 1; }
echo "all checks passed"
