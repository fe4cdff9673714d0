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
from harness_ros.model.contracts import ConfigProblem, ModelProvider
from harness_ros.tools.contracts import Tool

__all__ = [
    "EvaluatorContext",
    "EvaluatorFactory",
    "ModelProvider",
    "ObservationExtra",
    "PluginAdditions",
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


@dataclass(frozen=True)
class PluginAdditions:
    """What one plugin registered: how many tools and hooks, which evaluator kinds, model
    provider prefixes and observation extras."""

    tools: int = 0
    hooks: int = 0
    evaluators: tuple[str, ...] = ()
    model_providers: tuple[str, ...] = ()
    observation_extras: tuple[str, ...] = ()

    def since(self, before: PluginAdditions) -> PluginAdditions:
        return PluginAdditions(
            tools=self.tools - before.tools,
            hooks=self.hooks - before.hooks,
            evaluators=tuple(k for k in self.evaluators if k not in before.evaluators),
            model_providers=tuple(k for k in self.model_providers if k not in before.model_providers),
            observation_extras=tuple(
                k for k in self.observation_extras if k not in before.observation_extras
            ),
        )


@dataclass
class PluginRegistry:
    """Filled by plugins at start-up; read by the node, the harness factory and the model."""

    tools: list[Tool] = field(default_factory=list)
    hooks: list[PreExecutionHook] = field(default_factory=list)
    evaluators: dict[str, EvaluatorFactory] = field(default_factory=dict)
    model_providers: dict[str, ModelProvider] = field(default_factory=dict)
    observation_extras: dict[str, ObservationExtra] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)
    """The plugins that registered here, in order."""
    added: dict[str, PluginAdditions] = field(default_factory=dict)
    """What each loaded plugin registered (filled by the loader)."""

    def snapshot(self) -> PluginAdditions:
        """Everything registered so far, to tell what the next plugin adds."""
        return PluginAdditions(
            tools=len(self.tools),
            hooks=len(self.hooks),
            evaluators=tuple(self.evaluators),
            model_providers=tuple(self.model_providers),
            observation_extras=tuple(self.observation_extras),
        )

    def in_use(self, model: str | None, evaluator_kind: str) -> list[str]:
        """The loaded plugins a config uses: every one that adds a tool, a hook or an
        observation extra, and one that only offers an evaluator kind or a model provider
        when the config chooses that kind or a ``<prefix>/...`` model of it. The package's
        own demo and sim plugins are unused by a robot config (logs and ``check`` say so)."""
        prefix = (model or "").partition("/")[0] if model and "/" in model else None
        used = []
        for name in self.loaded:
            added = self.added.get(name)
            if (
                added is None
                or added.tools
                or added.hooks
                or added.observation_extras
                or evaluator_kind in added.evaluators
                or (prefix is not None and prefix in added.model_providers)
            ):
                used.append(name)
        return used

    def add_tool(self, tool: Tool) -> None:
        self.tools.append(tool)

    def add_hook(self, hook: PreExecutionHook) -> None:
        self.hooks.append(hook)

    def add_evaluator(self, kind: str, factory: EvaluatorFactory) -> None:
        if kind in {"none", "model", "checks"}:
            raise ValueError(f"evaluator kind {kind!r} is built in and cannot be replaced")
        self.evaluators[kind] = factory

    def add_model_provider(
        self,
        prefix: str,
        register: ProviderRegistration,
        *,
        language_model: bool = True,
        label: str = "",
        config_problem: ConfigProblem | None = None,
    ) -> None:
        """``prefix`` is the litellm provider name: models ``<prefix>/...`` use it.

        A provider that is not a language model (a script) says so with
        ``language_model=False`` and a ``label``; ``config_problem`` lets it refuse a
        config it must not run with (see ``ModelProvider``)."""
        if not language_model and not label.strip():
            raise ValueError(
                f"model provider {prefix!r}: a provider that is not a language model needs a label"
            )
        self.model_providers[prefix] = ModelProvider(register, language_model, label, config_problem)

    def add_observation_extra(self, name: str, extra: ObservationExtra) -> None:
        self.observation_extras[name] = extra
