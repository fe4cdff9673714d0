"""The grasp check: a grasp or a release judged from a gripper finger joint's measured position.

Real grippers confirm a grasp without vision: a close that stops short of closed has
something between the fingers (Stretch's ``joint_gripper_finger_left`` in stretch_driver's
``/joint_states``), and open fingers after a place have let the object go. With
``grasp_check`` in a tool's ``evaluator.evidence`` entry the harness reads the finger joint
from a ``joint_states`` source after the tool ended and decides by numbers, asking no model:

- ``expect: holding``: confirmed when the joint is above ``holding_above`` (not fully
  closed) and, with ``open_above``, below it (not open);
- ``expect: empty``: confirmed when the joint is at or below ``holding_above`` (closed on
  nothing) or at or above ``open_above`` (open: released).

A missing reading, a stale one, one without the joint, or one measured before the tool
ended is never a confirmation: the verdict says which and how old. The reason names the
measured position and the thresholds.
"""

from __future__ import annotations

import math

from harness_ros.config import GraspCheckConfig
from harness_ros.evaluation.evidence import PoseCheck, StateReading, fresh_reading, measured_before_end

__all__ = ["check_grasp"]


def check_grasp(
    reading: StateReading | None,
    limits: GraspCheckConfig,
    *,
    since_end_s: float | None = None,
) -> PoseCheck:
    """Does the gripper hold something (``expect: holding``) or nothing (``empty``)?
    Fails closed on anything it cannot read.

    ``since_end_s`` is how long ago the tool ended: a reading older than that was measured
    before the grasp or release finished and is no evidence."""
    joint = limits.joint
    fresh = fresh_reading(
        reading, limits.source, missing=f"measured position of {joint!r}", stale="joint reading"
    )
    if isinstance(fresh, PoseCheck):
        return fresh
    reading = fresh
    before = measured_before_end(
        reading, since_end_s, what="the joint states", ended="the tool", unknown="what the gripper holds now"
    )
    if before is not None:
        return before
    position = dict(reading.joints).get(joint)
    if position is None:
        note = f" ({reading.note})" if reading.note else ""
        return PoseCheck(False, f"{reading.topic!r} gave no position of {joint!r}{note}")
    if not math.isfinite(position):
        return PoseCheck(False, f"the position of {joint!r} from {reading.topic!r} is not finite")
    closed = position <= limits.holding_above
    opened = limits.open_above is not None and position >= limits.open_above
    measured = f"{joint} at {position:.3f}"
    bounds = f"holding above {limits.holding_above:g}" + (
        f", open at or above {limits.open_above:g}" if limits.open_above is not None else ""
    )
    if limits.expect == "holding":
        if closed:
            return PoseCheck(
                False,
                f"not holding: {measured}, closed at or below {limits.holding_above:g} "
                f"(nothing between the fingers; {bounds})",
            )
        if opened:
            return PoseCheck(False, f"not holding: {measured}, the fingers are open ({bounds})")
        return PoseCheck(True, f"holding: {measured}, the fingers stopped short of closed ({bounds})")
    if closed:
        return PoseCheck(True, f"empty: {measured}, closed on nothing ({bounds})")
    if opened:
        return PoseCheck(True, f"empty: {measured}, the fingers are open: released ({bounds})")
    return PoseCheck(
        False, f"still holding: {measured}, the fingers stopped short of closed and are not open ({bounds})"
    )
