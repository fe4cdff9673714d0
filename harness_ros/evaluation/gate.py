"""The evaluation gate: the harness's single entry to an evaluator after a tool ran.

It applies the rules no evaluator may relax: a ``run_id`` is required, ``process``
is accepted only for segment tools and only ``max_segments`` times in a row per
``run_id``, and anything malformed or raised becomes a ``failure`` verdict. At a task's
end it also asks an evaluator that can judge whole goals (``evaluate_task``) whether
the goal holds, under the same rules (``process`` is never a task verdict).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from harness_ros.evaluation.contracts import EvaluatorProtocol, Verdict, VerdictStatus, parse_verdict
from harness_ros.observation.contracts import Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = ["EvaluationGate"]

logger = logging.getLogger(__name__)


class EvaluationGate:
    """Validates every verdict fail-closed and bounds consecutive ``process`` verdicts."""

    def __init__(self, evaluator: EvaluatorProtocol, *, max_segments: int) -> None:
        if max_segments < 1:
            raise ValueError(f"max_segments must be >= 1, got {max_segments!r}")
        self._evaluator = evaluator
        self._max_segments = max_segments
        self._segments: dict[str, int] = {}
        self._lock = threading.Lock()

    def judge(self, spec: ToolSpec, run_id: str, observation: Observation) -> Verdict:
        run_id = run_id.strip() if isinstance(run_id, str) else ""
        if not run_id:
            return Verdict(
                VerdictStatus.FAILURE, "", f"tool {spec.name!r} returned no run_id, so it cannot be evaluated"
            )
        post_condition = (spec.post_condition or "").strip()
        if not post_condition:
            return Verdict(
                VerdictStatus.FAILURE, run_id, f"tool {spec.name!r} has no post-condition to check"
            )
        try:
            raw = self._evaluator.evaluate(
                tool=spec.name, run_id=run_id, post_condition=post_condition, observation=observation
            )
        except Exception as err:  # an evaluator fault is a failed check, not a crash
            logger.exception("evaluator raised for tool %r run %r", spec.name, run_id)
            return self._settle(
                Verdict(VerdictStatus.FAILURE, run_id, f"evaluator raised {type(err).__name__}")
            )
        # Re-validate whatever came back: the segment rule and the run_id are the gate's.
        payload = raw.to_dict() if isinstance(raw, Verdict) else raw
        verdict = parse_verdict(payload, run_id=run_id, allow_process=spec.segment)
        return self._settle(verdict)

    @property
    def judges_tasks(self) -> bool:
        """Whether the evaluator can be asked about a whole task's goal."""
        return callable(getattr(self._evaluator, "evaluate_task", None))

    def judge_task(
        self, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
    ) -> Verdict | None:
        """The goal's verdict, or None when the evaluator cannot judge it (no task check,
        or it says so). Anything malformed or raised is a failure verdict (fail closed)."""
        evaluate_task = getattr(self._evaluator, "evaluate_task", None)
        if not callable(evaluate_task):
            return None
        try:
            raw = evaluate_task(goal=goal, revisions=tuple(revisions), run_id=run_id, observation=observation)
        except Exception as err:  # an evaluator fault is a failed check, not a crash
            logger.exception("evaluator raised judging the goal of task %r", run_id)
            return Verdict(VerdictStatus.FAILURE, run_id, f"evaluator raised {type(err).__name__}")
        if raw is None:
            return None
        payload = raw.to_dict() if isinstance(raw, Verdict) else raw
        return parse_verdict(payload, run_id=run_id, allow_process=False)

    def reset(self, run_id: str | None = None) -> None:
        """Forget segment counts (of one run, or all at task end)."""
        with self._lock:
            if run_id is None:
                self._segments.clear()
            else:
                self._segments.pop(run_id, None)

    def _settle(self, verdict: Verdict) -> Verdict:
        with self._lock:
            if verdict.status is not VerdictStatus.PROCESS:
                self._segments.pop(verdict.run_id, None)
                return verdict
            count = self._segments.get(verdict.run_id, 0) + 1
            if count > self._max_segments:
                self._segments.pop(verdict.run_id, None)
                reason = f"segment limit reached ({self._max_segments} 'process' verdicts in a row)"
                return Verdict(VerdictStatus.FAILURE, verdict.run_id, reason, verdict.evidence)
            self._segments[verdict.run_id] = count
            return verdict
