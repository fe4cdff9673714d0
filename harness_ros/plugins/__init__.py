"""Plugins: Python tools, hooks, evaluators, model providers and observation extras
without writing a node. See ``contracts`` (what a plugin may add) and ``loader``."""

from harness_ros.plugins.contracts import EvaluatorContext, PluginRegistry
from harness_ros.plugins.loader import ENTRY_POINT_GROUP, load_plugins, model_provider, resolve_callable
from harness_ros.plugins.observation import ObservationWithExtras

__all__ = [
    "ENTRY_POINT_GROUP",
    "EvaluatorContext",
    "ObservationWithExtras",
    "PluginRegistry",
    "load_plugins",
    "model_provider",
    "resolve_callable",
]
