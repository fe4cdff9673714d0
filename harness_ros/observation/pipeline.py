"""Turn raw sensor messages into what the model sees: budgeted JPEGs and metres.

Pure numpy + OpenCV. Messages are read by attribute only (``encoding``,
``height``, ``width``, ``step``, ``is_bigendian``, ``data``; ``format`` for a
CompressedImage; ``range``/``min_range``/``max_range`` for a Range), so rclpy
messages, rosbags messages and plain test objects all work and this module
never imports ROS.

Range conventions follow REP 117: NaN is an error (ignored), ``+inf`` means
"nothing within range" (free up to the sensor's maximum), ``-inf`` means
"closer than the minimum range" (no clearance). Finite readings outside
``[range_min, range_max]`` are ignored. Clearance geometry (sensor mounts, the
footprint's swept corridors) is in ``harness_ros.observation.geometry``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol

import cv2
import numpy as np
from rosbags.image import ImageError, compressed_image_to_cvimage, message_to_cvimage

from harness_ros.errors import FrameDecodeError
from harness_ros.observation.contracts import (
    DEPTH_COLUMNS,
    DEPTH_REGION_NAMES,
    DEPTH_ROWS,
    DIRECTIONS,
    DepthRegion,
    sensor_text,
)
from harness_ros.observation.geometry import (
    DEFAULT_MIN_VALID_FRACTION,
    DEFAULT_MIN_VALID_READINGS,
    Footprint,
    SensorMount,
    corridor_clearance,
)

__all__ = [
    "DEFAULT_MAX_DECODE_PIXELS",
    "DEPTH_REGION_NAMES",
    "DIRECTION_ANGLES_RAD",
    "FrameDecodeError",
    "RangeLike",
    "clearance_from_range",
    "clearance_from_ranges",
    "clearance_from_scan",
    "compressed_dimensions",
    "decode_image",
    "depth_to_metres",
    "depth_to_millimetres",
    "encode_jpeg",
    "fit_to_budget",
    "merge_clearance",
    "render_depth_preview",
    "rotate_image",
    "rotate_regions",
    "summarize_depth",
    "summarize_depth_mm",
]

_ROWS = DEPTH_ROWS
_COLUMNS = DEPTH_COLUMNS

DIRECTION_ANGLES_RAD: Mapping[str, float] = {
    "forward": 0.0,
    "left": math.pi / 2,
    "backward": math.pi,
    "right": -math.pi / 2,
}
"""Centre of each clearance sector in the robot frame (REP 103: x forward, y left)."""

_DEPTH_MM_ENCODINGS = frozenset({"16UC1", "mono16"})
_DEPTH_M_ENCODINGS = frozenset({"32FC1"})

# Bytes per pixel of the raw encodings whose rows we may need to un-pad.
_BYTES_PER_PIXEL: Mapping[str, int] = {
    "mono8": 1,
    "8UC1": 1,
    "mono16": 2,
    "16UC1": 2,
    "32FC1": 4,
    "rgb8": 3,
    "bgr8": 3,
    "8UC3": 3,
    "rgba8": 4,
    "bgra8": 4,
    "8UC4": 4,
    "rgb16": 6,
    "bgr16": 6,
    "rgba16": 8,
    "bgra16": 8,
}


class RangeLike(Protocol):
    """The fields of sensor_msgs/Range that clearance needs."""

    range: float
    min_range: float
    max_range: float


# --------------------------------------------------------------------------- images


def _is_compressed(msg: Any) -> bool:
    return hasattr(msg, "format")


def _unpadded(msg: Any) -> Any:
    """The message itself, or a stand-in without row padding.

    rosbags-image assumes ``step == width * bytes_per_pixel``; drivers may pad rows.
    Also checks the buffer size, so a truncated frame is a clear error, not a numpy one.
    """
    encoding = str(msg.encoding)
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    if height <= 0 or width <= 0:
        raise FrameDecodeError(f"image with encoding {sensor_text(encoding)} is empty ({width}x{height})")
    bpp = _BYTES_PER_PIXEL.get(encoding)
    if bpp is None:
        return msg  # exotic encodings (bayer, yuv): trust rosbags-image
    row = width * bpp
    step = step or row
    size = len(msg.data)
    if step < row or size < step * height:
        raise FrameDecodeError(
            f"image with encoding {sensor_text(encoding)} {width}x{height} needs {row * height} bytes "
            f"with step {step}, got {size} bytes"
        )
    if step == row:
        return msg
    rows = np.frombuffer(msg.data, dtype=np.uint8, count=step * height).reshape(height, step)
    return SimpleNamespace(
        encoding=encoding,
        height=height,
        width=width,
        step=row,
        is_bigendian=msg.is_bigendian,
        data=np.ascontiguousarray(rows[:, :row]).tobytes(),
    )


DEFAULT_MAX_DECODE_PIXELS = 4096 * 3072
"""Largest compressed image decoded at full size (12.6 MP, about 38 MB as BGR)."""

_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # start-of-frame markers
_REDUCED_JPEG = (
    (2, cv2.IMREAD_REDUCED_COLOR_2),
    (4, cv2.IMREAD_REDUCED_COLOR_4),
    (8, cv2.IMREAD_REDUCED_COLOR_8),
)


def compressed_dimensions(data: bytes) -> tuple[str, int, int] | None:
    """(kind, width, height) declared by a PNG or JPEG header, without decoding; None if unknown.

    A 35 KB PNG can declare 6000x6000 pixels: the header is read first so such a frame is
    refused or decoded reduced, never expanded to hundreds of megabytes.
    """
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        return "png", int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:2] != b"\xff\xd8":
        return None
    index = 2
    size = len(data)
    while index + 4 <= size:
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            index += 2
            continue
        length = int.from_bytes(data[index + 2 : index + 4], "big")
        if marker in _JPEG_SOF:
            if index + 9 > size:
                return None
            height = int.from_bytes(data[index + 5 : index + 7], "big")
            width = int.from_bytes(data[index + 7 : index + 9], "big")
            return "jpeg", width, height
        if length < 2:
            return None
        index += 2 + length
    return None


def _decode_compressed(msg: Any, max_pixels: int) -> np.ndarray:
    data = bytes(msg.data)
    header = compressed_dimensions(data)
    if header is None:
        raise FrameDecodeError(
            f"compressed image (format {sensor_text(msg.format)}) is neither PNG nor JPEG: its size "
            "cannot be checked before decoding"
        )
    kind, width, height = header
    pixels = width * height
    if pixels <= 0:
        raise FrameDecodeError(f"{kind} header declares an empty image ({width}x{height})")
    if pixels <= max_pixels:
        return compressed_image_to_cvimage(msg)
    if kind == "jpeg":
        # libjpeg scales while decoding (DCT scaling): a reduced decode never allocates the full frame.
        for factor, flag in _REDUCED_JPEG:
            if pixels / (factor * factor) <= max_pixels:
                img = cv2.imdecode(np.frombuffer(data, np.uint8), flag)
                if img is None:
                    raise FrameDecodeError(
                        f"cannot decode compressed image with format {sensor_text(msg.format)}"
                    )
                return img
    raise FrameDecodeError(
        f"{kind} header declares {width}x{height} = {pixels} pixels, more than "
        f"observations.max_decode_pixels ({max_pixels}); refused without decoding"
    )


def decode_image(msg: Any, *, max_pixels: int = DEFAULT_MAX_DECODE_PIXELS) -> np.ndarray:
    """A sensor_msgs/Image or CompressedImage as a BGR uint8 array (H, W, 3).

    A compressed frame whose header declares more than ``max_pixels`` is decoded reduced
    (JPEG) or refused (PNG, unknown formats): decoding cost is bounded by the header.
    """
    try:
        if _is_compressed(msg):
            if len(msg.data) == 0:
                raise FrameDecodeError(f"compressed image (format {sensor_text(msg.format)}) has no data")
            img = _decode_compressed(msg, max_pixels)
        else:
            img = message_to_cvimage(_unpadded(msg), "bgr8")
    except (ImageError, cv2.error, TypeError, AssertionError) as err:
        # rosbags asserts on undecodable compressed data; numpy raises TypeError on short buffers
        kind = (
            f"format {sensor_text(msg.format)}"
            if _is_compressed(msg)
            else f"encoding {sensor_text(msg.encoding)}"
        )
        detail = sensor_text(str(err) or type(err).__name__, 200, quote=False)
        raise FrameDecodeError(f"cannot decode image with {kind}: {detail}") from None
    if img is None:
        raise FrameDecodeError(f"cannot decode compressed image with format {sensor_text(msg.format)}")
    img = np.asarray(img)
    if img.dtype != np.uint8:
        # a 16-bit PNG in a CompressedImage: scale to 8 bits like rosbags does for mono16
        img = (img.astype(np.float32) * (255.0 / 65535.0)).astype(np.uint8)
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    elif img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
    return np.ascontiguousarray(img)


_ROTATIONS: Mapping[int, int] = {
    90: cv2.ROTATE_90_CLOCKWISE,
    180: cv2.ROTATE_180,
    270: cv2.ROTATE_90_COUNTERCLOCKWISE,
}


def rotate_image(img: np.ndarray, degrees: int) -> np.ndarray:
    """``img`` turned ``degrees`` (0, 90, 180 or 270) clockwise: a camera mounted sideways
    made upright. Works on colour, grey and depth (any dtype) arrays."""
    if degrees == 0:
        return img
    if degrees not in _ROTATIONS:
        raise ValueError(f"rotation must be 0, 90, 180 or 270 degrees, got {degrees!r}")
    return np.ascontiguousarray(cv2.rotate(img, _ROTATIONS[degrees]))


def rotate_regions(regions: Sequence[DepthRegion], degrees: int) -> tuple[DepthRegion, ...]:
    """The 3x3 depth regions of an image, as they lie once the image is turned ``degrees``
    clockwise (``rotate_image``): each region's values move with its pixels and it takes the
    name of the place it lands in, so "left" is the left of the turned image."""
    if degrees == 0 or len(regions) != len(DEPTH_REGION_NAMES):
        return tuple(regions)
    if degrees not in _ROTATIONS:
        raise ValueError(f"rotation must be 0, 90, 180 or 270 degrees, got {degrees!r}")
    by_name = {region.name: region for region in regions}
    grid = np.empty((len(_ROWS), len(_COLUMNS)), dtype=object)
    for r, row in enumerate(_ROWS):
        for c, col in enumerate(_COLUMNS):
            grid[r, c] = by_name[f"{row}-{col}"]
    turned = np.rot90(grid, k=-(degrees // 90))  # k < 0: clockwise, as cv2.ROTATE_90_CLOCKWISE
    return tuple(
        DepthRegion(f"{row}-{col}", turned[r, c].nearest_m, turned[r, c].median_m)
        for r, row in enumerate(_ROWS)
        for c, col in enumerate(_COLUMNS)
    )


def fit_to_budget(img: np.ndarray, pixel_budget: int) -> np.ndarray:
    """Downscale so that width * height <= pixel_budget, keeping the aspect ratio.

    Never upscales. INTER_AREA: the right filter for shrinking (no aliasing).
    """
    if pixel_budget <= 0:
        raise ValueError(f"pixel_budget must be positive, got {pixel_budget!r}")
    height, width = img.shape[:2]
    if width * height <= pixel_budget:
        return img
    scale = math.sqrt(pixel_budget / (width * height))
    new_w = max(1, math.floor(width * scale))
    new_h = max(1, math.floor(height * scale))
    while new_w * new_h > pixel_budget:  # guard against rounding in sqrt
        if new_w >= new_h:
            new_w -= 1
        else:
            new_h -= 1
    return cv2.resize(img, (new_w, new_h), interpolation=cv2.INTER_AREA)


def encode_jpeg(img: np.ndarray, quality: int) -> bytes:
    """JPEG bytes of a BGR (or grey) uint8 image."""
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in [1, 100], got {quality!r}")
    ok, buffer = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise FrameDecodeError(f"cannot JPEG-encode an image of shape {img.shape} and type {img.dtype}")
    return buffer.tobytes()


# --------------------------------------------------------------------------- depth


_COMPRESSED_DEPTH_HEADER = struct.Struct("<iff")
"""compressed_depth_image_transport's ConfigHeader: format, then two float quantisation parameters."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_DEPTH_DECODE_PIXELS = 4096 * 3072
"""A compressedDepth PNG declaring more pixels than this is refused before decoding."""


def _depth_encoding(msg: Any) -> str:
    """The depth encoding: a raw Image's ``encoding``, or what a compressedDepth format names
    before its ``;`` (``"16UC1; compressedDepth png"``)."""
    if _is_compressed(msg):
        return str(msg.format).split(";", 1)[0].strip()
    return str(msg.encoding)


def decode_compressed_depth(msg: Any, *, max_pixels: int = MAX_DEPTH_DECODE_PIXELS) -> np.ndarray:
    """A sensor_msgs/CompressedImage of the image_transport ``compressedDepth`` plugin as raw depth.

    The data is a 12-byte header then a 16-bit PNG: for 16UC1/mono16 the millimetres
    themselves (returned as uint16); for 32FC1 quantised inverse depth, returned as float32
    metres (``a / (v - b)`` with the header's ``a, b``; 0 is no reading, NaN). The PNG header
    is checked against ``max_pixels`` before anything is decoded.
    """
    fmt = str(msg.format)
    encoding, _, compression = fmt.partition(";")
    encoding = encoding.strip()
    if compression and "compressedDepth" not in compression:
        raise FrameDecodeError(
            f"depth CompressedImage format {sensor_text(fmt)} is not the compressedDepth transport"
        )
    if "rvl" in compression:
        raise FrameDecodeError(
            f"depth format {sensor_text(fmt)}: RVL is not supported; set the publisher's format to png"
        )
    if encoding not in _DEPTH_MM_ENCODINGS | _DEPTH_M_ENCODINGS:
        raise FrameDecodeError(
            f"compressedDepth encoding {sensor_text(encoding)} is not supported (use 16UC1 or 32FC1)"
        )
    data = bytes(msg.data)
    size = _COMPRESSED_DEPTH_HEADER.size
    png = data[size:]
    if len(png) < 24 or png[:8] != _PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise FrameDecodeError(
            f"compressedDepth frame ({sensor_text(fmt)}, {len(data)} bytes) holds no PNG after its header"
        )
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    if width * height > max_pixels:
        raise FrameDecodeError(
            f"compressedDepth PNG declares {width}x{height} pixels, more than {max_pixels}; "
            "refused without decoding"
        )
    raw = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED)
    if raw is None or raw.dtype != np.uint16 or raw.ndim != 2:
        kind = "undecodable" if raw is None else f"{raw.dtype} with shape {raw.shape}"
        raise FrameDecodeError(
            f"compressedDepth frame ({sensor_text(fmt)}) is not a one-channel 16-bit PNG: {kind}"
        )
    if encoding in _DEPTH_MM_ENCODINGS:
        return raw
    _, quant_a, quant_b = _COMPRESSED_DEPTH_HEADER.unpack(data[:size])
    depth = np.full(raw.shape, np.nan, dtype=np.float32)
    valid = raw != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        depth[valid] = np.float32(quant_a) / (raw[valid].astype(np.float32) - np.float32(quant_b))
    return depth


def _raw_depth(msg: Any) -> np.ndarray:
    if _is_compressed(msg):
        return decode_compressed_depth(msg)
    encoding = str(msg.encoding)
    if encoding not in _DEPTH_MM_ENCODINGS | _DEPTH_M_ENCODINGS:
        raise FrameDecodeError(
            f"depth image encoding {sensor_text(encoding)} is not supported (use 16UC1 or 32FC1)"
        )
    try:
        return np.asarray(message_to_cvimage(_unpadded(msg)))
    except (ImageError, TypeError) as err:
        detail = sensor_text(str(err), 200, quote=False)
        raise FrameDecodeError(
            f"cannot decode depth image with encoding {sensor_text(encoding)}: {detail}"
        ) from None


def depth_to_metres(msg: Any) -> np.ndarray:
    """A depth image (16UC1/mono16 in millimetres, 32FC1 in metres; raw or compressedDepth)
    as float32 metres.

    Invalid pixels (0, negative, NaN, inf) become NaN, never a distance.
    """
    raw = _raw_depth(msg)
    depth: np.ndarray
    if _depth_encoding(msg) in _DEPTH_MM_ENCODINGS:
        depth = raw.astype(np.float32) / np.float32(1000.0)
    else:
        depth = raw.astype(np.float32, copy=True)
    depth[~np.isfinite(depth) | (depth <= 0.0)] = np.nan
    return depth


_U16_MAX = 0xFFFF
_MAX_MM = np.iinfo(np.uint32).max
"""Largest millimetre value a 32FC1 reading keeps (4,295 km: never clips a real depth)."""


def _metres_to_millimetres(depth_m: np.ndarray) -> np.ndarray:
    """Float metres -> uint32 whole millimetres, 0 where invalid (NaN, inf, <= 0).

    A positive reading below half a millimetre becomes 1 mm, not "invalid".
    """
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(depth_m) & (depth_m > 0.0)
        mm = np.clip(np.rint(np.where(valid, depth_m, 0.0) * 1000.0), 1, _MAX_MM)
    return np.where(valid, mm, 0).astype(np.uint32)


def depth_to_millimetres(msg: Any) -> np.ndarray:
    """A depth image as unsigned whole millimetres, 0 where invalid.

    16UC1/mono16 come back as their own uint16 pixels (no conversion: these drivers
    already use 0 for "no reading"); 32FC1 metres are rounded to the nearest millimetre
    (uint32). This is what ``summarize_depth_mm`` takes.
    """
    raw = _raw_depth(msg)
    if _depth_encoding(msg) in _DEPTH_MM_ENCODINGS:
        return raw.astype(np.uint16, copy=False)
    return _metres_to_millimetres(raw.astype(np.float32, copy=False))


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of an image (sensor_msgs/CameraInfo ``k``, ``width``, ``height``)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @classmethod
    def from_camera_info(cls, info: Any) -> Intrinsics:
        k = [float(value) for value in info.k]
        if len(k) != 9 or k[0] <= 0 or k[4] <= 0 or int(info.width) <= 0 or int(info.height) <= 0:
            raise ValueError(f"camera_info without usable intrinsics (k={k}, {info.width}x{info.height})")
        return cls(k[0], k[4], k[2], k[5], int(info.width), int(info.height))


def registered_grid(view: Intrinsics, depth: Intrinsics) -> tuple[np.ndarray, np.ndarray]:
    """(row edges, column edges) in the depth image of the view's 3x3 grid.

    Registration by intrinsics: each edge of the view's grid becomes a viewing angle and
    that angle a depth pixel, so a depth region covers what the view's region shows when
    both cameras share an optical centre (depth registered to colour, or one RGB-D
    sensor). Lens distortion is not applied. Edges outside the depth image are clipped.
    """
    cols = np.linspace(0, view.width, len(_COLUMNS) + 1)
    rows = np.linspace(0, view.height, len(_ROWS) + 1)
    depth_cols = (cols - view.cx) / view.fx * depth.fx + depth.cx
    depth_rows = (rows - view.cy) / view.fy * depth.fy + depth.cy
    return (
        np.clip(depth_rows.round(), 0, depth.height).astype(int),
        np.clip(depth_cols.round(), 0, depth.width).astype(int),
    )


def summarize_depth_mm(
    depth_mm: np.ndarray, *, grid: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[DepthRegion, ...]:
    """Nearest and median valid depth in each cell of a 3x3 grid (``DEPTH_REGION_NAMES``).

    ``depth_mm`` holds unsigned whole millimetres with 0 for "no reading". The results
    are exact at the reported precision (1 mm): the nearest is the smallest reading, the
    median of an odd count is the middle reading, and the median of an even count is the
    mean of the two middle readings with a half millimetre rounded up. ``grid`` gives the
    cells' (row edges, column edges) in pixels (``registered_grid``); by default the image
    is split in equal thirds.
    """
    if depth_mm.ndim != 2:
        raise ValueError(f"depth must be a 2-D array, got shape {depth_mm.shape}")
    if depth_mm.dtype.kind != "u" or depth_mm.dtype.itemsize > 4:
        raise ValueError(f"depth must be unsigned millimetres (uint16 or uint32), got {depth_mm.dtype}")
    height, width = depth_mm.shape
    if grid is not None:
        row_edges, col_edges = grid
    else:
        row_edges = np.linspace(0, height, len(_ROWS) + 1).round().astype(int)
        col_edges = np.linspace(0, width, len(_COLUMNS) + 1).round().astype(int)
    regions: list[DepthRegion] = []
    for r, row in enumerate(_ROWS):
        for c, col in enumerate(_COLUMNS):
            cell = depth_mm[row_edges[r] : row_edges[r + 1], col_edges[c] : col_edges[c + 1]]
            nearest, median = _nearest_and_median_mm(cell)
            regions.append(
                DepthRegion(
                    f"{row}-{col}",
                    None if nearest is None else nearest / 1000.0,
                    None if median is None else median / 1000.0,
                )
            )
    return tuple(regions)


def _nearest_and_median_mm(cell: np.ndarray) -> tuple[int | None, int | None]:
    """Smallest and median non-zero value of an unsigned integer array, in its own units.

    A histogram (``np.bincount``) when the values fit 16 bits: one pass, whatever the data.
    numpy's partition is as fast on noisy depth but about 20x slower on the many equal
    readings of a flat surface, and ``np.median`` on the valid floats also needs a mask copy.
    """
    if cell.size == 0:
        return None, None
    if cell.dtype.itemsize > 2 and int(cell.max()) > _U16_MAX:
        values = cell[cell > 0]  # rare: a 32FC1 reading beyond 65 m; exact but slower
        if values.size == 0:
            return None, None
        upper = values.size // 2
        ordered = np.partition(values, [(values.size - 1) // 2, upper])
        low, high = int(ordered[(values.size - 1) // 2]), int(ordered[upper])
        return int(values.min()), (low + high + 1) // 2
    counts = np.bincount(cell.astype(np.uint16, copy=False).ravel())
    valid = cell.size - int(counts[0])
    if valid == 0:
        return None, None
    below = np.cumsum(counts[1:])  # below[v - 1]: valid readings <= v
    low, high = np.searchsorted(below, [(valid - 1) // 2, valid // 2], side="right") + 1
    nearest = int(np.argmax(counts[1:] > 0)) + 1  # the first non-empty bin
    return nearest, (int(low) + int(high) + 1) // 2


def summarize_depth(depth_m: np.ndarray) -> tuple[DepthRegion, ...]:
    """``summarize_depth_mm`` of float metres (NaN, inf and <= 0 are invalid).

    The readings are rounded to whole millimetres first; see ``summarize_depth_mm`` for
    how the median of an even count is defined.
    """
    if depth_m.ndim != 2:
        raise ValueError(f"depth must be a 2-D array, got shape {depth_m.shape}")
    return summarize_depth_mm(_metres_to_millimetres(depth_m))


def render_depth_preview(
    depth_m: np.ndarray, *, pixel_budget: int = 160 * 120, max_range_m: float = 5.0, quality: int = 70
) -> bytes:
    """A small false-colour JPEG of a depth image: red is near, blue is far, black is invalid.

    The colour scale is fixed (0 to ``max_range_m``), so colours mean the same distance in
    every frame. It is a picture for orientation only; the metres are in the summary.
    """
    small = fit_to_budget(depth_m, pixel_budget)
    valid = np.isfinite(small)
    scaled = np.zeros(small.shape, dtype=np.uint8)
    clipped = np.clip(small[valid] / max_range_m, 0.0, 1.0)
    scaled[valid] = (255 - clipped * 255).astype(np.uint8)  # near -> 255 -> red in TURBO
    colour = cv2.applyColorMap(scaled, cv2.COLORMAP_TURBO)
    colour[~valid] = 0
    return encode_jpeg(colour, quality)


# --------------------------------------------------------------------------- clearance

_TOO_CLOSE_M = 1e-6
"""Where a -inf reading (REP 117: closer than the minimum range) puts its obstacle: at the
sensor, just along the ray, so it counts for the direction the ray points at."""


def _free_distances(values: np.ndarray, range_min: Any, range_max: Any) -> np.ndarray:
    """REP 117 readings -> distance known free along each ray; NaN when a reading says nothing.

    +inf: free up to range_max; -inf: an obstacle at the sensor; NaN and finite readings
    outside [range_min, range_max]: nothing.
    """
    free: np.ndarray = values.copy()  # NaN stays NaN: an error reading says nothing
    free[values == np.inf] = np.broadcast_to(range_max, values.shape)[values == np.inf]
    free[values == -np.inf] = _TOO_CLOSE_M
    finite = np.isfinite(values)
    free[finite & ((values < range_min) | (values > range_max))] = np.nan
    return free


def _footprint_of(footprint: Footprint | None, footprint_radius_m: float | None) -> Footprint:
    if (footprint is None) == (footprint_radius_m is None):
        raise ValueError("give exactly one of footprint or footprint_radius_m")
    return footprint if footprint is not None else Footprint.circle(float(footprint_radius_m or 0.0))


def clearance_from_scan(
    ranges: Any,
    angle_min: float,
    angle_increment: float,
    range_min: float,
    range_max: float,
    *,
    footprint_radius_m: float | None = None,
    footprint: Footprint | None = None,
    mount: SensorMount | None = None,
    angle_offset_rad: float = 0.0,
    min_valid_fraction: float = DEFAULT_MIN_VALID_FRACTION,
    min_valid_beams: int = DEFAULT_MIN_VALID_READINGS,
) -> dict[str, float | None]:
    """Free distance beyond the footprint edge in each direction, from one LaserScan.

    ``mount`` is the scanner's pose in the base frame (default: at the base centre);
    ``angle_offset_rad`` is the robot's forward direction in the scan frame (a scanner
    mounted backwards has pi), applied on top of the mount's yaw. The footprint is a
    ``Footprint`` or, for a circle, ``footprint_radius_m``. Each beam's endpoint is moved
    into the base frame and each direction measures its swept corridor (see
    ``harness_ros.observation.geometry``). A direction is None when fewer than
    ``min_valid_fraction`` of the beams looking down its corridor, or fewer than
    ``min_valid_beams``, are usable.
    """
    shape = _footprint_of(footprint, footprint_radius_m)
    pose = mount or SensorMount()
    values = np.asarray(ranges, dtype=np.float64).ravel()
    sensor_angles = angle_min + angle_increment * np.arange(values.size)
    return corridor_clearance(
        shape,
        origin_x=pose.x_m,
        origin_y=pose.y_m,
        angle=pose.base_angle(sensor_angles) - angle_offset_rad,
        distance=_free_distances(values, range_min, range_max),
        reach=range_max,
        min_valid_fraction=min_valid_fraction,
        min_valid_readings=min_valid_beams,
    )


def clearance_from_ranges(
    readings: Mapping[str, RangeLike | None],
    *,
    footprint_radius_m: float | None = None,
    footprint: Footprint | None = None,
    mounts: Mapping[str, SensorMount] | None = None,
    min_valid_fraction: float = DEFAULT_MIN_VALID_FRACTION,
) -> dict[str, float | None]:
    """Free distance beyond the footprint edge from one sensor_msgs/Range per direction.

    ``mounts`` gives each sensor's pose in the base frame; a sensor without one sits at the
    base centre facing its direction. The reading is taken on the sensor's axis. A missing
    or unusable reading leaves the directions it looks down unknown (None).
    """
    unknown = set(readings) - set(DIRECTIONS)
    if unknown:
        raise ValueError(f"unknown clearance directions {sorted(unknown)!r}; expected {list(DIRECTIONS)!r}")
    shape = _footprint_of(footprint, footprint_radius_m)
    present = [(d, r) for d in DIRECTIONS if (r := readings.get(d)) is not None]
    if not present:
        return dict.fromkeys(DIRECTIONS)
    poses = [
        (mounts or {}).get(direction) or SensorMount(yaw_rad=DIRECTION_ANGLES_RAD[direction])
        for direction, _ in present
    ]
    values = np.array([float(r.range) for _, r in present])
    range_min = np.array([float(r.min_range) for _, r in present])
    range_max = np.array([float(r.max_range) for _, r in present])
    return corridor_clearance(
        shape,
        origin_x=np.array([pose.x_m for pose in poses]),
        origin_y=np.array([pose.y_m for pose in poses]),
        angle=np.array([pose.base_angle(0.0) for pose in poses]),
        distance=_free_distances(values, range_min, range_max),
        reach=range_max,
        min_valid_fraction=min_valid_fraction,
        min_valid_readings=1,
    )


def clearance_from_range(
    reading: RangeLike,
    *,
    mount: SensorMount,
    footprint_radius_m: float | None = None,
    footprint: Footprint | None = None,
    min_valid_fraction: float = DEFAULT_MIN_VALID_FRACTION,
) -> dict[str, float | None]:
    """Free distance beyond the footprint edge from one Range sensor at ``mount``: the
    directions whose corridor its axis lies in are known, every other one is None."""
    # the direction key only picks a default mount, and ``mount`` is always given here
    return clearance_from_ranges(
        {"forward": reading},
        footprint_radius_m=footprint_radius_m,
        footprint=footprint,
        mounts={"forward": mount},
        min_valid_fraction=min_valid_fraction,
    )


def merge_clearance(readings: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Several sensors' clearance as one: per direction the nearest obstacle among the
    readings that cover it (the most cautious), None when no reading covers it."""
    merged: dict[str, float | None] = {}
    for direction in DIRECTIONS:
        known = [
            float(value)
            for reading in readings
            if (value := reading.get(direction)) is not None and not math.isnan(value)
        ]
        merged[direction] = min(known) if known else None
    return merged
