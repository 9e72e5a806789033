#!/usr/bin/env bash
# Provisions everything the full test suite needs on a fresh Debian machine: system packages
# for the real parts the tests use (Docker daemon, sshd, Chromium, debootstrap, ripgrep, the
# Prometheus server that scrapes `shears serve`), then
# scripts/setup.sh. The daemons themselves are started and stopped by the test run
# (scripts/test-infra/global-setup.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(docker.io openssh-server chromium debootstrap busybox-static ripgrep git python3 python3-jinja2 python3-pytest ca-certificates iproute2 prometheus strace libcap2-bin sqlite3 gcc less vim-tiny)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "provision: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "provision: WARNING not root; missing system packages: ${missing[*]} (Docker/SSH/Chromium tests will skip)" >&2
  fi
fi
bash scripts/setup.sh
# The Python environment (reference trainer, `transformers serve`, TRL) from the local index.
bash scripts/setup-python.sh
