"""The paths in an interface package's install tree, for scripts/build_interfaces.sh.

A package built into a prefix names the prefix, the venv and the checkout in its installed
text files (the CMake export files, local_setup.* and the .dsv files, the ament index,
package.xml). So that a checkout at another path (a CI clone) can use the interface cache,
the package's key hashes its sources with those paths replaced by placeholders, and a
restore into other paths rewrites them in the restored text files. Binary files keep
theirs: in the .so files (no RPATH) they are only the build's source paths, for debuggers.

    python interface_paths.py hash DIR PREFIX VENV REPO_ROOT
        one line per file below DIR (build/ aside), sorted: the sha256 of its content with
        the three paths as @PREFIX@, @VENV@, @REPO_ROOT@, then its path ("./msg/A.msg")
    python interface_paths.py relocate PREFIX PACKAGE VENV REPO_ROOT
        rewrite the paths that PREFIX/share/PACKAGE/.harness_ros-paths records (the prefix,
        venv and checkout the package was built with, one a line) to these, in the text files
        share/PACKAGE/.harness_ros-installed-files lists; then record these; print how many
        files changed
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

RECORD = ".harness_ros-paths"
# Characters that continue a path: a match must not be part of a longer name.
_NAME = rb"A-Za-z0-9._+-"


def substitute(mapping: dict[bytes, bytes]) -> Callable[[bytes], bytes]:
    """Replace each whole path of mapping by its value, the longest first, in one pass."""
    olds = sorted((old for old, new in mapping.items() if old != new), key=len, reverse=True)
    if not olds:
        return lambda data: data
    pattern = re.compile(
        rb"(?<![" + _NAME + rb"])(" + b"|".join(re.escape(old) for old in olds) + rb")(?![" + _NAME + rb"])"
    )
    return lambda data: pattern.sub(lambda match: mapping[match.group(1)], data)


def hash_sources(source: str, prefix: str, venv: str, repo_root: str) -> None:
    replace = substitute(
        {
            os.fsencode(prefix): b"@PREFIX@",
            os.fsencode(venv): b"@VENV@",
            os.fsencode(repo_root): b"@REPO_ROOT@",
        }
    )
    names: list[str] = []
    for folder, dirs, files in os.walk(source):
        rel = os.path.relpath(folder, source)
        if rel == ".":
            dirs[:] = [name for name in dirs if name != "build"]
        names += ["./" + os.path.normpath(Path(rel, name)) for name in files]
    for name in sorted(names, key=os.fsencode):
        data = replace(Path(source, name).read_bytes())
        print(hashlib.sha256(data).hexdigest(), name)


def relocate(prefix: str, package: str, venv: str, repo_root: str) -> None:
    share = Path(prefix, "share", package)
    record = share / RECORD
    try:
        old = record.read_bytes().split(b"\n")[:3]
    except OSError as err:
        sys.exit(f"cannot relocate {package}: {err}")
    if len(old) != 3 or not all(old):
        sys.exit(f"cannot relocate {package}: {record} does not name a prefix, a venv and a checkout")
    new = [os.fsencode(path) for path in (prefix, venv, repo_root)]
    mapping: dict[bytes, bytes] = {}
    for before, after in zip(old, new, strict=True):
        mapping.setdefault(before, after)
    replace = substitute(mapping)
    rewritten = 0
    for line in (share / ".harness_ros-installed-files").read_bytes().splitlines():
        path = Path(prefix, os.fsdecode(line))
        if not line or path == record or path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        changed = replace(data)
        if changed != data:
            path.write_bytes(changed)
            rewritten += 1
    record.write_bytes(b"\n".join(new) + b"\n")
    print(rewritten)


def main(argv: list[str]) -> None:
    if len(argv) == 5 and argv[0] == "hash":
        hash_sources(*argv[1:])
    elif len(argv) == 5 and argv[0] == "relocate":
        relocate(*argv[1:])
    else:
        sys.exit(
            "usage: interface_paths.py hash DIR PREFIX VENV REPO_ROOT | relocate PREFIX PACKAGE VENV ROOT"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
