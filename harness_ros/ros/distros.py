"""Which ROS 2 distribution an installed nav2_msgs or control_msgs looks like.

The types the presets bind differ between Humble, Jazzy and Kilted (docs/robot.md,
*ROS distributions*): a start-up error names the distribution the installed type looks
like, so the user knows which preset or key to change. Read from the generated classes
alone (fields and constants), never from ``$ROS_DISTRO``, which names what is sourced,
not what a workspace overlay installed; both are shown when they disagree.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["constants_of", "describe_installed", "installed_distro"]


def constants_of(msg_class: type) -> dict[str, Any]:
    """The constants (``NONE=0``, ``UNKNOWN=9000`` ...) a generated message class declares."""
    metaclass = type(msg_class)
    for name in dir(metaclass):
        if name.endswith("__constants"):
            value = getattr(metaclass, name)
            if isinstance(value, dict):
                return dict(value)
    return {}


def _fields(msg_class: type) -> set[str]:
    return set(msg_class.get_fields_and_field_types())  # type: ignore[attr-defined]


def _action(package: str, name: str) -> Any | None:
    try:
        module = importlib.import_module(f"{package}.action")
    except ImportError:
        return None
    return getattr(module, name, None)


def _nav2() -> str | None:
    navigate = _action("nav2_msgs", "NavigateToPose")
    spin = _action("nav2_msgs", "Spin")
    if navigate is None:
        return None
    result = _fields(navigate.Result)
    codes = constants_of(navigate.Result)
    if "error_code" not in result:
        return "Humble (Nav2 1.1: NavigateToPose's result is empty, behaviours report no error code)"
    collision_flag = spin is not None and "disable_collision_checks" in _fields(spin.Goal)
    if "GOAL_REJECTED" in codes:
        return "Lyrical or Rolling (Nav2 1.5 or later)"
    if "UNKNOWN" in codes or collision_flag:
        return "Kilted (Nav2 1.4: behaviours take disable_collision_checks)"
    return "Jazzy (Nav2 1.3: behaviours have no disable_collision_checks)"


def _control() -> str | None:
    trajectory = _action("control_msgs", "FollowJointTrajectory")
    if trajectory is None:
        return None
    if "index" in _fields(trajectory.Feedback):
        return "Kilted or later (control_msgs 6: GripperActionController is gone, use ParallelGripperCommand)"
    return "Humble or Jazzy (control_msgs 4 or 5)"


_BY_PACKAGE = {"nav2_msgs": _nav2, "control_msgs": _control}


def installed_distro(package: str) -> str | None:
    """What the installed ``package`` looks like (``Jazzy (Nav2 1.3 ...)``); None when it is
    not a package this module knows or it is not installed."""
    probe = _BY_PACKAGE.get(package)
    if probe is None:
        return None
    try:
        return probe()
    except Exception:  # noqa: BLE001 - a hint must never hide the error it explains
        return None


def describe_installed(type_string: str) -> str:
    """``the installed nav2_msgs looks like ROS 2 Jazzy (...)`` for an error message; '' when
    unknown. Names ``$ROS_DISTRO`` too, so a mismatch between the sourced distribution and
    an overlay's package shows."""
    package = type_string.split("/", 1)[0]
    looks = installed_distro(package)
    if looks is None:
        return ""
    sourced = os.environ.get("ROS_DISTRO", "").strip()
    text = f"the installed {package} looks like ROS 2 {looks}"
    if sourced and not looks.lower().startswith(sourced.lower()) and sourced.lower() not in looks.lower():
        text += f", but ROS_DISTRO is {sourced!r} (an overlay shadows the distribution's {package}?)"
    return text
