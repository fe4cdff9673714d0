"""Evaluation contracts: the verdict the harness gets after an evaluated tool.

Fail closed: anything that is not a well-formed verdict becomes ``failure``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from harness_ros.observation.contracts import Observation

__all__ = ["EvaluatorProtocol", "TaskEvaluatorProtocol", "Verdict", "VerdictStatus", "parse_verdict"]


class VerdictStatus(str, Enum):
    PROCESS = "process"
    SUCCESS = "success"
    FAILURE = "failure"


@dataclass(frozen=True)
class Verdict:
    status: VerdictStatus
    run_id: str
    failure_reason: str | None = None
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "run_id": self.run_id,
            "failure_reason": self.failure_reason,
            "evidence": self.evidence,
        }


class EvaluatorProtocol(Protocol):
    def evaluate(
        self, *, tool: str, run_id: str, post_condition: str, observation: Observation
    ) -> Verdict: ...


@runtime_checkable
class TaskEvaluatorProtocol(Protocol):
    """An evaluator that can also judge a whole task's goal (optional, next to ``evaluate``).

    ``goal`` is the instruction, ``revisions`` the operator's later revisions in order
    (the newest wins). Returns None when it cannot judge this goal (the outcome is then
    ``unverified``), else a verdict: ``success`` when the goal holds, ``failure`` with the
    reason when it does not. ``run_id`` is the task id.
    """

    def evaluate_task(
        self, *, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
    ) -> Verdict | None: ...


def parse_verdict(raw: Any, *, run_id: str, allow_process: bool) -> Verdict:
    """Validate an evaluator's raw answer (a dict); malformed answers fail closed.

    Malformed: not an object; a status that is not one of the three strings; evidence or
    failure_reason that is present but not a string; a verdict that contradicts itself
    (``success`` or ``process`` with a failure_reason, ``failure`` without one). The
    run_id is always the one asked about.
    """
    if not isinstance(raw, dict):
        return _malformed(run_id, "not an object")
    status_raw = raw.get("status")
    if not isinstance(status_raw, str):
        return _malformed(run_id, f"status must be a string, got {type(status_raw).__name__}")
    try:
        status = VerdictStatus(status_raw.strip().lower())
    except ValueError:
        return _malformed(run_id, f"status {status_raw!r}")
    evidence_raw = raw.get("evidence")
    if evidence_raw is not None and not isinstance(evidence_raw, str):
        return _malformed(run_id, f"evidence must be a string, got {type(evidence_raw).__name__}")
    evidence = (evidence_raw or "")[:1000]
    reason = raw.get("failure_reason")
    if reason is not None and not isinstance(reason, str):
        return _malformed(run_id, f"failure_reason must be a string, got {type(reason).__name__}", evidence)
    if status is VerdictStatus.PROCESS and not allow_process:
        return _malformed(run_id, "'process' for a non-segment tool", evidence)
    if status is VerdictStatus.FAILURE:
        if reason is None or not reason.strip():
            return _malformed(run_id, "failure without a reason", evidence)
        return Verdict(status, run_id, reason.strip()[:500], evidence)
    if reason is not None and reason.strip():
        # A success (or progress) that also names what went wrong contradicts itself.
        return _malformed(
            run_id, f"{status.value!r} with a failure_reason ({reason.strip()[:200]!r})", evidence
        )
    return Verdict(status, run_id, None, evidence)


def _malformed(run_id: str, why: str, evidence: str = "") -> Verdict:
    return Verdict(VerdictStatus.FAILURE, run_id, f"malformed verdict: {why}", evidence)
