#!/usr/bin/env bash
# The shipped Prometheus rules (deploy/prometheus/llmprism-rules.yml): `promtool check rules`
# accepts them, `promtool test rules` passes their unit tests (each alert fires on its series,
# after its `for`, resolves, and stays quiet on healthy series), and every llmprism_* metric they
# use is one serve exports (src/service/http_api.cc): a renamed metric must not leave a rule that
# can never fire. Exit 77 (skipped) only when promtool is missing.
# Usage: prometheus_rules.sh REPO_ROOT
set -euo pipefail
root=$1
dir=$root/deploy/prometheus
command -v promtool >/dev/null || { echo "SKIP: promtool missing (Debian package prometheus)"; exit 77; }
promtool check rules "$dir/llmprism-rules.yml"
(cd "$dir" && promtool test rules llmprism-rules.test.yml)
missing=0
for m in $(grep -o 'llmprism_[a-z_]*' "$dir/llmprism-rules.yml" | sort -u); do
  if grep -q "\"$m\"" "$root/src/service/http_api.cc" ||
     grep -q "\"$m{" "$root/src/service/http_api.cc" ||
     grep -q "\"$m " "$root/src/service/http_api.cc"; then
    echo "ok   $m is exported by serve"
  else
    echo "FAIL $m is used by the rules but not exported by serve"
    missing=$((missing + 1))
  fi
done
[ $missing = 0 ]
