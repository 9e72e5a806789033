#!/usr/bin/env bash
# The reference trainer's own checks (trainers/) and envs-swe's Python assets: ruff, then pytest, in the environment
# scripts/setup-python.sh creates (.venv). Part of `pnpm test`; fails when .venv is missing
# rather than skipping, so CI cannot pass without running them.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SHEARS_PYTHON_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "test-python: $venv/bin/python is missing; run bash scripts/setup-python.sh first" >&2
  exit 1
fi
"$venv/bin/ruff" check trainers
"$venv/bin/ruff" format --check trainers
# The Python @shears/envs-swe runs inside task images (its config: packages/envs-swe/assets/ruff.toml).
"$venv/bin/ruff" check packages/envs-swe/assets
"$venv/bin/python" -m pytest trainers -q -p no:cacheprovider
