"""The expected-entries file of a consolidation replay (the CI golden file).

YAML or JSON::

    tasks:
      <task_id>:
        accepted:
          - {kind: ..., tool: pick_object, outcome: failure, text: "..."}
          - {kind: ..., section: General Lessons, text: "..."}

A task listed with ``skipped: <status>`` must not be consolidated. Entries compare
as a set of (kind, section|tool, outcome, text), whitespace-normalised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness_ros.errors import ConfigError
from harness_ros.replay.contracts import ExpectedEntry, TaskDiff, TaskOutcome
from harness_ros.yaml_safe import safe_load

__all__ = [
    "Expectations",
    "compare",
    "expectations_from_outcomes",
    "format_diffs",
    "load_expect",
    "write_expect",
]

Expectations = dict[str, dict[str, Any]]
"""task_id -> {"accepted": [ExpectedEntry, ...]} or {"skipped": status}."""


def load_expect(path: str | Path) -> Expectations:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read expected file {str(path)!r}: {err.strerror}") from None
    try:
        raw = json.loads(text) if path.suffix == ".json" else safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"expected file {str(path)!r} is not valid YAML/JSON: {err}") from None
    tasks = raw.get("tasks") if isinstance(raw, dict) else None
    if not isinstance(tasks, dict):
        raise ConfigError(f"expected file {str(path)!r}: needs a 'tasks' mapping of task id -> entries")
    out: Expectations = {}
    for task_id, spec in tasks.items():
        where = f"expected file {str(path)!r}: tasks.{task_id}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: must be a mapping with 'accepted' or 'skipped'")
        if "skipped" in spec:
            out[str(task_id)] = {"skipped": str(spec["skipped"])}
            continue
        entries = spec.get("accepted") or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ConfigError(f"{where}.accepted: must be a list of entries")
        for number, entry in enumerate(entries):
            if not entry.get("text") or not (entry.get("section") or entry.get("tool")):
                raise ConfigError(f"{where}.accepted[{number}]: needs 'text' and 'section' or 'tool'")
        out[str(task_id)] = {"accepted": sorted(ExpectedEntry.from_dict(e) for e in entries)}
    return out


def expectations_from_outcomes(outcomes: Sequence[TaskOutcome]) -> Expectations:
    out: Expectations = {}
    for outcome in outcomes:
        if outcome.skipped is not None:
            out[outcome.task_id] = {"skipped": str(outcome.status)}
        else:
            out[outcome.task_id] = {"accepted": outcome.accepted}
    return out


def write_expect(path: str | Path, outcomes: Sequence[TaskOutcome], *, bag: str = "") -> None:
    path = Path(path)
    tasks: dict[str, Any] = {}
    for task_id, spec in expectations_from_outcomes(outcomes).items():
        if "skipped" in spec:
            tasks[task_id] = {"skipped": spec["skipped"]}
        else:
            tasks[task_id] = {"accepted": [entry.to_dict() for entry in spec["accepted"]]}
    document = {"bag": bag, "tasks": tasks}
    if path.suffix == ".json":
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    else:
        header = "# Expected consolidation of a recorded bag (harness-ros replay --write-expect).\n"
        text = header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot write expected file {str(path)!r}: {err.strerror}") from None


def _rejections(outcome: TaskOutcome) -> dict[ExpectedEntry, str]:
    return {
        ExpectedEntry.from_dict(d): str(d.get("rule") or "rejected")
        for d in outcome.decisions
        if not d.get("accepted")
    }


def compare(expected: Expectations, outcomes: Sequence[TaskOutcome]) -> list[TaskDiff]:
    """Per-task differences (empty list: the replay matches)."""
    diffs: list[TaskDiff] = []
    produced = {outcome.task_id: outcome for outcome in outcomes}
    for task_id, spec in expected.items():
        outcome = produced.get(task_id)
        if outcome is None:
            diffs.append(TaskDiff(task_id, note="expected task is not in the recording"))
            continue
        if "skipped" in spec:
            if outcome.skipped is None:
                diffs.append(
                    TaskDiff(task_id, note=f"expected skipped ({spec['skipped']}), was consolidated")
                )
            continue
        if outcome.skipped is not None:
            diffs.append(TaskDiff(task_id, note=f"expected consolidation, was skipped: {outcome.skipped}"))
            continue
        want, got = set(spec["accepted"]), set(outcome.accepted)
        if want != got:
            rejected = _rejections(outcome)
            missing = tuple(sorted(want - got))
            diffs.append(
                TaskDiff(
                    task_id,
                    missing=missing,
                    unexpected=tuple(sorted(got - want)),
                    rejected_by={entry: rejected[entry] for entry in missing if entry in rejected},
                )
            )
    for task_id in produced:
        if task_id not in expected:
            diffs.append(TaskDiff(task_id, note="task is not in the expected file"))
    return diffs


def format_diffs(diffs: Sequence[TaskDiff]) -> str:
    lines: list[str] = []
    for diff in diffs:
        lines.append(f"task {diff.task_id}:")
        if diff.note:
            lines.append(f"  ! {diff.note}")
        for entry in diff.missing:
            why = diff.rejected_by.get(entry)
            tail = f"  (proposed, rejected by rule {why!r})" if why else "  (not proposed)"
            lines.append(f"  - expected: {entry.describe()}{tail}")
        for entry in diff.unexpected:
            lines.append(f"  + accepted: {entry.describe()}")
    return "\n".join(lines)
