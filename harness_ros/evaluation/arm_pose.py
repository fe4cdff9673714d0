"""The arm's deterministic check: the measured end-effector pose against the requested one.

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
from typing import TYPE_CHECKING, Any

from harness_ros.config import ArmPoseCheckConfig

if TYPE_CHECKING:
    from harness_ros.evaluation.evidence import PoseCheck, StateReading

__all__ = ["ArmPose", "check_arm_pose", "orientation_error_deg", "requested_arm_pose_from_goal"]

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


def _same_frame(a: str, b: str) -> bool:
    return a.lstrip("/") == b.lstrip("/")


def check_arm_pose(
    requested: ArmPose | None,
    reading: StateReading | None,
    limits: ArmPoseCheckConfig,
    *,
    since_end_s: float | None = None,
) -> PoseCheck:
    """Is the end effector at the requested pose? Fails closed on anything it cannot compare.

    ``since_end_s`` is how long ago the tool ended: a reading older than that was measured
    before the move ended and is no evidence."""
    from harness_ros.evaluation.evidence import PoseCheck

    if requested is None:
        return PoseCheck(False, "the tool's goal names no end-effector target to compare with")
    if reading is None:
        return PoseCheck(False, f"state source {limits.source!r} gave no reading")
    if reading.missing:
        return PoseCheck(False, f"no measured end-effector pose: {reading.freshness()}")
    if reading.stale:
        return PoseCheck(False, f"the end-effector pose from {reading.topic!r} is {reading.freshness()}")
    if since_end_s is not None and (reading.age_s is None or reading.age_s > since_end_s):
        age = "of unknown age" if reading.age_s is None else f"{reading.age_s:.2f} s old"
        return PoseCheck(
            False,
            f"the end-effector pose from {reading.topic!r} is {age}, measured before the move "
            f"ended {since_end_s:.2f} s ago: no evidence of where the arm is now",
        )
    measured = reading.arm_pose
    if measured is None:
        return PoseCheck(False, f"{reading.topic!r} carries no end-effector pose")
    if not _same_frame(measured.frame, requested.frame):
        return PoseCheck(
            False,
            f"the end-effector pose is in frame {measured.frame!r}, the request in {requested.frame!r}: "
            f"they are not compared (publish the pose in {requested.frame!r})",
        )
    if not all(math.isfinite(v) for v in (measured.x, measured.y, measured.z)):
        return PoseCheck(False, f"the end-effector position from {reading.topic!r} is not finite")
    tolerance = limits.position_m if limits.position_m is not None else requested.position_tolerance_m
    if tolerance is None:
        return PoseCheck(
            False,
            "the goal's position region is not a sphere, so it gives no tolerance: set "
            "position_m in the tool's evaluator.evidence arm_pose_check",
        )
    distance = math.dist((measured.x, measured.y, measured.z), (requested.x, requested.y, requested.z))
    where = f"measured {measured.describe()}; requested {requested.describe()}"
    if distance > tolerance:
        return PoseCheck(
            False,
            f"end effector {distance:.3f} m from the requested point (tolerance {tolerance:g} m); {where}",
        )
    turned = ""
    if limits.orientation and requested.orientation is not None:
        if requested.orientation_frame is not None and not _same_frame(
            requested.orientation_frame, measured.frame
        ):
            return PoseCheck(
                False,
                f"the requested orientation is in frame {requested.orientation_frame!r}, the measured "
                f"pose in {measured.frame!r}: they are not compared",
            )
        if measured.orientation is None:
            return PoseCheck(False, f"{reading.topic!r} carries no usable orientation; {where}")
        error = orientation_error_deg(measured.orientation, requested.orientation)
        # Per-axis tolerances of t rad allow a rotation of up to sqrt(3) * t in all.
        limit = (
            limits.orientation_deg
            if limits.orientation_deg is not None
            else math.degrees(math.sqrt(3.0) * (requested.orientation_tolerance_rad or 0.0))
        )
        if error > limit:
            return PoseCheck(
                False,
                f"end effector turned {error:.1f} deg from the requested orientation "
                f"(tolerance {limit:.1f} deg); {where}",
            )
        turned = f" and {error:.1f} deg"
    return PoseCheck(
        True,
        f"end effector within {distance:.3f} m{turned} of the request (tolerance {tolerance:g} m); {where}",
    )
