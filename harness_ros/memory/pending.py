"""Failed consolidations kept for a retry: ``pending/*.json``.

A completed task whose consolidation failed (the model timed out, a reply was not JSON)
keeps its trajectory here (its JSON, ``Trajectory.to_json``: this folder is where the typed
trajectory becomes a file and is read back, ``Trajectory.from_json`` naming the file); the
next completed task retries them, oldest first, and stops
at the first that fails again. A trajectory that failed ``max_attempts`` times, or is
beyond the ``limit`` newest, is dropped with an audit record: never silently.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.storage import atomic_write_bytes
from harness_ros.memory.store import MemoryStore
from harness_ros.trajectory import Trajectory

__all__ = ["PendingRetries"]

logger = logging.getLogger(__name__)

Consolidate = Callable[[Trajectory, list[str]], object]
"""Consolidate one kept trajectory with its allowed tools; raises on failure."""


class PendingRetries:
    def __init__(self, store: MemoryStore, *, limit: int, max_attempts: int) -> None:
        if limit < 1 or max_attempts < 1:
            raise MemoryStoreError("pending_limit and max_pending_attempts must be at least 1")
        self.store = store
        self.limit = limit
        self.max_attempts = max_attempts

    @property
    def folder(self) -> Path:
        return self.store.pending_dir

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []

    def count(self) -> int:
        return len(self.files())

    def save(self, trajectory: Trajectory, allowed: list[str], error: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', trajectory.task_id)}.json"
        record: dict[str, Any] = {
            "trajectory": trajectory.to_json(),
            "allowed_tools": allowed,
            "attempts": 1,
            "last_error": error,
        }
        atomic_write_bytes(self.folder / name, json.dumps(record, ensure_ascii=False).encode("utf-8"))
        files = self.files()
        for oldest in files[: max(0, len(files) - self.limit)]:
            self.drop(oldest, f"more than {self.limit} pending consolidations")

    def drop(self, path: Path, why: str) -> None:
        logger.warning("Dropping pending consolidation %s: %s", path.name, why)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self.store.audit([{"event": "pending_dropped", "file": path.name, "reason": why}])

    def retry(self, consolidate: Consolidate) -> tuple[int, int]:
        """Retry kept trajectories, oldest first, stopping at the first failure; returns
        (retried, still pending)."""
        retried = 0
        for path in self.files():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                trajectory = record["trajectory"]
                allowed = list(record.get("allowed_tools") or [])
            except (OSError, ValueError, KeyError, TypeError) as err:
                if not path.exists():
                    continue  # another process retried it meanwhile
                self.drop(path, f"unreadable: {err}")
                continue
            try:
                # A malformed kept trajectory counts as a failed attempt, as a failed consolidation.
                consolidate(Trajectory.from_json(trajectory, source=str(path)), allowed)
            except Exception as err:  # noqa: BLE001 - a retry failure is reported, never raised
                attempts = int(record.get("attempts", 1)) + 1
                if attempts >= self.max_attempts:
                    self.drop(path, f"failed {attempts} times, last: {err}")
                else:
                    record.update(attempts=attempts, last_error=f"{type(err).__name__}: {err}")
                    with contextlib.suppress(MemoryStoreError):
                        atomic_write_bytes(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            retried += 1
        return retried, self.count()
