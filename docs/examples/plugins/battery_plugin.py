"""An example harness_ros plugin: a Python tool, a pre-execution hook and an observation extra.

Enable it in the config (with this folder on PYTHONPATH, or the module in your package):

    plugins:
      - battery_plugin:register
"""

from __future__ import annotations

from typing import Any

from harness_ros.hooks import HookAction, HookDecision
from harness_ros.plugins import PluginRegistry
from harness_ros.tools import ToolSpec, success, tool

BATTERY_PERCENT = 87.0  # a real plugin would read the robot's sensor_msgs/BatteryState


@tool(description="Read the robot's battery charge in percent.")
def battery_level() -> dict[str, Any]:
    return success(percent=BATTERY_PERCENT)


class NoHotSurfaces:
    """Blocks placing anything on the stove, whatever the model or memory says."""

    name = "no_hot_surfaces"

    def before_execution(self, spec: ToolSpec, arguments: dict[str, Any], observation: Any) -> HookDecision:
        if spec.name == "place_object" and arguments.get("surface_id") == "stove":
            return HookDecision(HookAction.BLOCK, reason="never place objects on the stove", hook=self.name)
        return HookDecision(HookAction.PASS, hook=self.name)


def register(registry: PluginRegistry) -> None:
    registry.add_tool(battery_level)
    registry.add_hook(NoHotSurfaces())
    registry.add_observation_extra("battery", lambda: f"{BATTERY_PERCENT:.0f} % charge")
