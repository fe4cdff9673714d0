"""How guidance writes a call, the calls since one, and which failure is still open."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness_ros.trajectory import TrajectoryStep
from harness_ros.trajectory.contracts import note_outcome
from harness_ros.trajectory.reasons import failure_reason

__all__ = [
    "FOCUS_MAX_SINCE",
    "call_of",
    "call_text",
    "failure_clause",
    "open_failure",
    "same_call_on_the_same_ids",
    "since_line",
]

FOCUS_MAX_SINCE = 3
"""Robot calls after a failure that the failure note still follows (a fix, not a new plan)."""


def call_of(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool} {json.dumps(dict(arguments), ensure_ascii=False, default=str)}" if arguments else tool


def call_text(step: TrajectoryStep) -> str:
    """``tool {"arg": value}``: the ids to act on next stand in the note (the 1.5B drove to
    the object, not back to its surface, only with ``red_cup`` named there)."""
    return call_of(step.tool, step.arguments)


def since_line(since: Sequence[TrajectoryStep]) -> str:
    """``Since then: <call> failed; <call> succeeded.``: the robot calls made since a note's call."""
    ran = [f"{call_text(s)} {'failed' if s.failed else 'succeeded'}" for s in since]
    return "Since then: " + "; ".join(ran) + "."


def failure_clause(step: TrajectoryStep) -> str:
    """How a failed step failed: its result's reason, or the post-condition that failed."""
    if step.result.success is False:
        return note_outcome(step.result)
    return f"failed its post-condition: {failure_reason(step) or 'no reason given'}"


def open_failure(physical: Sequence[TrajectoryStep]) -> int | None:
    """The index of the latest failed robot call in ``physical`` (robot calls that ran) that
    has not run again on the same ids since, with at most ``FOCUS_MAX_SINCE`` successful calls
    since; None when there is none. A failed call whose own fix failed and was then fixed is
    still open: eval run R, episode 3, the place on the office shelf failed from the doorway,
    the drive to the shelf was blocked, and once the 1.5B had reached the shelf through the
    office (the drive run again, so that note ended), no note said the place was left, and it
    gave up there with the cup in the gripper."""
    for at in range(len(physical) - 1, -1, -1):
        step, since = physical[at], physical[at + 1 :]
        if sum(not s.failed for s in since) > FOCUS_MAX_SINCE:
            return None  # an earlier failure has at least as many calls since
        if step.failed and not any(same_call_on_the_same_ids(later, step) for later in since):
            return at
    return None


def same_call_on_the_same_ids(later: TrajectoryStep, failed: TrajectoryStep) -> bool:
    """Whether ``later`` runs the failed call's tool on the same ids: its text arguments equal
    (numbers, such as a standoff, may change). Eval run Q, episode 3: after the drive to the
    office shelf was blocked, the drive to the doorway ended the failure note, and the 1.5B,
    at the doorway with the cup in the gripper, gave up; the skill's "then navigate_to the
    target" was the step left."""
    if later.tool != failed.tool:
        return False

    def ids(arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in arguments.items() if isinstance(value, str)}

    return ids(later.arguments) == ids(failed.arguments)
