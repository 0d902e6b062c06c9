#!/usr/bin/env python3
"""The longest C++ functions of the repository, outside tests.

Function extents come from Universal Ctags' C++ parser (Debian: universal-ctags; its JSON output
gives each function's first and last line, `end`), so the figure is the number of lines from the
line that names the function to its closing brace, comments and blank lines included. Lambdas
count towards the function that holds them. Tests (*_test.cc, tests/) are left out.

Usage: longest_functions.py [-n 10] [PATH ...]   (default paths: src apps bench)
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="how many to list (default 10)")
    parser.add_argument("paths", nargs="*", default=["src", "apps", "bench"])
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    ctags = shutil.which("ctags")
    if ctags is None:
        print("longest_functions: ctags missing (scripts/setup.sh installs universal-ctags)",
              file=sys.stderr)
        return 2
    out = subprocess.run([ctags, "--output-format=json", "--fields=+ne", "--kinds-C++=f",
                          "--languages=C++", "--langmap=C++:+.h", "-R", "-f", "-", *args.paths],
                         cwd=root, check=True, capture_output=True, text=True).stdout
    functions = []
    for line in out.splitlines():
        tag = json.loads(line)
        path = tag["path"]
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        if path.endswith("_test.cc") or path.startswith("tests/"):
            continue
        scope = tag.get("scope", "")
        name = tag["name"]
        if tag.get("scopeKind") in ("class", "struct") and scope:
            name = scope.split("::")[-1] + "::" + name
        functions.append((tag["end"] - tag["line"] + 1, name, path, tag["line"], tag["end"]))
    functions.sort(key=lambda f: (-f[0], f[2], f[3]))
    print(f"{'lines':>5}  {'function':<40} where")
    for n, name, path, first, last in functions[:args.n]:
        print(f"{n:>5}  {name:<40} {path}:{first}-{last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
