"""Observation extras from plugins: one line of text each, added to every observation."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from harness_ros.observation.contracts import Clearance, FirstFrameSource, Observation, ObservationSource
from harness_ros.plugins.contracts import ObservationExtra

__all__ = ["ObservationWithExtras"]

logger = logging.getLogger(__name__)

_MAX_EXTRA_CHARS = 300


class ObservationWithExtras:
    """An ObservationSource whose observations carry the plugins' extra lines as notes.

    Clearance is passed through untouched: extras are for the model, never for safety.
    """

    def __init__(self, source: ObservationSource, extras: Mapping[str, ObservationExtra]) -> None:
        self._source = source
        self._extras = dict(extras)

    def now(self) -> float:
        return self._source.now()

    def clearance(self) -> Clearance | None:
        return self._source.clearance()

    def observe(self) -> Observation:
        return self._with_extras(self._source.observe())

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self._with_extras(self._source.observe_after(after, timeout_s))

    def wait_for_first_frames(self, timeout_s: float) -> bool:
        source = self._source
        return source.wait_for_first_frames(timeout_s) if isinstance(source, FirstFrameSource) else True

    def _with_extras(self, observation: Observation) -> Observation:
        notes: list[str] = []
        for name, extra in self._extras.items():
            try:
                text = extra()
            except Exception as err:  # an extra's fault is a note, never a failed decision
                logger.exception("observation extra %r failed", name)
                notes.append(f"{name}: unavailable ({type(err).__name__})")
                continue
            if text:
                line = " ".join(str(text).split())
                notes.append(f"{name}: {line[:_MAX_EXTRA_CHARS]}")
        if not notes:
            return observation
        return dataclasses.replace(observation, notes=(*observation.notes, *notes))

    def __getattr__(self, name: str) -> object:
        # The ROS source has extras of its own (stats, destroy, wait_for_messages).
        return getattr(self._source, name)
