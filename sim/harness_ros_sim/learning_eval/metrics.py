"""Metrics from what a run left behind: its events (``events.jsonl``) and model records.

Definitions (the same for both arms, and what the tests recount):

- a failed call is a ``tool_result`` event whose result envelope is not
  ``success: true`` (a tool failure, an evaluator's failure verdict, a blocked or
  malformed call, a refused second call in one turn); a call held by a step from its
  tool's ledger (refusal ``held_by_experience``: the robot did nothing), or a
  ``finish_task`` giving up held once (``held_finish``: the last robot call was refused
  for its arguments or succeeded), is
  counted on its own, as held, neither a call nor a failure;
- turns are the ``turn`` events;
- decision tokens are the summed ``usage`` of the ``model_response`` events;
- the outcome is the ``done`` event's ``outcome`` (succeeded, failed, unverified), counted
  next to the ground truth: it is contradicted when it says succeeded and the goal is
  not met, or failed and it is;
- support tokens are the other model calls (consolidate, summarize, evaluate,
  compact) from the node's ``model.record_file`` lines, by purpose.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness_ros.errors import HarnessError
from harness_ros.trajectory import ToolResult
from harness_ros_sim.learning_eval.contracts import Arm, ArmSummary, EpisodeMetrics, EpisodeResult, TokenCount

__all__ = [
    "HELD_BY_EXPERIENCE",
    "PICK_TOOL",
    "episode_metrics",
    "is_failed_result",
    "outcome_contradicted",
    "read_jsonl",
    "summarize_arm",
    "support_tokens",
]

PICK_TOOL = "pick_object"
HELD_BY_EXPERIENCE = "held_by_experience"
"""The refusal of a call held by its tool's ledger (``harness.calls.REFUSAL_KINDS``)."""
HELD_KINDS = frozenset({HELD_BY_EXPERIENCE, "held_finish"})
"""Refusals of a held call: by its ledger, or a finish_task giving up, held once."""


def read_jsonl(path: Path, *, skip: int = 0) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file after its first ``skip`` lines; [] when it is missing.
    A torn last line (a writer killed mid-line) is ignored; other bad lines are an error."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except OSError as err:
        raise HarnessError(f"cannot read {str(path)!r}: {err.strerror or err}") from None
    records = []
    for number, line in enumerate(lines[skip:], start=skip + 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise HarnessError(f"{str(path)!r} line {number} is not JSON") from None
        if isinstance(value, dict):
            records.append(value)
    return records


def is_failed_result(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is a tool_result whose envelope is not ``success: true``."""
    if event.get("type") != "tool_result":
        return False
    data = event.get("data")
    return not ToolResult.from_json(data.get("result") if isinstance(data, Mapping) else None).succeeded


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _usage(data: Mapping[str, Any]) -> TokenCount:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return TokenCount()
    return TokenCount(
        _int(usage.get("prompt_tokens")),
        _int(usage.get("completion_tokens")),
        _int(usage.get("cached_prompt_tokens")),
    )


def episode_metrics(events: Iterable[Mapping[str, Any]]) -> EpisodeMetrics:
    """The metrics of one task from its event dicts (as in events.jsonl or on ``~/events``)."""
    calls: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    turns = 0
    tokens = TokenCount()
    status = "no done event"
    outcome = "none"
    ended_by = "none"
    elapsed = 0.0
    written = 0
    refused: Counter[str] = Counter()
    held: Counter[str] = Counter()
    for event in events:
        kind = event.get("type")
        data = event.get("data") or {}
        if kind == "turn":
            turns += 1
        elif kind == "model_response":
            tokens = tokens + _usage(data)
        elif kind == "tool_result":
            tool = str(data.get("tool") or "?")
            if data.get("refusal") in HELD_KINDS:
                held[tool] += 1
                continue
            calls[tool] += 1
            if is_failed_result(event):
                failed[tool] += 1
        elif kind == "done":
            status = str(data.get("status") or "unknown")
            outcome = str(data.get("outcome") or "none")
            elapsed = float(data.get("elapsed_s") or 0.0)
            ended_by = _ended_by(data)
        elif kind == "memory_consolidation":
            written += _int(data.get("memory_written")) + _int(data.get("tool_experience_written"))
            decisions = data.get("decisions")
            for decision in decisions if isinstance(decisions, list) else []:
                if isinstance(decision, Mapping) and decision.get("accepted") is False:
                    refused[str(decision.get("rule") or "unknown")] += 1
    return EpisodeMetrics(
        status=status,
        turns=turns,
        tool_calls=dict(calls),
        failed_calls=dict(failed),
        decision_tokens=tokens,
        task_elapsed_s=elapsed,
        outcome=outcome,
        ended_by=ended_by,
        lessons_written=written,
        lessons_refused=dict(refused),
        held_calls=dict(held),
    )


_LIMITS = (
    ("wall-time", "wall time"),
    ("plain text", "text replies"),
    ("malformed", "malformed replies"),
    ("turn", "turns"),
)


def _ended_by(done: Mapping[str, Any]) -> str:
    """How a task ended, from its done event: what ended it, not how it went."""
    finished_by = done.get("finished_by")
    if finished_by:
        return "operator question" if finished_by == "operator_question" else str(finished_by)
    status = str(done.get("status") or "unknown")
    if status == "cancelled":
        return "cancelled"
    reason = str(done.get("reason") or "")
    for needle, name in _LIMITS:
        if needle in reason:
            return f"limit: {name}"
    return status


def support_tokens(records: Iterable[Mapping[str, Any]]) -> dict[str, TokenCount]:
    """Tokens of the model calls other than decisions, by purpose, from model record lines."""
    totals: dict[str, TokenCount] = {}
    for record in records:
        purpose = str((record.get("request") or {}).get("purpose") or "unknown")
        if purpose == "decide":
            continue
        totals[purpose] = totals.get(purpose, TokenCount()) + _usage(record.get("reply") or {})
    return totals


def summarize_arm(arm: Arm, results: Sequence[EpisodeResult]) -> ArmSummary:
    """Totals over one arm's episodes (in episode order)."""
    mine = sorted((r for r in results if r.arm is arm), key=lambda r: r.scenario.episode)
    failed: Counter[str] = Counter()
    decision = TokenCount()
    memory = TokenCount()
    for result in mine:
        failed.update(result.metrics.failed_calls)
        decision = decision + result.metrics.decision_tokens
        memory = memory + result.memory_tokens
    return ArmSummary(
        arm=arm,
        episodes=len(mine),
        successes=sum(r.success for r in mine),
        completed=sum(r.metrics.status == "completed" for r in mine),
        failed_calls=dict(failed),
        turns=sum(r.metrics.turns for r in mine),
        decision_tokens=decision,
        memory_tokens=memory,
        wall_s=sum(r.wall_s for r in mine),
        pick_failures=tuple(r.metrics.failed_calls.get(PICK_TOOL, 0) for r in mine),
        outcomes=dict(Counter(r.metrics.outcome for r in mine)),
        outcome_wrong=sum(outcome_contradicted(r) for r in mine),
        ended_by=dict(Counter(r.metrics.ended_by for r in mine)),
        lessons_written=sum(r.metrics.lessons_written for r in mine),
        lessons_refused=dict(sum((Counter(r.metrics.lessons_refused) for r in mine), Counter())),
        held_calls=dict(sum((Counter(r.metrics.held_calls) for r in mine), Counter())),
    )


def outcome_contradicted(result: EpisodeResult) -> bool:
    """Whether the ground truth contradicts the harness's outcome for this episode."""
    outcome = result.metrics.outcome
    return (outcome == "succeeded" and not result.success) or (outcome == "failed" and result.success)
