"""MoveIt 2's MoveGroup goal: what the presets cannot say in YAML.

config/presets/move_arm_to_pose.yaml and move_arm_to_named.yaml map a few model-facing
arguments onto ``moveit_msgs/action/MoveGroup``'s goal (about 600 leaf fields) through the
ordinary binding mechanism. The one goal builder they need,
``joint_positions_to_constraints`` (a named group state ``{joint: position}`` as the
``JointConstraint`` list move_group takes: it reads no SRDF names from a goal), is in
``harness_ros.moveit_contract`` beside the interface names, where the binding's
conversion and the config's frame check reach it; it is re-exported here. This module
reads what the safety layer needs from such a goal, all pure Python:

- ``built_goal`` and ``arm_targets``: the goal a call would send, as a JSON object, and the
  position targets in it (frame, x, y, z), so the workspace hook checks exactly what
  would leave the harness;
- ``workspace_problem``: whether a target lies inside a declared ``ArmWorkspace``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.errors import BindingError
from harness_ros.moveit_contract import (
    GOAL_JOINT_TOLERANCE_RAD,
    JOINT_CONSTRAINT,
    MOVE_GROUP,
    joint_positions_to_constraints,
    position_constraint_frames,
)
from harness_ros.tools.binding import CONVERSIONS
from harness_ros.validators import parse_path

__all__ = [
    "GOAL_JOINT_TOLERANCE_RAD",
    "JOINT_CONSTRAINT",
    "MOVE_GROUP",
    "ArmTarget",
    "arm_targets",
    "built_goal",
    "joint_positions_to_constraints",
    "position_constraint_frames",
    "workspace_problem",
]

# --------------------------------------------------------------------------- the goal a call sends


def _resolve(raw: Any, binding: Any, values: Mapping[str, Any]) -> tuple[bool, Any]:
    """(present, value) of one goal source, as ``CompiledBinding.build`` fills it."""
    if not isinstance(raw, dict):
        return True, raw
    conversion = CONVERSIONS.get(raw["convert"]) if "convert" in raw else None
    if conversion is not None and conversion.unit is None:
        return True, None  # the clock (``now``): no position in it
    if "value" in raw:
        value = raw["value"]
    else:
        arg = str(raw.get("arg"))
        if arg not in values:
            return False, None
        value = values[arg]
        spec = (binding.arguments or {}).get(arg)
        if spec is not None and spec.lookup is not None:
            table = binding.lookups.get(spec.lookup, {})
            if not isinstance(value, str) or value not in table:
                raise BindingError(f"{arg}: unknown {spec.lookup} entry {value!r}")
            value = table[value]
            if raw.get("field") is not None:
                value = value[raw["field"]]
    if conversion is not None:
        value = conversion.apply(value)
    return True, value


def _put(goal: dict[str, Any], parts: Sequence[str | int], value: Any) -> None:
    node: Any = goal
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        empty: Any = value if last else ([] if isinstance(parts[index + 1], int) else {})
        if isinstance(part, int):
            while len(node) <= part:
                node.append(None)
            if last or node[part] is None:
                node[part] = empty
            node = node[part]
        elif last:
            node[part] = value
        else:
            node = node.setdefault(part, empty)


def built_goal(binding: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The goal (a JSON object, unset fields left out) ``binding`` builds for ``arguments``,
    argument defaults applied. Raises BindingError or ValueError where it cannot build."""
    values = dict(arguments)
    for name, spec in (binding.arguments or {}).items():
        if name not in values and spec.default is not None:
            values[name] = spec.default
    goal: dict[str, Any] = {}
    for path, raw in binding.goal.items():
        present, value = _resolve(raw, binding, values)
        if present:
            _put(goal, parse_path(path), value)
    return goal


@dataclass(frozen=True)
class ArmTarget:
    """One point a position constraint asks the link to reach: the centre of a region
    primitive, in ``frame`` (MoveIt reads a constraint in its header's frame)."""

    frame: str
    x: float
    y: float
    z: float
    link: str
    where: str
    """``request.goal_constraints[0].position_constraints[0].constraint_region.primitive_poses[0]``."""


def _number(node: Any, key: str, where: str) -> float:
    value = node.get(key, 0.0) if isinstance(node, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}.{key} is not a number ({value!r})")
    return float(value)


def _items(node: Any, key: str) -> list[Any]:
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, list) else []


def arm_targets(binding: Any, arguments: Mapping[str, Any]) -> list[ArmTarget]:
    """Every position target of the MoveGroup goal this call would send: each region
    primitive pose of each position constraint, in its constraint's frame. Raises
    ValueError (or BindingError) when the goal cannot be built or a target cannot be read."""
    goal = built_goal(binding, arguments)
    request = goal.get("request", {})
    targets = []
    for i, constraints in enumerate(_items(request, "goal_constraints")):
        for k, constraint in enumerate(_items(constraints, "position_constraints")):
            where = f"request.goal_constraints[{i}].position_constraints[{k}]"
            if not isinstance(constraint, dict):
                raise ValueError(f"{where} is not a message")
            frame = (constraint.get("header") or {}).get("frame_id", "")
            region = constraint.get("constraint_region") or {}
            poses = _items(region, "primitive_poses") + _items(region, "mesh_poses")
            if not poses:
                raise ValueError(f"{where} has no region pose: nothing to check")
            for j, pose in enumerate(poses):
                at = f"{where}.constraint_region.primitive_poses[{j}]"
                position = pose.get("position", {}) if isinstance(pose, dict) else None
                if not isinstance(position, dict):
                    raise ValueError(f"{at}.position is not a message")
                offset = constraint.get("target_point_offset") or {}
                if any(_number(offset, axis, f"{where}.target_point_offset") for axis in "xyz"):
                    # The offset is in the link's frame, which the harness cannot place.
                    raise ValueError(f"{where}.target_point_offset is not zero: the target cannot be checked")
                targets.append(
                    ArmTarget(
                        frame=str(frame),
                        x=_number(position, "x", at),
                        y=_number(position, "y", at),
                        z=_number(position, "z", at),
                        link=str(constraint.get("link_name", "")),
                        where=at,
                    )
                )
    return targets


# --------------------------------------------------------------------------- the workspace


def workspace_problem(target: ArmTarget, workspace: Any) -> str | None:
    """Why ``target`` lies outside ``workspace`` (an ``ArmWorkspace``), or None inside."""
    x, y, z = target.x, target.y, target.z
    if not all(math.isfinite(v) for v in (x, y, z)):
        return "a coordinate is not a finite number"
    low, high = workspace.z_m
    if not low <= z <= high:
        return f"z {z:.3f} m is outside [{low:g}, {high:g}] m"
    if workspace.shape == "box":
        for axis, value, (low, high) in (("x", x, workspace.x_m), ("y", y, workspace.y_m)):
            if not low <= value <= high:
                return f"{axis} {value:.3f} m is outside [{low:g}, {high:g}] m"
        return None
    radius = math.hypot(x, y)
    if radius > workspace.radius_m:
        return f"it is {radius:.3f} m from the z axis, beyond the reach of {workspace.radius_m:g} m"
    if radius < workspace.min_radius_m:
        return f"it is {radius:.3f} m from the z axis, inside the keep-out of {workspace.min_radius_m:g} m"
    return None
