"""Observation subsystem: what the model sees before each decision.

The contracts are re-exported here. The decode/resize/summarise pipeline is
``harness_ros.observation.pipeline``, imported on demand because it loads OpenCV.
"""

from __future__ import annotations

from harness_ros.observation.contracts import (
    DIRECTIONS,
    Clearance,
    DepthRegion,
    DepthSummary,
    Observation,
    ObservationSource,
    ViewImage,
)

__all__ = [
    "DIRECTIONS",
    "Clearance",
    "DepthRegion",
    "DepthSummary",
    "Observation",
    "ObservationSource",
    "ViewImage",
]
