#!/usr/bin/env bash
# Set-up for a fresh machine: pnpm (the exact version pinned in package.json), dependencies,
# and a build of every package (the `shears` command runs from dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$want" ]; then
  npm install -g "pnpm@$want"
fi
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1
pnpm install --frozen-lockfile
pnpm build
