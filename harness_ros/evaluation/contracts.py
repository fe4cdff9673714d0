"""Evaluation contracts: the verdict the harness gets after an evaluated tool.

Fail closed: anything that is not a well-formed verdict becomes ``failure``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from harness_ros.observation.contracts import Observation

__all__ = ["EvaluatorProtocol", "Verdict", "VerdictStatus", "parse_verdict"]


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


def parse_verdict(raw: Any, *, run_id: str, allow_process: bool) -> Verdict:
    """Validate an evaluator's raw answer (a dict); malformed answers fail closed."""
    if not isinstance(raw, dict):
        return Verdict(VerdictStatus.FAILURE, run_id, "malformed verdict: not an object")
    try:
        status = VerdictStatus(str(raw.get("status", "")).strip().lower())
    except ValueError:
        return Verdict(VerdictStatus.FAILURE, run_id, f"malformed verdict: status {raw.get('status')!r}")
    evidence = str(raw.get("evidence") or "")[:1000]
    reason = raw.get("failure_reason")
    if status is VerdictStatus.PROCESS and not allow_process:
        return Verdict(VerdictStatus.FAILURE, run_id, "malformed verdict: 'process' for a non-segment tool")
    if status is VerdictStatus.FAILURE:
        if not isinstance(reason, str) or not reason.strip():
            return Verdict(
                VerdictStatus.FAILURE, run_id, "malformed verdict: failure without a reason", evidence
            )
        return Verdict(status, run_id, reason.strip()[:500], evidence)
    return Verdict(status, run_id, None, evidence)
