"""``before_decision``: after a robot call refused for extra arguments, the call without them."""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness_ros.harness.guidance.common import FOCUS_MAX_SINCE, since_line
from harness_ros.harness.guidance.contracts import Focus, GuidancePoint, TaskView
from harness_ros.model.contracts import ToolCall

__all__ = ["RefusedFocus"]


@dataclass(frozen=True)
class RefusedFocus:
    """After a robot call refused only for arguments its tool does not take, that call
    without them, as a call, as the last words before a decision, until that tool runs, a
    robot call since fails, or more than ``FOCUS_MAX_SINCE`` robot calls ran since.

    Eval run M, episode 0: after the pick the 1.5B called place_object with the pick's
    ``held_object_id``; answered with the call without it, it ended the task as failed,
    and held once, it ended it again. The 1.5B copies a call written as JSON at the end
    of its prompt (the held call's answer, run J). Run N: with this note it drove to the
    kitchen table first; the note ended with that drive, and the 1.5B gave up there."""

    name: str = "refused_focus"
    point: GuidancePoint = GuidancePoint.BEFORE_DECISION
    small_models_only: bool = True

    def run(self, view: TaskView) -> Focus | None:
        physical = view.robot_steps(refused=True)
        at = next((i for i in range(len(physical) - 1, -1, -1) if physical[i].refused), None)
        if at is None or physical[at].refusal != "invalid_arguments":
            return None
        refused, since = physical[at], physical[at + 1 :]
        if any(s.tool == refused.tool for s in since) or len(since) > FOCUS_MAX_SINCE:
            return None
        if since and since[-1].failed:
            return None  # the failure note is about that one
        kept = view.registry.valid_without_extras(refused.tool, refused.arguments)
        if kept is None:
            return None
        extra = [name for name in refused.arguments if name not in kept]
        valid = ToolCall("refused", refused.tool, json.dumps(kept, default=str), kept)
        if view.check(valid) is not None:
            return None
        lines = [
            f"Your last {refused.tool} call did not run (the robot did nothing): {refused.tool} takes "
            f"no {', '.join(extra)}."
        ]
        if since:
            lines.append(since_line(since))
        lines.append(f"The call without {'it' if len(extra) == 1 else 'them'}, not run yet:")
        lines.append(json.dumps({"name": refused.tool, "arguments": kept}, ensure_ascii=False, default=str))
        return Focus(self.name, "\n".join(lines))
