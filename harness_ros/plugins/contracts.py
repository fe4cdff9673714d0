"""What a plugin may add to the harness, and what it is given.

A plugin is a ``module:callable`` taking a ``PluginRegistry``: it registers Python tools,
pre-execution hooks, evaluator kinds, litellm model providers and observation extras.
It never changes the safety hooks the harness installs itself: a plugin hook runs in
addition to them (after approvals and before the base-motion filter's clearance check),
and memory or skills cannot load plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_ros.hooks.contracts import PreExecutionHook
from harness_ros.tools.contracts import Tool

__all__ = [
    "EvaluatorContext",
    "EvaluatorFactory",
    "ObservationExtra",
    "PluginRegistry",
    "ProviderRegistration",
]


@dataclass(frozen=True)
class EvaluatorContext:
    """What an evaluator factory gets: the config, and the ROS node when one runs the harness."""

    config: Any
    node: Any | None = None


EvaluatorFactory = Callable[[EvaluatorContext], Any]
"""Builds an ``EvaluatorProtocol`` for ``evaluator.kind``."""
ProviderRegistration = Callable[[Any], None]
"""Registers a litellm custom provider on the ``litellm`` module it is given."""
ObservationExtra = Callable[[], str | None]
"""One short line of text added to every observation (None: nothing this time)."""


@dataclass
class PluginRegistry:
    """Filled by plugins at start-up; read by the node, the harness factory and the model."""

    tools: list[Tool] = field(default_factory=list)
    hooks: list[PreExecutionHook] = field(default_factory=list)
    evaluators: dict[str, EvaluatorFactory] = field(default_factory=dict)
    model_providers: dict[str, ProviderRegistration] = field(default_factory=dict)
    observation_extras: dict[str, ObservationExtra] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)
    """The plugins that registered here, in order (for logs and ``harness-ros check``)."""

    def add_tool(self, tool: Tool) -> None:
        self.tools.append(tool)

    def add_hook(self, hook: PreExecutionHook) -> None:
        self.hooks.append(hook)

    def add_evaluator(self, kind: str, factory: EvaluatorFactory) -> None:
        if kind in {"none", "model"}:
            raise ValueError(f"evaluator kind {kind!r} is built in and cannot be replaced")
        self.evaluators[kind] = factory

    def add_model_provider(self, prefix: str, register: ProviderRegistration) -> None:
        """``prefix`` is the litellm provider name: models ``<prefix>/...`` use it."""
        self.model_providers[prefix] = register

    def add_observation_extra(self, name: str, extra: ObservationExtra) -> None:
        self.observation_extras[name] = extra
