"""``evaluator.kind: checks``: verdicts from the deterministic checks alone, no model.

Every evaluated tool is judged by its check in ``evaluator.evidence`` (``pose_check``,
``arm_pose_check``, ``grasp_check``), which the gate applies before any evaluator is asked.
So this evaluator is asked only about a tool without one, and it fails closed: the
post-condition is unconfirmed, and the verdict says what to configure. It judges no task
goal (a task that claims success ends ``unverified``). For a robot whose evaluated tools all
have a check, and a model that takes no images (a local text-only model): nothing here
needs a camera or a vision model.
"""

from __future__ import annotations

from harness_ros.evaluation.contracts import Verdict, VerdictStatus
from harness_ros.observation.contracts import Observation

__all__ = ["CHECKS_KIND", "ChecksEvaluator"]

CHECKS_KIND = "checks"


class ChecksEvaluator:
    """The evaluator of ``evaluator.kind: checks`` (module docstring)."""

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        del post_condition, observation  # nothing here reads them: no model judges
        return Verdict(
            VerdictStatus.FAILURE,
            run_id,
            f"evaluator.kind 'checks' asks no model, and tool {tool!r} has no pose_check, "
            f"arm_pose_check or grasp_check in evaluator.evidence: its post-condition is unconfirmed",
        )
