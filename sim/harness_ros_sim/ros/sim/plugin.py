"""The simulated robot's plugin: evaluator kind ``sim`` (the sim's ground truth).

Registered through the ``harness_ros.plugins`` entry point, so the harness node never
imports the simulator: a robot without it simply has no ``sim`` evaluator kind.
"""

from __future__ import annotations

from typing import Any

from harness_ros.errors import ConfigError
from harness_ros.plugins.contracts import EvaluatorContext, PluginRegistry

__all__ = ["register"]


def _sim_evaluator(context: EvaluatorContext) -> Any:
    if context.node is None:
        raise ConfigError("evaluator.kind 'sim' reads the sim's ground-truth topic: it needs the ROS node")
    from harness_ros_sim.ros.sim.evaluator import SimGroundTruthEvaluator

    return SimGroundTruthEvaluator(context.node, context.config.evaluator.ground_truth_topic)


def register(registry: PluginRegistry) -> None:
    registry.add_evaluator("sim", _sim_evaluator)
