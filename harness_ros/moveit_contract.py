"""MoveIt 2's MoveGroup as the config and the tools both read it: the interface names,
the joint goal builder and the constant frames of a binding's position constraints.

A leaf of the foundation layer (standard library and ``validators`` only), so the config
can refuse a MoveGroup tool whose target frame has no ``safety.arm_workspaces`` entry at
load, and the binding can offer the ``joint_positions_to_constraints`` conversion,
without either importing ``harness_ros.tools.moveit_goal`` (which reads whole goals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness_ros.validators import parse_path

__all__ = [
    "GOAL_JOINT_TOLERANCE_RAD",
    "JOINT_CONSTRAINT",
    "MOVE_GROUP",
    "joint_positions_to_constraints",
    "position_constraint_frames",
]

MOVE_GROUP = "moveit_msgs/action/MoveGroup"
JOINT_CONSTRAINT = "moveit_msgs/msg/JointConstraint"
GOAL_JOINT_TOLERANCE_RAD = 1e-4
"""MoveGroupInterface's default goal_joint_tolerance (moveit_ros_planning_interface)."""


def joint_positions_to_constraints(value: Any) -> list[dict[str, Any]]:
    """``{joint: position}`` (rad, or m for a prismatic joint) -> one ``JointConstraint``
    per joint, in the mapping's order, as MoveGroupInterface's setJointValueTarget sends."""
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"a named state is a mapping of joint name to position, got {value!r}")
    constraints = []
    for joint, position in value.items():
        if not isinstance(joint, str) or not joint:
            raise ValueError(f"joint name {joint!r} is not a non-empty string")
        if (
            isinstance(position, bool)
            or not isinstance(position, (int, float))
            or not math.isfinite(position)
        ):
            raise ValueError(f"joint {joint!r}: position {position!r} is not a finite number")
        constraints.append(
            {
                "joint_name": joint,
                "position": float(position),
                "tolerance_above": GOAL_JOINT_TOLERANCE_RAD,
                "tolerance_below": GOAL_JOINT_TOLERANCE_RAD,
                "weight": 1.0,
            }
        )
    return constraints


def position_constraint_frames(binding: Any) -> set[str] | None:
    """The constant frames of ``binding``'s position constraints (MoveGroup), or None when
    a frame is not a constant (an argument picks it)."""
    frames: set[str] = set()
    for path, raw in binding.goal.items():
        parts = parse_path(path)
        if "position_constraints" not in parts:
            continue
        tail = parts[parts.index("position_constraints") + 2 :]
        constant = raw.get("value") if isinstance(raw, dict) and set(raw) == {"value"} else raw
        if tail == ["header", "frame_id"]:
            if isinstance(raw, dict) and set(raw) != {"value"}:
                return None
            frames.add(str(constant))
        elif tail == ["header"] and isinstance(constant, dict):
            frames.add(str(constant.get("frame_id", "")))
    return frames
