#!/usr/bin/env python3
"""Include layering check (docs/design.md, Layers).

Every file under src/<folder>/ and apps/ may include headers of its own folder and of folders to
its left in LAYERS, never of a folder to its right. Folders in one layer do not include each
other, except for the pairs in SIBLINGS (each with its reason). Test files (*_test.cc) may also
include the test helpers of tests/testing/. Run by CTest (include_layering); exits 1 and names
every offending line, 2 when a folder under src/ is not in LAYERS.

Usage: check_layering.py [REPO_ROOT]
"""
import pathlib
import re
import sys

# Left to right: a folder uses only folders of earlier layers.
LAYERS = [
    ["core"],
    ["ingest"],
    ["io"],  # the IPFIX file reader hands its messages to ingest's export decoder
    ["flow"],
    ["analysis"],
    ["diagnosis"],
    ["sim", "eval", "counters"],
    ["output"],
    ["pipeline"],  # what analyze and serve share: the input registry, one window's analysis
    ["scaleout"],  # collectors and analysers apart: record batches over NATS JetStream
    ["service"],
    ["apps"],
]

# (from, to): includes allowed between folders of one layer.
SIBLINGS = {
    # The simulator's port-counter sink (sim/port_counter_sink.h) writes counters mode's input.
    ("sim", "counters"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    rank = {folder: i for i, layer in enumerate(LAYERS) for folder in layer}
    unknown = sorted(p.name for p in (root / "src").iterdir()
                     if p.is_dir() and p.name not in rank)
    if unknown:
        print(f"check_layering: src/{', src/'.join(unknown)} not in LAYERS of "
              "scripts/check_layering.py: add each folder to its layer (docs/design.md, Layers)")
        return 2
    files = [p for p in (root / "src").rglob("*") if p.suffix in (".h", ".cc")]
    files += [p for p in (root / "apps").rglob("*") if p.suffix in (".h", ".cc")]
    problems = []
    for path in sorted(files):
        rel = path.relative_to(root)
        folder = "apps" if rel.parts[0] == "apps" else rel.parts[1]
        is_test = path.name.endswith("_test.cc")
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue  # a header beside the file (apps/llmprism/counters_cmd.h)
            target = m.group(1).split("/")[0]
            if target == "testing" and is_test:
                continue
            if target == folder:
                continue
            if target not in rank:
                problems.append(f"{rel}:{lineno}: includes \"{m.group(1)}\": not a folder of src/")
            elif rank[target] > rank[folder]:
                problems.append(f"{rel}:{lineno}: {folder} includes \"{m.group(1)}\": {target} is "
                                f"to its right (docs/design.md, Layers)")
            elif rank[target] == rank[folder] and (folder, target) not in SIBLINGS:
                problems.append(f"{rel}:{lineno}: {folder} includes \"{m.group(1)}\": {target} is "
                                f"in the same layer (allowed only in SIBLINGS)")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layering: {len(problems)} include(s) against the layering")
        return 1
    print(f"check_layering: {len(files)} files follow the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
