"""The simulated robot's plugin: evaluator kind ``sim`` (the sim's ground truth).

Registered through the ``harness_ros.plugins`` entry point, so the harness node never
imports the simulator: a robot without it simply has no ``sim`` evaluator kind. Its one
setting is ``evaluator.options.ground_truth_topic`` (default ``/sim/ground_truth``); any
other option is refused with its key, when the node builds the evaluator.
"""

from __future__ import annotations

import re
from typing import Any

from harness_ros.errors import ConfigError
from harness_ros.plugins.contracts import EvaluatorContext, PluginRegistry

__all__ = ["DEFAULT_GROUND_TRUTH_TOPIC", "ground_truth_topic", "register"]

DEFAULT_GROUND_TRUTH_TOPIC = "/sim/ground_truth"
_OPTIONS = ("ground_truth_topic",)
# A ROS topic name: absolute or relative, tokens of letters, digits and underscores.
_TOPIC = re.compile(r"^~?/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


def ground_truth_topic(options: dict[str, Any]) -> str:
    """The ground-truth topic ``evaluator.options`` names; ConfigError naming the key otherwise."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"evaluator.options.{unknown[0]}: unknown option for evaluator.kind 'sim' "
            f"(it reads: {', '.join(_OPTIONS)})"
        )
    topic = options.get("ground_truth_topic", DEFAULT_GROUND_TRUTH_TOPIC)
    if not isinstance(topic, str) or not _TOPIC.match(topic):
        raise ConfigError(
            f"evaluator.options.ground_truth_topic: expected a ROS topic name such as "
            f"{DEFAULT_GROUND_TRUTH_TOPIC!r}, got {topic!r}"
        )
    return topic


def _sim_evaluator(context: EvaluatorContext) -> Any:
    topic = ground_truth_topic(dict(context.config.evaluator.options))
    if context.node is None:
        raise ConfigError("evaluator.kind 'sim' reads the sim's ground-truth topic: it needs the ROS node")
    from harness_ros_sim.ros.sim.evaluator import SimGroundTruthEvaluator

    return SimGroundTruthEvaluator(context.node, topic)


def register(registry: PluginRegistry) -> None:
    registry.add_evaluator("sim", _sim_evaluator)
