#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (unit, golden and end-to-end) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then bash scripts/setup.sh; else sudo bash scripts/setup.sh; fi
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j2
