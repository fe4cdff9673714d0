"""The base-motion safety filter: clearance is read again right before base motion.

Clearance is the free distance from the footprint edge in four directions (see
``Clearance``); the filter keeps ``margin_m`` of it free. It fails closed: a missing,
stale or unreadable reading blocks motion, an unknown direction blocks a translation
toward it, and only shortening rewrites are ever made.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from harness_ros.config import SafetyConfig
from harness_ros.hooks.contracts import HookAction, HookDecision
from harness_ros.observation.contracts import DIRECTIONS, Clearance, Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = ["BaseMotionSafetyFilter", "describe_clearance"]

logger = logging.getLogger(__name__)

_OPPOSITE = {"forward": "backward", "backward": "forward", "left": "right", "right": "left"}
_ALIASES = {"front": "forward", "forwards": "forward", "back": "backward", "backwards": "backward"}


def describe_clearance(clearance: Clearance | None) -> str:
    """One line for the model, the evaluator and safety events, in metres."""
    if clearance is None:
        return "base clearance: no reading"
    parts = []
    for direction in DIRECTIONS:
        value = clearance.get(direction)
        parts.append(f"{direction} {value:.2f} m" if value is not None else f"{direction} unknown")
    freshness = "age unknown" if clearance.age_s is None else f"age {clearance.age_s:.2f} s"
    if clearance.stale or clearance.age_s is None:
        freshness = f"STALE ({freshness})"
    return f"base clearance from footprint edge: {', '.join(parts)}; {freshness}"


def _block(reason: str) -> HookDecision:
    return HookDecision(HookAction.BLOCK, reason=reason, hook=BaseMotionSafetyFilter.name)


class BaseMotionSafetyFilter:
    """``PreExecutionHook`` for tools with ``base_motion=True``."""

    name = "base_motion_safety"

    def __init__(self, safety: SafetyConfig, read_clearance: Callable[[], Clearance | None]) -> None:
        self._margin_m = safety.margin_m
        self._max_translation_m = safety.max_translation_m
        self._read_clearance = read_clearance

    def before_execution(
        self, spec: ToolSpec, arguments: dict[str, Any], observation: Observation | None
    ) -> HookDecision:
        # The observation given to the model may be seconds old: read clearance again.
        if not spec.base_motion:
            return HookDecision(HookAction.PASS, hook=self.name)
        try:
            clearance = self._read_clearance()
        except Exception as err:  # an unreadable sensor must block, not crash the task
            logger.exception("reading base clearance failed")
            return _block(f"base motion blocked: base clearance could not be read ({type(err).__name__})")
        if clearance is None:
            return _block("base motion blocked: no base clearance reading is available")
        if not clearance.usable:
            if clearance.age_s is None and clearance.note:
                # nothing ever arrived: say which topic, not "stale (unknown age)"
                return _block(f"base motion blocked: no base clearance reading: {clearance.note}")
            age = "unknown age" if clearance.age_s is None else f"{clearance.age_s:.2f} s old"
            why = f"; {clearance.note}" if clearance.note else ""
            return _block(f"base motion blocked: base clearance reading is stale ({age}{why})")
        if spec.distance_argument is not None and spec.distance_argument in arguments:
            return self._translation(spec, arguments, clearance)
        return self._navigation(clearance)

    def _navigation(self, clearance: Clearance) -> HookDecision:
        clear = [d for d in DIRECTIONS if (clearance.get(d) or 0.0) > self._margin_m]
        if not clear:
            return _block(
                f"base motion blocked: no direction has more than the {self._margin_m:.2f} m "
                f"safety margin free ({describe_clearance(clearance)})"
            )
        return HookDecision(HookAction.PASS, hook=self.name)

    def _translation(self, spec: ToolSpec, arguments: dict[str, Any], clearance: Clearance) -> HookDecision:
        key = spec.distance_argument
        assert key is not None  # checked by the caller
        distance = arguments[key]
        if isinstance(distance, bool) or not isinstance(distance, int | float) or not math.isfinite(distance):
            return _block(f"base motion blocked: {key!r} must be a finite number of metres, got {distance!r}")
        direction, problem = self._direction(spec, arguments)
        if problem is not None:
            return _block(f"base motion blocked: {problem}")
        assert direction is not None
        if distance < 0 and not spec.signed_distance:
            # A server may read |distance| toward ``direction`` or the sign as the opposite
            # way: refusing is the only reading that cannot move the base unchecked.
            return _block(
                f"base motion blocked: {key!r} must not be negative ({distance!r}); "
                f"give a positive distance and the direction to move"
            )
        heading = direction if distance >= 0 else _OPPOSITE[direction]
        # What the server receives is exactly what was checked: the canonical direction
        # word, and with a direction argument a non-negative distance toward ``heading``.
        checked = dict(arguments)
        if spec.direction_argument is not None:
            checked[spec.direction_argument] = heading
            if distance < 0:
                checked[key] = -distance
        if distance == 0:
            return self._pass_or_rewrite(arguments, checked, "")
        free = clearance.get(heading)
        if free is None or math.isnan(free):
            # a source that gave nothing usable is the likely reason the direction is unknown
            why = f" ({clearance.note})" if clearance.note else ""
            return _block(f"base motion blocked: clearance {heading} is unknown{why}")
        admissible = free - self._margin_m
        if admissible <= 0:
            return _block(
                f"base motion blocked: {free:.2f} m free {heading}, not more than the "
                f"{self._margin_m:.2f} m safety margin"
            )
        limit = min(admissible, self._max_translation_m)
        requested = abs(float(distance))
        if requested <= limit:
            return self._pass_or_rewrite(arguments, checked, "")
        # Round down (to the millimetre, or the metre for integer arguments) so the rewrite
        # never exceeds the admissible distance and keeps the argument's JSON type. The tiny
        # slack absorbs float noise such as 0.3 - 0.1 = 0.19999999999999998.
        unit = 1.0 if isinstance(distance, int) else 0.001
        admitted = math.floor(limit / unit + 1e-6) * unit
        admitted = round(admitted, 3)
        if admitted <= 0:
            return _block(f"base motion blocked: only {limit:.3f} m admissible {heading}")
        if admissible <= self._max_translation_m:
            why = f"{free:.2f} m free {heading} minus {self._margin_m:.2f} m margin"
        else:
            why = f"max_translation_m is {self._max_translation_m:.2f} m"
        magnitude = math.copysign(admitted, checked[key])
        checked[key] = int(magnitude) if isinstance(distance, int) else magnitude
        reason = (
            f"translation {heading} clamped: requested {requested:.3f} m, admitted {admitted:.3f} m ({why})"
        )
        return HookDecision(HookAction.REWRITE, arguments=checked, reason=reason, hook=self.name)

    def _pass_or_rewrite(
        self, original: dict[str, Any], checked: dict[str, Any], reason: str
    ) -> HookDecision:
        if checked == original and all(type(checked[k]) is type(original[k]) for k in original):
            return HookDecision(HookAction.PASS, hook=self.name)
        return HookDecision(
            HookAction.REWRITE,
            arguments=checked,
            reason=reason or "translation arguments rewritten to the checked direction and distance",
            hook=self.name,
        )

    @staticmethod
    def _direction(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[str | None, str | None]:
        """(canonical direction, None) or (None, why it is refused)."""
        if spec.direction_argument is None:
            # No direction argument: the tool translates along its own forward axis.
            return "forward", None
        if spec.direction_argument not in arguments:
            return None, f"{spec.direction_argument!r} is missing; use one of {', '.join(DIRECTIONS)}"
        raw = arguments[spec.direction_argument]
        word = raw.strip().lower() if isinstance(raw, str) else None
        word = _ALIASES.get(word, word) if word is not None else None
        if word not in DIRECTIONS:
            return None, f"unknown direction {raw!r}; use one of {', '.join(DIRECTIONS)}"
        return word, None
