#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains the embedded
# default model (extra arguments are passed to `hyperpar train`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/hyperpar train "$@"
