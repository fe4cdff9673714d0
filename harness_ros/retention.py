"""Retention of what the harness writes without bound: run folders and recordings.

One rule for both: keep the newest ``keep`` entries of a family (by modification
time, then name), remove the rest, oldest first. Only folders the harness recognises
as its own are removed, never through a symlink: each one it creates gets a marker
file (``RUN_MARKER`` in a run folder, ``RECORDING_MARKER`` in a recording), and a
recording must also hold nothing but what the recorder wrote (``metadata.yaml`` and
its storage files). Anything else with a matching name (a folder an operator put at
``record.path``, a recording from before the marker existed) is skipped with a log
line, never deleted. The functions keep exactly ``keep`` (besides ``spare``, the entry
just created); the config's ``0 = keep all`` is decided by the callers.
The audit log is rotated by FileMemory itself (``memory.audit_max_bytes``).
"""

from __future__ import annotations

import logging
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "RECORDING_MARKER",
    "RUN_MARKER",
    "mark_recording",
    "mark_run_folder",
    "prune_recordings",
    "prune_run_folders",
]

logger = logging.getLogger(__name__)

RUN_MARKER = ".harness_ros_run"
"""Written by the run log into every run folder it creates."""
RECORDING_MARKER = ".harness_ros_recording"
"""Written by the bag recorder into every recording folder it creates."""

_RECORDING_FILES = re.compile(r"^[^/]+\.(?:mcap|db3|db3-wal|db3-shm|db3-journal)$")
"""Storage files rosbag2 writers leave in a bag folder (mcap, sqlite3 and its sidecars)."""


def _mark(folder: Path, marker: str, what: str) -> None:
    try:
        (folder / marker).write_text(f"created by harness_ros: {what}\n", encoding="utf-8")
    except OSError as err:
        # Unmarked, the folder is only ever kept, never pruned: a warning, not a failure.
        logger.warning("cannot mark %s %s as the harness's own: %s", what, folder, err.strerror or err)


def mark_run_folder(folder: Path) -> None:
    _mark(folder, RUN_MARKER, "run folder")


def mark_recording(folder: Path) -> None:
    _mark(folder, RECORDING_MARKER, "recording")


def _is_marked(folder: Path, marker: str) -> bool:
    try:
        return stat.S_ISREG((folder / marker).lstat().st_mode)
    except OSError:
        return False


def _foreign_entry(folder: Path) -> str | None:
    """The first entry of a marked recording the recorder would not have written, if any."""
    try:
        entries = list(folder.iterdir())
    except OSError as err:
        return f"cannot list it ({err.strerror or err})"
    for entry in entries:
        try:
            regular = stat.S_ISREG(entry.lstat().st_mode)
        except OSError:
            regular = False
        if not regular:
            return f"{entry.name!r} (not a plain file)"
        known = entry.name in (RECORDING_MARKER, "metadata.yaml")
        if not known and not _RECORDING_FILES.fullmatch(entry.name):
            return repr(entry.name)
    return None


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


def _own_run_folder(child: Path) -> bool:
    if not (child / "events.jsonl").is_file():
        return False
    if not _is_marked(child, RUN_MARKER):
        logger.info("retention: keeping %s: it holds no %s, the harness did not create it", child, RUN_MARKER)
        return False
    return True


def prune_run_folders(runs_dir: Path, keep: int, *, spare: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep`` run folders the harness created, and ``spare``."""
    return _prune(_children(runs_dir, _own_run_folder), keep, "run folder", spare=spare)


def prune_recordings(path: Path, keep: int, *, spare: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep`` recordings ``path`` and ``path_<digits>`` the
    recorder wrote, and ``spare``; anything else of that name is kept (and logged)."""
    family = re.compile(rf"^{re.escape(path.name)}(?:_\d+)?$")

    def own(child: Path) -> bool:
        if family.fullmatch(child.name) is None:
            return False
        try:
            if not stat.S_ISDIR(child.lstat().st_mode):
                return False
        except OSError:
            return False
        if not _is_marked(child, RECORDING_MARKER):
            logger.warning(
                "retention: not removing %s: it holds no %s, so it is not a recording harness_ros wrote",
                child,
                RECORDING_MARKER,
            )
            return False
        foreign = _foreign_entry(child)
        if foreign is not None:
            logger.warning(
                "retention: not removing %s: it holds %s, which the recorder did not write", child, foreign
            )
            return False
        return True

    return _prune(_children(path.parent, own), keep, "recording", spare=spare)
