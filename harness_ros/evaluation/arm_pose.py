"""The arm's pose: what the deterministic arm check compares (``check_arm_pose``, in
``harness_ros.evaluation.evidence`` beside ``check_pose``, the measured end-effector pose
against the requested one).

Like ``check_pose`` for the base, numbers are compared rather than left to a model. The
request is read from the goal the call sent (``requested_arm_pose_from_goal``: MoveIt's
MoveGroup goal, its first position constraint's region centre, the orientation
constraint's quaternion and both tolerances); the measurement is the robot's own reading
of the end-effector pose (an ``evaluator.state`` source of type ``pose_stamped``), never
the tool's claim of success. Nothing is compared across frames: a reading in another frame
than the request's is no evidence (the harness has no TF here). A reading stamped before
the tool ended is no evidence either: it may show the arm before it moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ArmPose", "orientation_error_deg", "requested_arm_pose_from_goal"]

_SPHERE = 2
"""shape_msgs/SolidPrimitive SPHERE: dimensions[0] is its radius."""


@dataclass(frozen=True)
class ArmPose:
    """A link's pose: position in metres in ``frame``, orientation as a unit quaternion
    (x, y, z, w) or None when not known or not asked for. In a request, the tolerances the
    goal gave MoveIt (None where the goal has none the harness can read)."""

    frame: str
    x: float
    y: float
    z: float
    orientation: tuple[float, float, float, float] | None = None
    position_tolerance_m: float | None = None
    orientation_tolerance_rad: float | None = None
    orientation_frame: str | None = None
    """The orientation constraint's frame, when it differs from ``frame``."""

    def describe(self) -> str:
        where = f"x {self.x:.3f} m, y {self.y:.3f} m, z {self.z:.3f} m in frame {self.frame or '(none)'!r}"
        if self.orientation is not None:
            q = self.orientation
            where += f", orientation (x {q[0]:.3f}, y {q[1]:.3f}, z {q[2]:.3f}, w {q[3]:.3f})"
        return where


def _float(node: Any, key: str, default: float = 0.0) -> float:
    value = node.get(key, default) if isinstance(node, Mapping) else default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{key} is not a number")
    return float(value)


def _first(node: Any, key: str) -> Any:
    value = node.get(key) if isinstance(node, Mapping) else None
    return value[0] if isinstance(value, list | tuple) and value else None


def _frame(constraint: Any) -> str:
    header = constraint.get("header") if isinstance(constraint, Mapping) else None
    frame = header.get("frame_id", "") if isinstance(header, Mapping) else ""
    return str(frame)


def _quaternion(node: Any) -> tuple[float, float, float, float] | None:
    if not isinstance(node, Mapping):
        return None
    q = (_float(node, "x"), _float(node, "y"), _float(node, "z"), _float(node, "w", 1.0))
    norm = math.sqrt(sum(v * v for v in q))
    if not math.isfinite(norm) or norm < 1e-9:
        return None
    return (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)


def requested_arm_pose_from_goal(goal: Mapping[str, Any]) -> ArmPose | None:
    """The end-effector pose a MoveGroup goal asks for: the centre of its first position
    constraint's region (a sphere's radius is the position tolerance) and its first
    orientation constraint (the largest axis tolerance is the orientation tolerance).
    None for a goal without a position constraint (a named state of joint values)."""
    request = goal.get("request")
    constraints = _first(request, "goal_constraints")
    position = _first(constraints, "position_constraints")
    if not isinstance(position, Mapping):
        return None
    region = position.get("constraint_region")
    centre = _first(region, "primitive_poses")
    if not isinstance(centre, Mapping) or not isinstance(centre.get("position"), Mapping):
        return None
    try:
        point = centre["position"]
        x, y, z = _float(point, "x"), _float(point, "y"), _float(point, "z")
        primitive = _first(region, "primitives")
        radius = None
        if isinstance(primitive, Mapping) and primitive.get("type") == _SPHERE:
            dimensions = primitive.get("dimensions")
            if isinstance(dimensions, list | tuple) and dimensions:
                radius = float(dimensions[0])
        rotation = _first(constraints, "orientation_constraints")
        orientation, tolerance, orientation_frame = None, None, None
        if isinstance(rotation, Mapping):
            orientation = _quaternion(rotation.get("orientation"))
            tolerance = max(_float(rotation, f"absolute_{axis}_axis_tolerance") for axis in ("x", "y", "z"))
            if _frame(rotation) != _frame(position):
                orientation_frame = _frame(rotation)
    except (TypeError, ValueError):
        return None
    if not all(math.isfinite(v) for v in (x, y, z)):
        return None
    return ArmPose(_frame(position), x, y, z, orientation, radius, tolerance, orientation_frame)


def orientation_error_deg(
    a: tuple[float, float, float, float], b: tuple[float, float, float, float]
) -> float:
    """The angle (deg) of the rotation from one unit quaternion to the other."""
    dot = min(1.0, abs(sum(p * q for p, q in zip(a, b, strict=True))))
    return math.degrees(2.0 * math.acos(dot))
