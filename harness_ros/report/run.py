"""Read one task's run folder (written by ``harness_ros.harness.runlog``) for the report.

Only ``events.jsonl`` is required. Everything else is optional: a task that crashed
has no ``report.md``, a run without observations has no images, an interrupted
write leaves a torn last line (skipped and counted, never fatal). Events are kept
as plain dicts with their type as a string, so an event type added later is
carried along instead of breaking the report.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_ros.errors import ReportError

__all__ = ["EVENTS_FILE", "ReportError", "RunEvent", "RunRecord", "TurnRecord", "load_run"]

EVENTS_FILE = "events.jsonl"
REPORT_MD = "report.md"

_REPORT_TITLE = re.compile(r"^# Task (?P<task>.+): (?P<status>\w+)\s*$")


@dataclass(frozen=True)
class RunEvent:
    type: str
    task_id: str
    turn: int | None
    time: float
    data: dict[str, Any]


@dataclass(frozen=True)
class TurnRecord:
    number: int
    events: tuple[RunEvent, ...]

    def of(self, *types: str) -> list[RunEvent]:
        return [event for event in self.events if event.type in types]


@dataclass(frozen=True)
class RunRecord:
    """One task's run, grouped for rendering."""

    folder: Path
    task_id: str
    started: dict[str, Any] | None
    turns: tuple[TurnRecord, ...]
    loose: tuple[RunEvent, ...]
    """Events outside any turn other than start and end (e.g. a rejection)."""
    consolidation: dict[str, Any] | None
    done: dict[str, Any] | None
    report_md: str | None
    first_time: float | None
    last_time: float | None
    skipped_lines: int

    @property
    def status(self) -> str:
        if self.done is not None and self.done.get("status"):
            return str(self.done["status"])
        if self.report_md is not None:
            match = _REPORT_TITLE.match(self.report_md.splitlines()[0] if self.report_md else "")
            if match:
                return match.group("status")
        return "unfinished"

    @property
    def outcome(self) -> str | None:
        """The ``done`` event's outcome (succeeded, failed, unverified), or None when the run
        has none (unfinished, or written before outcomes existed)."""
        outcome = self.done.get("outcome") if self.done is not None else None
        return outcome if outcome in ("succeeded", "failed", "unverified") else None

    @property
    def instruction(self) -> str:
        if self.started is not None and self.started.get("instruction"):
            return str(self.started["instruction"])
        return ""

    @property
    def model(self) -> str:
        return str(self.started.get("model") or "") if self.started is not None else ""

    @property
    def duration_s(self) -> float | None:
        elapsed = self.done.get("elapsed_s") if self.done is not None else None
        if isinstance(elapsed, int | float) and not isinstance(elapsed, bool):
            number = _finite_time(elapsed)
            return number if number or elapsed == 0 else None
        if self.first_time is not None and self.last_time is not None:
            return max(self.last_time - self.first_time, 0.0)
        return None

    @property
    def turn_count(self) -> int:
        turns = self.done.get("turns") if self.done is not None else None
        if isinstance(turns, int) and not isinstance(turns, bool):
            return turns
        return len(self.turns)


def _finite_time(value: Any) -> float:
    """An event time, or 0.0 (unknown) for a non-number, NaN, Infinity or a huge integer."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        number = float(value)
    except OverflowError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def _parse_line(line: str) -> RunEvent | None:
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return None
    turn = raw.get("turn")
    when = raw.get("time")
    data = raw.get("data")
    return RunEvent(
        type=raw["type"],
        task_id=str(raw.get("task_id") or ""),
        turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
        time=_finite_time(when),
        data=data if isinstance(data, dict) else {},
    )


def _read_events(path: Path) -> tuple[list[RunEvent], int, str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        msg = f"cannot read {str(path)!r}: {err.strerror or err}"
        raise ReportError(msg) from None
    events: list[RunEvent] = []
    skipped = 0
    task_id = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        event = _parse_line(line)
        if event is None:
            skipped += 1
            continue
        events.append(event)
        task_id = task_id or event.task_id
    return events, skipped, task_id


def load_run(run_dir: Path) -> RunRecord:
    """Read ``run_dir``; raises ``ReportError`` naming the folder or the missing file."""
    folder = Path(run_dir)
    if not folder.is_dir():
        msg = f"run folder {str(folder)!r} does not exist or is not a folder"
        raise ReportError(msg)
    events_path = folder / EVENTS_FILE
    if not events_path.is_file():
        msg = f"run folder {str(folder)!r} has no {EVENTS_FILE!r}: not a harness run folder"
        raise ReportError(msg)
    events, skipped, task_id = _read_events(events_path)

    started: dict[str, Any] | None = None
    consolidation: dict[str, Any] | None = None
    done: dict[str, Any] | None = None
    loose: list[RunEvent] = []
    by_turn: dict[int, list[RunEvent]] = {}
    for event in events:
        if event.type == "task_started" and started is None:
            started = event.data
        elif event.type == "memory_consolidation":
            consolidation = event.data
        elif event.type == "done":
            done = event.data
        elif event.turn is not None:
            by_turn.setdefault(event.turn, []).append(event)
        else:
            loose.append(event)

    report_md: str | None = None
    try:
        report_md = (folder / REPORT_MD).read_text(encoding="utf-8", errors="replace")
    except OSError:
        report_md = None  # optional: a task that crashed before its end has none

    times = [event.time for event in events if event.time > 0]
    return RunRecord(
        folder=folder,
        task_id=task_id or folder.name,
        started=started,
        turns=tuple(TurnRecord(number, tuple(items)) for number, items in sorted(by_turn.items())),
        loose=tuple(loose),
        consolidation=consolidation,
        done=done,
        report_md=report_md,
        first_time=min(times) if times else None,
        last_time=max(times) if times else None,
        skipped_lines=skipped,
    )
