#!/usr/bin/env bash
# tools/ makes no MPI call and reads no environment of its own: the library
# starts MPI (hp_bench_comm_mpi_start, comm/mpi_job), tells how the process
# was launched (hp_world_launched_processes, comm/launch) and which kernels
# run (hp_kernels_openblas, kernels/blas_core). Fails on `MPI_`, `<mpi.h>`,
# `getenv(` and the launchers' variables (`OMPI_`, `PMIX_`) in tools/*.c and
# tools/*.h, naming file, line and what matched.
# Usage: check_tools_env.sh [REPO_ROOT]
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
bad=0
for f in "$root"/tools/*.c "$root"/tools/*.h; do
  [ -e "$f" ] || continue
  while IFS=: read -r line text; do
    what=$(printf '%s' "$text" | grep -o -E 'MPI_[A-Za-z_]*|mpi\.h|getenv\(|OMPI_[A-Za-z_]*|PMIX_[A-Za-z_]*' | head -n 1)
    echo "${f#$root/}:$line: '$what' (tools/ makes no MPI call and reads no environment: the library does)"
    bad=1
  done < <(grep -n -E 'MPI_|<mpi\.h>|getenv\(|OMPI_|PMIX_' "$f")
done
[ "$bad" = 0 ] && echo "tools/ makes no MPI call and reads no environment"
exit "$bad"
