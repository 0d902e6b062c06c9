#!/usr/bin/env bash
# Regenerates the `pp-gpipe` variant of the real-traffic corpus from scratch (real
# torch.distributed training in network namespaces, tcpdump on the bridge: 60 steps of ~0.4 s, the
# shortest training of the corpus since the DP-only variants' steps are seconds long) and checks
# it: the capture decodes, the truth has the variant's 4 ranks, their steps and its DP and PP
# pairs, and `llmprism analyze` finds exactly one job with the truth's GPU set. Exit 77 (skipped) only where network
# namespaces cannot be created (not root / no CAP_NET_ADMIN).
# Usage: regen.sh LLMPRISM WORK_DIR
set -euo pipefail
bin=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"
mkdir -p "$dir"

probe=llmprism-probe-$$
if ! ip netns add "$probe" 2>/dev/null; then
  echo "SKIP: cannot create a network namespace (needs root / CAP_NET_ADMIN)"
  exit 77
fi
ip netns del "$probe"

variant=pp-gpipe
start=$SECONDS
bash "$here/make_corpus.sh" --out "$dir/corpus" --zstd-level 3 $variant
echo "make_corpus.sh $variant: $((SECONDS - start)) s"
/usr/bin/python3 "$here/check_corpus.py" "$bin" "$dir/corpus" "$dir/check" --expect-one-job $variant
/usr/bin/python3 - "$dir/corpus/$variant" "$here" $variant <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
import variants
d, variant = sys.argv[1], sys.argv[3]
truth = json.load(open(f"{d}/truth.json"))
job = variants.VARIANTS[variant]["jobs"][0]
ranks = job["dp"] * job["pp"] * job["tp"]
assert len(truth["jobs"]) == 1 and len(truth["jobs"][0]["gpus"]) == ranks, truth["jobs"]
assert len(truth["timelines"]) == ranks, len(truth["timelines"])
for t in truth["timelines"]:
    assert len(t["steps"]) == job["steps"] - 1, (t["gpu"], len(t["steps"]))
labels = sorted(p["label"] for p in truth["pairs"])
expected = {"dp"} | ({"pp"} if job["pp"] > 1 else set()) | ({"tp"} if job["tp"] > 1 else set())
assert labels and set(labels) == expected, labels
print(f"ok {variant} regenerated: {ranks} ranks x {job['steps'] - 1} truth steps, "
      f"{labels.count('dp')} dp and {labels.count('pp')} pp pairs")
PY
