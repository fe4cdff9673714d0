"""Observation contracts: what the model sees before each decision.

Camera views arrive as budgeted JPEG bytes with their age; depth and clearance
are in metres. Sources (the ROS layer, a replayed bag, a test fake) implement
``ObservationSource``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "DEPTH_COLUMNS",
    "DEPTH_REGION_NAMES",
    "DEPTH_ROWS",
    "DIRECTIONS",
    "Clearance",
    "DepthRegion",
    "DepthSummary",
    "FirstFrameSource",
    "Observation",
    "ObservationSource",
    "ViewImage",
]

DIRECTIONS: tuple[str, ...] = ("forward", "left", "backward", "right")

DEPTH_ROWS: tuple[str, ...] = ("top", "middle", "bottom")
DEPTH_COLUMNS: tuple[str, ...] = ("left", "centre", "right")
DEPTH_REGION_NAMES: tuple[str, ...] = tuple(f"{row}-{col}" for row in DEPTH_ROWS for col in DEPTH_COLUMNS)
"""Names of the 3x3 depth regions, row-major, as seen in the image (top-left first)."""


@dataclass(frozen=True)
class ViewImage:
    """One Model-Visible View. ``jpeg`` is empty when the view is missing."""

    name: str
    jpeg: bytes
    width: int
    height: int
    stamp: float | None
    age_s: float | None
    stale: bool
    missing: bool = False

    def freshness_label(self) -> str:
        if self.stamp is None and self.age_s is None:
            # Never had a frame: the camera has not started (or does not reach the harness),
            # which is not the same as one that stopped (stale).
            return "not started (no frame received yet)"
        if self.missing or self.age_s is None:
            return "missing (the last frame was unusable)"
        label = f"age {self.age_s:.2f} s"
        return f"STALE ({label})" if self.stale else label


@dataclass(frozen=True)
class Clearance:
    """Free distance from the base footprint edge in each direction, metres (None = unknown)."""

    forward: float | None
    left: float | None
    backward: float | None
    right: float | None
    stamp: float | None
    age_s: float | None
    stale: bool
    note: str | None = None
    """Sources that gave nothing usable, for messages: ``nothing received on '/scan' (since
    start-up 3.0 s ago)``, ``'/sonar' is stale (1.20 s old)``; None when all were fresh."""

    def get(self, direction: str) -> float | None:
        return getattr(self, direction) if direction in DIRECTIONS else None

    @property
    def usable(self) -> bool:
        """True when the reading may be trusted for base motion."""
        return not self.stale and self.age_s is not None


@dataclass(frozen=True)
class DepthRegion:
    name: str
    nearest_m: float | None
    median_m: float | None


@dataclass(frozen=True)
class DepthSummary:
    regions: tuple[DepthRegion, ...]
    stamp: float | None
    age_s: float | None
    stale: bool
    preview_jpeg: bytes = b""


@dataclass(frozen=True)
class Observation:
    time: float
    views: tuple[ViewImage, ...] = ()
    depth: DepthSummary | None = None
    clearance: Clearance | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def view(self, name: str) -> ViewImage | None:
        return next((v for v in self.views if v.name == name), None)


class ObservationSource(Protocol):
    def now(self) -> float:
        """Current time on the source's clock (ROS time under use_sim_time)."""
        ...

    def observe(self) -> Observation:
        """The latest observation, built at call time."""
        ...

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        """An observation whose frames are newer than ``after`` (bounded wait; returns
        whatever is there at the deadline, with stale labels)."""
        ...

    def clearance(self) -> Clearance | None:
        """A fresh read of base clearance (for the safety filter)."""
        ...


@runtime_checkable
class FirstFrameSource(Protocol):
    """A source that can wait for its first frames (the ROS source: cameras start late)."""

    def wait_for_first_frames(self, timeout_s: float) -> bool:
        """Block until every view (and depth) delivered a first frame, at most until
        ``timeout_s`` after the source subscribed; False when one is still missing."""
        ...
