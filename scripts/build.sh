#!/usr/bin/env bash
# Configures and builds the release tree in build/ (CMake + Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release
