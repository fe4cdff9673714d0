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
            age = "unknown age" if clearance.age_s is None else f"{clearance.age_s:.2f} s old"
            return _block(f"base motion blocked: base clearance reading is stale ({age})")
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
        direction = self._direction(spec, arguments)
        if direction is None:
            raw = arguments.get(spec.direction_argument or "")
            return _block(
                f"base motion blocked: unknown direction {raw!r}; use one of {', '.join(DIRECTIONS)}"
            )
        if distance == 0:
            return HookDecision(HookAction.PASS, hook=self.name)
        heading = direction if distance > 0 else _OPPOSITE[direction]
        free = clearance.get(heading)
        if free is None or math.isnan(free):
            return _block(f"base motion blocked: clearance {heading} is unknown")
        admissible = free - self._margin_m
        if admissible <= 0:
            return _block(
                f"base motion blocked: {free:.2f} m free {heading}, not more than the "
                f"{self._margin_m:.2f} m safety margin"
            )
        limit = min(admissible, self._max_translation_m)
        requested = abs(float(distance))
        if requested <= limit:
            return HookDecision(HookAction.PASS, hook=self.name)
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
        signed = math.copysign(admitted, distance)
        rewritten = {**arguments, key: int(signed) if isinstance(distance, int) else signed}
        reason = (
            f"translation {heading} clamped: requested {requested:.3f} m, admitted {admitted:.3f} m ({why})"
        )
        return HookDecision(HookAction.REWRITE, arguments=rewritten, reason=reason, hook=self.name)

    @staticmethod
    def _direction(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
        if spec.direction_argument is None or spec.direction_argument not in arguments:
            return "forward"
        raw = arguments[spec.direction_argument]
        if not isinstance(raw, str):
            return None
        word = raw.strip().lower()
        word = _ALIASES.get(word, word)
        return word if word in DIRECTIONS else None
