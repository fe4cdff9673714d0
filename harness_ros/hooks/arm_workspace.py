"""The arm workspace check: a MoveIt target outside the declared workspace never leaves.

For each ``moveit_msgs/action/MoveGroup`` tool, the hook builds the goal the call would
send (``harness_ros.tools.moveit_goal.built_goal``: the same mapping, argument defaults
and lookups as the ROS layer) and checks every position target in it against
``safety.arm_workspaces`` for the target's frame. It fails closed: a frame with no
workspace, a target it cannot read or a coordinate that is not finite blocks the call.
A goal of joint constraints only (a named state from the config) has no target to check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness_ros.config import SafetyConfig, ToolBinding
from harness_ros.hooks.contracts import HookAction, HookDecision
from harness_ros.observation.contracts import Observation
from harness_ros.tools.binding import BindingError
from harness_ros.tools.contracts import ToolSpec
from harness_ros.tools.moveit_goal import MOVE_GROUP, arm_targets, workspace_problem

__all__ = ["ArmWorkspaceHook", "describe_workspace"]


def describe_workspace(workspace: Any) -> str:
    """``box x [0.1, 0.8] m, y [-0.5, 0.5] m, z [0, 1] m`` or the cylinder's sizes."""
    z = f"z [{workspace.z_m[0]:g}, {workspace.z_m[1]:g}] m"
    if workspace.shape == "box":
        x, y = workspace.x_m, workspace.y_m
        return f"box x [{x[0]:g}, {x[1]:g}] m, y [{y[0]:g}, {y[1]:g}] m, {z}"
    inner = f" outside {workspace.min_radius_m:g} m" if workspace.min_radius_m else ""
    return f"cylinder within {workspace.radius_m:g} m of the z axis{inner}, {z}"


class ArmWorkspaceHook:
    """Blocks a MoveGroup call whose target lies outside ``safety.arm_workspaces``."""

    name = "arm_workspace"

    def __init__(self, safety: SafetyConfig, bindings: Sequence[ToolBinding]) -> None:
        self._workspaces = dict(safety.arm_workspaces)
        self._bindings = {b.name: b for b in bindings if b.type == MOVE_GROUP}

    @property
    def applies(self) -> bool:
        """Whether any configured tool is a MoveGroup tool (else the chain leaves this out)."""
        return bool(self._bindings)

    def before_execution(
        self, spec: ToolSpec, arguments: dict[str, Any], observation: Observation | None
    ) -> HookDecision:
        binding = self._bindings.get(spec.name)
        if binding is None:
            return HookDecision.allow()
        try:
            targets = arm_targets(binding, arguments)
        except (BindingError, ValueError, TypeError, KeyError) as err:
            return self._block(f"cannot check the target against the arm workspace: {err}")
        for target in targets:
            where = (
                f"target ({target.x:.3f}, {target.y:.3f}, {target.z:.3f}) m in {target.frame or 'no frame'}"
            )
            workspace = self._workspaces.get(target.frame)
            if workspace is None:
                declared = ", ".join(self._workspaces) or "none"
                return self._block(
                    f"{where}: no arm workspace is declared for that frame "
                    f"(safety.arm_workspaces: {declared}); nothing was sent"
                )
            problem = workspace_problem(target, workspace)
            if problem is not None:
                return self._block(
                    f"{where} is outside the arm workspace ({describe_workspace(workspace)}): "
                    f"{problem}; nothing was sent, choose a point inside it"
                )
        return HookDecision.allow()

    def _block(self, reason: str) -> HookDecision:
        return HookDecision(HookAction.BLOCK, reason=reason, hook=self.name)
