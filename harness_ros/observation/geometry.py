"""Clearance geometry: where each clearance sensor sits and what the base sweeps.

Pure numpy, no ROS. Frames follow REP 103 (base frame: x forward, y left, yaw about z).

A sensor reports distances along rays from its own origin. Clearance is asked about the
base: how far the footprint can translate forward, left, backward or right before it
touches something. So every reading becomes a point in the base frame (the sensor's mount
applied), and each direction looks only at the points inside the corridor the footprint
sweeps when it moves that way: as wide as the footprint across the motion (its width
for forward/backward, its length for left/right), starting at the base centre. The
clearance of a direction is the smallest distance from the footprint edge to such a
point (for a circle ``|p| - r``, which never exceeds the distance the circle can travel;
for a rectangle the exact gap to its leading side).

A direction is unknown (None) unless enough of the readings that look down its corridor
are usable: ``min_valid_fraction`` of them and at least ``min_valid_readings``. A reading
looks down a corridor when its ray, within the sensor's maximum range, reaches the part
of the corridor beyond the footprint's leading edge. For a sensor at the base centre and
a circular footprint those are exactly the rays within 45 degrees of the direction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_ros.observation.contracts import DIRECTIONS

__all__ = [
    "DEFAULT_MIN_VALID_FRACTION",
    "DEFAULT_MIN_VALID_READINGS",
    "MOUNT_TOLERANCE_M",
    "MOUNT_TOLERANCE_RAD",
    "Footprint",
    "InsideReturns",
    "MountCheck",
    "SensorMount",
    "corridor_clearance",
    "inside_returns",
    "mount_from_transforms",
    "resolve_mount",
]

DEFAULT_MIN_VALID_FRACTION = 0.5
DEFAULT_MIN_VALID_READINGS = 3
MOUNT_TOLERANCE_M = 0.02
MOUNT_TOLERANCE_RAD = math.radians(2.0)
"""A mount from /tf_static further than this from the config's is reported."""

_AXES: Mapping[str, tuple[float, float]] = {
    "forward": (1.0, 0.0),
    "left": (0.0, 1.0),
    "backward": (-1.0, 0.0),
    "right": (0.0, -1.0),
}
"""Unit vector of each direction in the base frame."""

_EPS = 1e-9  # a ray through a corridor corner, or a point on its side, counts as inside
_SECTOR_COS = math.cos(math.pi / 4) - 1e-12  # +-45 degrees, edges inclusive


@dataclass(frozen=True)
class SensorMount:
    """A sensor's pose in the base frame, projected on the floor plane."""

    x_m: float = 0.0
    y_m: float = 0.0
    yaw_rad: float = 0.0
    upside_down: bool = False
    """z axis down: the sensor's angles run clockwise in the base frame."""

    def differs_from(self, other: SensorMount, *, tolerance_m: float, tolerance_rad: float) -> bool:
        yaw = abs((self.yaw_rad - other.yaw_rad + math.pi) % (2 * math.pi) - math.pi)
        moved = math.hypot(self.x_m - other.x_m, self.y_m - other.y_m) > tolerance_m
        return moved or yaw > tolerance_rad or self.upside_down != other.upside_down

    def base_angle(self, sensor_angle: Any) -> Any:
        """A ray's angle in the sensor frame -> its angle in the base frame."""
        return self.yaw_rad + (-sensor_angle if self.upside_down else sensor_angle)

    def describe(self) -> str:
        flipped = ", upside down" if self.upside_down else ""
        return f"x {self.x_m:.3f} m, y {self.y_m:.3f} m, yaw {math.degrees(self.yaw_rad):.1f} deg{flipped}"


@dataclass(frozen=True)
class Footprint:
    """The base outline, centred on the base centre: a circle or an axis-aligned rectangle."""

    length_m: float
    """Extent along x (the diameter for a circle)."""
    width_m: float
    """Extent along y (the diameter for a circle)."""
    circular: bool

    def __post_init__(self) -> None:
        if not (self.length_m > 0 and self.width_m > 0):
            raise ValueError(f"footprint extents must be positive, got {self.length_m!r} x {self.width_m!r}")

    @classmethod
    def circle(cls, radius_m: float) -> Footprint:
        return cls(2 * radius_m, 2 * radius_m, circular=True)

    @classmethod
    def rectangle(cls, length_m: float, width_m: float) -> Footprint:
        return cls(length_m, width_m, circular=False)

    @classmethod
    def from_config(cls, safety: Any) -> Footprint:
        """From a ``SafetyConfig`` (read by attribute: ``footprint_shape`` and its sizes)."""
        if getattr(safety, "footprint_shape", "circle") == "rectangle":
            return cls.rectangle(float(safety.footprint_length_m), float(safety.footprint_width_m))
        return cls.circle(float(safety.footprint_radius_m))

    def describe(self) -> str:
        if self.circular:
            return f"circle of radius {self.length_m / 2:.3f} m"
        return f"rectangle {self.length_m:.3f} m long by {self.width_m:.3f} m wide"

    def extents(self, direction: str) -> tuple[float, float]:
        """(distance from the centre to the leading edge, half width of the swept corridor)."""
        if direction in ("forward", "backward"):
            return self.length_m / 2, self.width_m / 2
        return self.width_m / 2, self.length_m / 2

    def contains(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Points on or inside the outline."""
        inside: np.ndarray
        if self.circular:
            inside = np.hypot(x, y) <= self.length_m / 2 + _EPS
        else:
            inside = (np.abs(x) <= self.length_m / 2 + _EPS) & (np.abs(y) <= self.width_m / 2 + _EPS)
        return inside


def _looks_down(
    origin: tuple[np.ndarray, np.ndarray],
    heading: tuple[np.ndarray, np.ndarray],
    reach: np.ndarray,
    *,
    front: Any,
    half: Any,
) -> np.ndarray:
    """Rays (origin s0, l0; direction cs, cl in corridor coordinates) that, within ``reach``,
    pass a point with s >= front and |l| <= half: they see the corridor beyond the footprint."""
    (s0, l0), (cs, cl) = origin, heading
    with np.errstate(divide="ignore", invalid="ignore"):
        # t where s >= front: [ahead_lo, ahead_hi]
        t_front = (front - s0) / cs
        ahead_lo = np.where(cs > _EPS, t_front, np.where(s0 >= front - _EPS, 0.0, np.inf))
        ahead_lo = np.where(cs < -_EPS, np.where(s0 >= front - _EPS, 0.0, np.inf), ahead_lo)
        ahead_hi = np.where(cs < -_EPS, t_front, np.inf)
        # t where |l| <= half: [band_lo, band_hi]
        t_a = (-half - l0) / cl
        t_b = (half - l0) / cl
        moving = np.abs(cl) > _EPS
        inside = np.abs(l0) <= half + _EPS
        band_lo = np.where(moving, np.minimum(t_a, t_b), np.where(inside, 0.0, np.inf))
        band_hi = np.where(moving, np.maximum(t_a, t_b), np.where(inside, np.inf, -np.inf))
    lo = np.maximum(np.maximum(ahead_lo, band_lo), 0.0)
    hi = np.minimum(np.minimum(ahead_hi, band_hi), reach)
    sees: np.ndarray = lo <= hi + _EPS
    return sees


def corridor_clearance(
    footprint: Footprint,
    *,
    origin_x: Any,
    origin_y: Any,
    angle: Any,
    distance: Any,
    reach: Any,
    min_valid_fraction: float = DEFAULT_MIN_VALID_FRACTION,
    min_valid_readings: int = DEFAULT_MIN_VALID_READINGS,
) -> dict[str, float | None]:
    """Free distance beyond the footprint edge in each direction, from rays in the base frame.

    Per reading: its ray's origin and angle in the base frame, the distance known free
    along it (NaN: the reading says nothing) and how far the sensor could see (``reach``,
    its maximum range). Arrays broadcast against each other. A point inside the footprint
    (something touching the base, or the base itself) blocks the direction it lies in
    (within 45 degrees of it, seen from the base centre): there is no corridor to measure.
    """
    ox, oy, theta, dist, reach_ = np.broadcast_arrays(
        *(np.asarray(value, dtype=np.float64) for value in (origin_x, origin_y, angle, distance, reach))
    )
    cos_t, sin_t = np.cos(theta), np.sin(theta)
    valid = np.isfinite(dist)
    hit = valid.copy()
    px = np.where(valid, ox + dist * cos_t, 0.0)
    py = np.where(valid, oy + dist * sin_t, 0.0)
    inside = footprint.contains(px, py) & valid
    norm = np.hypot(px, py)
    # All four directions at once, one row each: numpy's per-call cost, not the beams,
    # dominated a loop over the directions (a 360-beam scan took about 0.7 ms).
    axes = np.array([_AXES[direction] for direction in DIRECTIONS], dtype=np.float64)
    ax, ay = axes[:, :1], axes[:, 1:]
    extents = np.array([footprint.extents(direction) for direction in DIRECTIONS], dtype=np.float64)
    front, half = extents[:, :1], extents[:, 1:]
    # corridor coordinates: s along the direction, l to its left
    origin = (ox * ax + oy * ay, -ox * ay + oy * ax)
    heading = (cos_t * ax + sin_t * ay, -cos_t * ay + sin_t * ax)
    looking = _looks_down(origin, heading, reach_, front=front, half=half)
    n_looking = np.count_nonzero(looking, axis=1)
    n_valid = np.count_nonzero(looking & valid, axis=1)
    s, lateral = px * ax + py * ay, -px * ay + py * ax
    ahead = hit & ~inside & (s > 0.0) & (np.abs(lateral) <= half + _EPS)
    touching = np.any(inside & (s >= _SECTOR_COS * norm), axis=1)
    # circle: distance from its edge (never more than it can travel); rectangle: exact
    edge_gap = (norm if footprint.circular else s) - front
    gaps = np.min(np.where(ahead, edge_gap, np.inf), axis=1, initial=np.inf)
    result: dict[str, float | None] = {}
    for row, direction in enumerate(DIRECTIONS):
        looked, usable = int(n_looking[row]), int(n_valid[row])
        if looked == 0 or usable < min_valid_readings or usable < min_valid_fraction * looked - _EPS:
            result[direction] = None
        elif touching[row]:
            result[direction] = 0.0
        elif not np.isfinite(gaps[row]):
            result[direction] = None  # seen only beside the corridor: its length is unknown
        else:
            result[direction] = max(0.0, float(gaps[row]))
    return result


@dataclass(frozen=True)
class InsideReturns:
    """Readings that end inside the footprint: the robot's own body (a mast, a bumper the
    sensor sees) or something touching it. Each direction within 45 degrees of one of them
    reads 0 m (``corridor_clearance``)."""

    count: int
    nearest_m: float
    farthest_m: float
    """Distances of those points from the base centre."""
    directions: tuple[str, ...]
    """The directions they block, in ``DIRECTIONS`` order."""


def inside_returns(
    footprint: Footprint, *, origin_x: Any, origin_y: Any, angle: Any, distance: Any
) -> InsideReturns | None:
    """The readings (rays in the base frame, as ``corridor_clearance`` takes them) that end
    inside the footprint, or None when none does."""
    ox, oy, theta, dist = np.broadcast_arrays(
        *(np.asarray(value, dtype=np.float64) for value in (origin_x, origin_y, angle, distance))
    )
    valid = np.isfinite(dist)
    px = np.where(valid, ox + dist * np.cos(theta), np.inf)
    py = np.where(valid, oy + dist * np.sin(theta), np.inf)
    inside = footprint.contains(px, py) & valid
    if not np.any(inside):
        return None
    x, y = px[inside], py[inside]
    norm = np.hypot(x, y)
    blocked = tuple(
        direction
        for direction in DIRECTIONS
        if np.any(x * _AXES[direction][0] + y * _AXES[direction][1] >= _SECTOR_COS * norm)
    )
    return InsideReturns(int(np.count_nonzero(inside)), float(norm.min()), float(norm.max()), blocked)


# --------------------------------------------------------------------------- transforms


def _quat_to_matrix(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    n = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if n == 0.0 or not math.isfinite(n):
        raise ValueError("rotation quaternion is zero or not finite")
    x, y, z, w = qx / n, qy / n, qz / n, qw / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def mount_from_transforms(
    transforms: Iterable[Any], base_frame: str, sensor_frame: str
) -> SensorMount | None:
    """The pose of ``sensor_frame`` in ``base_frame`` from geometry_msgs/TransformStamped
    messages (``/tf_static``), following parents up to the base; None when the chain does
    not reach it. A sensor whose z axis points down is marked ``upside_down``."""
    parents: dict[str, Any] = {}
    for transform in transforms:
        parents[str(transform.child_frame_id).lstrip("/")] = transform
    base, frame = base_frame.lstrip("/"), sensor_frame.lstrip("/")
    rotation, translation = np.eye(3), np.zeros(3)
    seen: set[str] = set()
    while frame != base:
        transform = parents.get(frame)
        if transform is None or frame in seen:
            return None
        seen.add(frame)
        t, q = transform.transform.translation, transform.transform.rotation
        parent_rotation = _quat_to_matrix(float(q.x), float(q.y), float(q.z), float(q.w))
        # p_parent = R p_child + t: compose so that (rotation, translation) maps sensor -> parent
        translation = parent_rotation @ translation + np.array([float(t.x), float(t.y), float(t.z)])
        rotation = parent_rotation @ rotation
        frame = str(transform.header.frame_id).lstrip("/")
    yaw = math.atan2(rotation[1, 0], rotation[0, 0])
    upside_down = bool(rotation[2, 2] < 0.0)
    return SensorMount(float(translation[0]), float(translation[1]), yaw, upside_down=upside_down)


@dataclass(frozen=True)
class MountCheck:
    """Which mount a reading is placed with, and what its frames say about it."""

    mount: SensorMount
    """The mount clearance uses: /tf_static's when it knows the frame, else the config's."""
    configured: SensorMount
    found: SensorMount | None
    """The mount the frames give (None: they say nothing)."""
    source: str
    """Where ``found`` comes from, for the report."""
    final: bool
    """False while /tf_static may still bring the frame (check again later)."""

    @property
    def mismatch(self) -> bool:
        """The frames place the sensor elsewhere than the config does."""
        return self.found is not None and self.found.differs_from(
            self.configured, tolerance_m=MOUNT_TOLERANCE_M, tolerance_rad=MOUNT_TOLERANCE_RAD
        )


def resolve_mount(
    configured: SensorMount, *, frame_id: str, base_frame: str, transforms: Iterable[Any] | None
) -> MountCheck:
    """The mount of a reading stamped in ``frame_id``.

    With ``transforms`` (the /tf_static messages; None when tf2_msgs is not installed)
    the chain from ``base_frame`` to the frame wins over ``configured``; without them the
    config is used, and a reading stamped in the base frame itself says the mount is zero.
    """
    frame, base = frame_id.lstrip("/"), base_frame.lstrip("/")
    if transforms is not None and frame:
        found = mount_from_transforms(transforms, base, frame)
        if found is not None:
            return MountCheck(found, configured, found, "/tf_static", final=True)
        return MountCheck(configured, configured, None, "/tf_static", final=False)
    if frame == base:
        source = f"its frame_id {frame!r} (the base frame itself)"
        return MountCheck(configured, configured, SensorMount(), source, final=True)
    return MountCheck(configured, configured, None, "the config", final=True)
