"""The demo's plugin: the scripted demo policy as the litellm provider ``harness_demo``.

Registered through the ``harness_ros.plugins`` entry point, so the model adapter never
imports the demo: models ``harness_demo/...`` resolve to it only where it is installed.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness_ros.plugins.contracts import PluginRegistry

__all__ = ["register"]


def _register_provider(litellm: Any) -> None:
    # import_module (not ``from harness_ros_sim.demo import policy``): it honours sys.modules.
    policy = importlib.import_module("harness_ros_sim.demo.policy")
    policy.register(litellm)


def register(registry: PluginRegistry) -> None:
    registry.add_model_provider("harness_demo", _register_provider)
