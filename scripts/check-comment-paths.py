#!/usr/bin/env python3
"""Every file a comment in src/ names (foo.h, dir/foo.cpp, docs/x.md, ...) exists in the repo.

A name with a directory must match the end of a tracked path (or ../shared/...); a bare name
must be some tracked file's name. Names of files outside the repo (a run's config.yaml, a
generated header, another project's train.py) are listed in OUTSIDE; ../shared/ names are
checked when the shared notes sit beside the checkout. Prints each stale
reference as file:line: name and exits 1 if there is any.
Usage: scripts/check-comment-paths.py [repo root]
"""
import os
import re
import subprocess
import sys

OUTSIDE = {"config.yaml", "x.yaml", "train.py", "sentencepiece_model.pb.h"}
NAME = re.compile(r"(?<![\w./-])((?:\.\./)*[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(?:h|cpp|md|sh|py|bash))\b")


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(root)
    try:  # the tracked and new files; outside a git checkout, the tree without build directories
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = [os.path.relpath(os.path.join(d, f)) for d, dirs, fs in os.walk(".")
                  if not d.startswith(("./build", "./.git")) for f in fs]
    files = [f for f in listed if os.path.exists(f)]
    names = {os.path.basename(f) for f in files}
    stale = []
    for src in (f for f in files if f.startswith("src/") and f.endswith((".h", ".cpp"))):
        with open(src, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if "//" not in line:
                    continue
                for match in NAME.finditer(line[line.index("//"):]):
                    name = match.group(1)
                    if os.path.basename(name) in OUTSIDE:
                        continue
                    if name.startswith("../shared/"):
                        # the shared design notes beside the repo, when this checkout has them
                        ok = not os.path.isdir("../shared") or os.path.exists(name)
                    elif "/" in name:
                        ok = any(f == name or f.endswith("/" + name) for f in files)
                    else:
                        ok = name in names
                    if not ok:
                        stale.append(f"{src}:{number}: {name}")
    for s in stale:
        print(s)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
