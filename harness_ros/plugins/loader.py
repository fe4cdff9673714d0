"""Loading plugins: the ``harness_ros.plugins`` entry-point group, then ``plugins:`` in the config.

Entry points let an installed package add capabilities (the package's own simulated
robot registers its ground-truth evaluator and the scripted demo policy this way);
``plugins:`` names ``module:callable`` entries for a user's own code. Every error names
where the plugin came from and what is wrong, at start-up.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from importlib import metadata
from typing import Any

from harness_ros.errors import ConfigError
from harness_ros.model.contracts import ModelProvider
from harness_ros.plugins.contracts import PluginRegistry

__all__ = ["ENTRY_POINT_GROUP", "load_plugins", "model_provider", "resolve_callable"]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "harness_ros.plugins"


def resolve_callable(spec: str, where: str) -> Callable[..., Any]:
    """``package.module:callable`` -> the callable; ConfigError naming ``where`` otherwise."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"{where}: {spec!r} must look like 'package.module:callable'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {err}") from None
    except Exception as err:  # noqa: BLE001  the module's own code raised: a start-up error naming it
        raise ConfigError(
            f"{where}: plugin {spec!r}: importing {module_name!r} raised {type(err).__name__}: {err}"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part, None)
        except Exception as err:  # noqa: BLE001  a module __getattr__ or property that raises
            raise ConfigError(
                f"{where}: plugin {spec!r}: reading {attribute!r} raised {type(err).__name__}: {err}"
            ) from None
        if target is None:
            raise ConfigError(f"{where}: {module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        raise ConfigError(f"{where}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def _entry_points() -> Iterable[Any]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _apply(registry: PluginRegistry, name: str, plugin: Callable[..., Any], where: str) -> None:
    before = registry.snapshot()
    try:
        plugin(registry)
    except ConfigError:
        raise
    except Exception as err:  # a plugin fault is a start-up error naming it
        raise ConfigError(
            f"{where}: plugin {name!r} failed while registering: {type(err).__name__}: {err}"
        ) from err
    registry.loaded.append(name)
    registry.added[name] = registry.snapshot().since(before)


def load_plugins(plugins: Sequence[str] = (), *, entry_points: bool = True) -> PluginRegistry:
    """A registry filled by the installed entry points, then by ``plugins`` (config order)."""
    registry = PluginRegistry()
    if entry_points:
        for entry in _entry_points():
            where = f"entry point {entry.name!r} ({entry.value}) in group {ENTRY_POINT_GROUP!r}"
            try:
                plugin = entry.load()
            except Exception as err:  # noqa: BLE001  a broken installed package: one clear line
                raise ConfigError(f"{where}: cannot load: {type(err).__name__}: {err}") from None
            _apply(registry, entry.name, plugin, where)
    for index, spec in enumerate(plugins):
        where = f"plugins[{index}]"
        _apply(registry, spec, resolve_callable(spec, where), where)
    return registry


@cache
def _installed_providers() -> dict[str, ModelProvider]:
    return dict(load_plugins().model_providers)


def model_provider(prefix: str) -> ModelProvider | None:
    """The litellm provider ``prefix`` that an installed plugin adds, if any."""
    return _installed_providers().get(prefix)
