"""``before_decision``: the step a robot tool's ledger gives to take before its first call."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.contracts import Focus, GuidancePoint, TaskView

__all__ = ["AheadFocus"]


@dataclass(frozen=True)
class AheadFocus:
    """The step to take first that a robot tool's ledger gives, as the last words before a
    decision: for the first tool, in the order they are offered, that the task has not
    called yet and whose ledger has one, until the task takes that step's first call.

    In the tool's description the step changed no first call of the 1.5B: every task of
    run G's memory-on arm drove to a surface first, and "move X from A over to B" drove
    to B; the lesson came into play only after the pick there had failed. One tool's
    step at a time: with pick_object's and place_object's both at the first decision,
    the 1.5B drove to the place's surface (two eval instructions of four, BENCHMARKS.md
    section 9)."""

    name: str = "ahead_focus"
    point: GuidancePoint = GuidancePoint.BEFORE_DECISION
    small_models_only: bool = True

    def run(self, view: TaskView) -> Focus | None:
        if view.ledger is None:
            return None
        physical = view.robot_steps()
        called = {s.tool for s in physical}
        last = physical[-1].tool if physical else None
        for name in view.registry.names():
            if name in called or not view.physical(name):
                continue
            steps = view.steps_ahead(name)
            if not steps:
                continue
            if last == steps[0].first_call:
                return None  # taken: what comes next is the tool itself
            lines = list(dict.fromkeys(found.text for found in steps))
            return Focus(self.name, "\n".join(["From your experience in earlier tasks:", *lines]))
        return None
