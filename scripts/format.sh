#!/usr/bin/env bash
# Formats C++ sources with clang-format and the repository's .clang-format.
# Usage: scripts/format.sh [--check] [FILE...]
#   no FILE: every tracked *.cc / *.h under src, apps, tests and bench
#   --check: change nothing; list the files that are not formatted and exit 1 if there are any
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "format: $CLANG_FORMAT missing (scripts/setup.sh installs clang-format)" >&2
  exit 2
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- 'src/*.cc' 'src/*.h' 'apps/*.cc' 'apps/*.h' 'tests/*.cc' \
                         'tests/*.h' 'bench/*.cc' 'bench/*.h')
fi
[[ ${#files[@]} -gt 0 ]] || exit 0
if [[ $check -eq 0 ]]; then
  "$CLANG_FORMAT" -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format: $f is not formatted (scripts/format.sh $f)"
    bad=1
  fi
done
exit $bad
