#!/usr/bin/env bash
# Creates the Python environment the tests use (`.venv/` at the repository root, gitignored):
# the reference trainer's dependencies, `transformers serve` and TRL, pinned in
# scripts/python-requirements.txt. Idempotent: an environment built from the same requirements
# is kept (a stamp holds their hash). Prints the interpreter path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SHEARS_PYTHON_VENV:-.venv}
requirements=scripts/python-requirements.txt
extra=()
[ -d trainers ] && [ -f trainers/pyproject.toml ] && extra=(-e ./trainers)
hashed=("$requirements")
[ ${#extra[@]} -gt 0 ] && hashed+=(trainers/pyproject.toml)
want=$(cat "${hashed[@]}" | sha256sum | cut -d' ' -f1)
stamp="$venv/.shears-requirements"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "python: $venv is up to date"
else
  python3 -m venv "$venv"
  # The local index answers; pypi.org is not reachable here, so it is not asked first.
  index=()
  if [ -d /opt/pypi/simple ]; then
    index=(--index-url file:///opt/pypi/simple)
    [ -d /opt/pypi-more/simple ] && index+=(--extra-index-url file:///opt/pypi-more/simple)
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${index[@]}" -r "$requirements" "${extra[@]}"
  echo "$want" > "$stamp"
  echo "python: installed $requirements into $venv"
fi
echo "$(pwd)/$venv/bin/python"
