# The tools environment check passes a clean tools/ tree and fails, naming
# file and line, on each planted violation: an MPI call, <mpi.h>, getenv(,
# a launcher's variable (OMPI_, PMIX_), in a .c and in a .h.
set -u
check="$1/tests/rooms/check_tools_env.sh"
t=$(mktemp -d /tmp/hp-tools-env-XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/tools"
printf '#include <stdio.h>\n#include <hyperpar/hyperpar.h>\nint f(void) { return hp_world_launched_processes(); }\n' > "$t/tools/ok.c"
printf '/* own header: mpirun, the environment */\n' > "$t/tools/own.h"
out=$(bash "$check" "$t") || { echo "FAIL: a clean tools/ tree was rejected: $out"; exit 1; }
plant() { # file, contents, expected "file:line: 'what'"
  rm -f "$t/tools/bad.c" "$t/tools/bad.h"
  printf "$2" > "$t/tools/$1"
  out=$(bash "$check" "$t") && { echo "FAIL: $1 with '$2' was accepted"; exit 1; }
  echo "$out" | grep -q "$3" || { echo "FAIL: message for '$2': $out"; exit 1; }
}
plant bad.c 'int x;\nvoid f(void) { MPI_Finalize(); }\n' "tools/bad.c:2: 'MPI_Finalize'"
plant bad.c '#include <mpi.h>\n' "tools/bad.c:1: 'mpi.h'"
plant bad.c '#include <stdlib.h>\nconst char *f(void) { return getenv("HOME"); }\n' "tools/bad.c:2: 'getenv('"
plant bad.c 'const char *v = "OMPI_COMM_WORLD_SIZE";\n' "tools/bad.c:1: 'OMPI_COMM_WORLD_SIZE'"
plant bad.h '\n\n#define R "PMIX_RANK"\n' "tools/bad.h:3: 'PMIX_RANK'"
echo "all checks passed"
