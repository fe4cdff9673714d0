"""Retention of what the harness writes without bound: run folders and recordings.

One rule for both: keep the newest ``keep`` entries of a family (by modification
time, then name), remove the rest, oldest first. Only real folders are removed,
never through a symlink, and only entries the harness names itself (run folders
hold an ``events.jsonl``; recordings are ``<path>`` and ``<path>_<stamp>``), so a
file an operator put beside them is never touched. The functions keep exactly
``keep`` (besides ``spare``, the entry just created); the config's ``0 = keep all``
is decided by the callers.
The audit log is rotated by FileMemory itself (``memory.audit_max_bytes``).
"""

from __future__ import annotations

import logging
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["prune_recordings", "prune_run_folders"]

logger = logging.getLogger(__name__)


def _prune(folders: list[Path], keep: int, what: str, *, spare: Path | None = None) -> list[Path]:
    dated: list[tuple[float, str, Path]] = []
    for folder in folders:
        try:
            info = folder.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and folder != spare:
            dated.append((info.st_mtime, folder.name, folder))
    dated.sort()
    removed: list[Path] = []
    for _, _, folder in dated[: max(0, len(dated) - keep)]:
        try:
            shutil.rmtree(folder)
        except OSError as err:
            logger.warning("cannot remove old %s %s: %s", what, folder, err.strerror or err)
            continue
        removed.append(folder)
    if removed:
        logger.info("removed %d old %s(s) (keeping the newest %d)", len(removed), what, keep)
    return removed


def _children(parent: Path, accept: Callable[[Path], bool]) -> list[Path]:
    try:
        return [child for child in parent.iterdir() if accept(child)]
    except OSError:
        return []


def prune_run_folders(runs_dir: Path, keep: int, *, spare: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep`` run folders (those holding an events.jsonl), and ``spare``."""
    return _prune(
        _children(runs_dir, lambda child: (child / "events.jsonl").is_file()), keep, "run folder", spare=spare
    )


def prune_recordings(path: Path, keep: int, *, spare: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep`` recordings ``path`` and ``path_<digits>``, and ``spare``."""
    family = re.compile(rf"^{re.escape(path.name)}(?:_\d+)?$")
    return _prune(
        _children(path.parent, lambda child: family.fullmatch(child.name) is not None),
        keep,
        "recording",
        spare=spare,
    )
