"""Start-up validation that the harness node and ``harness-ros check`` share.

Whatever makes the node refuse to configure must make ``check`` fail with the same
message, so both call these functions (and ``harness_ros.ros.interfaces.tool_spec``
for each tool binding, ``validate_model_settings`` for the models) instead of
restating the rules. Core code: no rclpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness_ros.errors import ConfigError

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig, ObservationConfig
    from harness_ros.profile.contracts import EmbodimentProfile

__all__ = ["check_evaluator_kind", "model_visible_views", "select_views"]


def model_visible_views(config: HarnessConfig, profile: EmbodimentProfile | None) -> tuple[str, ...]:
    """The views the model gets: the profile's Model-Visible Views, or without a profile
    every configured view."""
    return profile.model_visible_views if profile is not None else tuple(config.observations.views)


def select_views(config: ObservationConfig, views: Sequence[str] | None) -> dict[str, str]:
    """Model-Visible View name -> its key in ``observations.views`` (all views when None).

    Profile view names are lowercased, so keys also match case-insensitively. A view
    without a configured camera topic is a ConfigError naming the keys to set.
    """
    if views is None:
        return {name: name for name in config.views}
    by_folded = {name.casefold(): name for name in config.views}
    selected: dict[str, str] = {}
    missing: list[str] = []
    for view in views:
        key = view if view in config.views else by_folded.get(view.casefold())
        if key is None:
            missing.append(view)
        else:
            selected[view] = key
    if missing:
        keys = ", ".join(f"observations.views.{name}.topic" for name in missing)
        configured = sorted(config.views) or "none"
        message = (
            f"Model-Visible View(s) {missing!r} have no camera topic: set {keys} "
            f"(configured views: {configured})"
        )
        raise ConfigError(message)
    return selected


def check_evaluator_kind(config: HarnessConfig, evaluators: Any) -> None:
    """``evaluator.kind`` is none, model, checks, or one a loaded plugin registered
    (``evaluators``: the plugin registry's name -> factory mapping)."""
    kind = config.evaluator.kind
    if kind not in {"none", "model", "checks", *evaluators}:
        known = ", ".join(["none", "model", "checks", *sorted(evaluators)])
        raise ConfigError(f"evaluator.kind {kind!r} is not a known evaluator (known: {known})")
