"""The millimetre depth summary: exact at 1 mm, the even-count rule, agreement with np.median."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from harness_ros.observation.pipeline import (
    DEPTH_REGION_NAMES,
    depth_to_millimetres,
    summarize_depth,
    summarize_depth_mm,
)


def _image(pixels: np.ndarray, encoding: str) -> SimpleNamespace:
    height, width = pixels.shape
    return SimpleNamespace(
        encoding=encoding,
        height=height,
        width=width,
        step=width * pixels.itemsize,
        is_bigendian=0,
        data=pixels.tobytes(),
    )


def _reference(depth_m: np.ndarray) -> list[tuple[float | None, float | None]]:
    """The former implementation: np.median of the valid floats per region, rounded to mm."""
    height, width = depth_m.shape
    rows = np.linspace(0, height, 4).round().astype(int)
    cols = np.linspace(0, width, 4).round().astype(int)
    out: list[tuple[float | None, float | None]] = []
    for r in range(3):
        for c in range(3):
            cell = depth_m[rows[r] : rows[r + 1], cols[c] : cols[c + 1]]
            valid = cell[np.isfinite(cell)]
            if valid.size == 0:
                out.append((None, None))
            else:
                out.append((round(float(valid.min()), 3), round(float(np.median(valid)), 3)))
    return out


def test_even_count_median_is_the_mean_of_the_middle_readings_half_up() -> None:
    depth = np.zeros((3, 3), np.uint16)
    depth[0, 0] = 1000
    (top_left, *_) = summarize_depth_mm(depth)
    assert (top_left.nearest_m, top_left.median_m) == (1.0, 1.0)
    depth = np.zeros((6, 6), np.uint16)
    depth[0:2, 0:2] = [[1000, 1001], [0, 0]]  # two readings: 1000.5 mm rounds up
    depth[0:2, 2:4] = [[900, 1200], [1300, 0]]  # three: the middle one
    depth[0:2, 4:6] = [[700, 700], [702, 705]]  # four: (700 + 702) / 2
    left, centre, right = summarize_depth_mm(depth)[:3]
    assert (left.nearest_m, left.median_m) == (1.0, 1.001)
    assert (centre.nearest_m, centre.median_m) == (0.9, 1.2)
    assert (right.nearest_m, right.median_m) == (0.7, 0.701)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_np_median_to_the_millimetre(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mm = rng.integers(0, 6000, (47, 61)).astype(np.uint16)
    mm[rng.random(mm.shape) < 0.3] = 0
    mm[20:30, 25:40] = 650  # a flat face: many equal readings
    mm[32:, 45:] = 0  # a region with no reading
    metres = np.where(mm > 0, mm / np.float32(1000.0), np.nan).astype(np.float32)
    got = [(r.nearest_m, r.median_m) for r in summarize_depth_mm(mm)]
    assert [r.name for r in summarize_depth_mm(mm)] == list(DEPTH_REGION_NAMES)
    assert got == [(r.nearest_m, r.median_m) for r in summarize_depth(metres)]
    for (nearest, median), (ref_nearest, ref_median) in zip(got, _reference(metres), strict=True):
        assert nearest == ref_nearest
        if median is None or ref_median is None:
            assert median is ref_median is None
        else:
            # only a half-millimetre tie of an even count may round the other way
            assert abs(median - ref_median) <= 0.0010001


def test_16uc1_is_read_without_conversion_and_left_untouched() -> None:
    mm = np.full((30, 30), 1234, np.uint16)
    mm[0, 0] = 0
    msg = _image(mm, "16UC1")
    depth = depth_to_millimetres(msg)
    assert depth.dtype == np.uint16
    before = depth.copy()
    summarize_depth_mm(depth)
    assert np.array_equal(depth, before)
    assert all(r.median_m == 1.234 for r in summarize_depth_mm(depth))


def test_32fc1_rounds_to_millimetres_and_drops_invalid() -> None:
    metres = np.full((30, 30), 2.5004, np.float32)
    metres[0:10, 0:10] = np.nan
    metres[10:20, 0:10] = np.inf
    metres[20:30, 0:10] = -1.0
    metres[0:10, 10:20] = 0.0002  # a positive reading below 0.5 mm is 1 mm, not invalid
    metres[10:20, 10:20] = 70.0  # beyond 65.535 m: the uint32 path
    mm = depth_to_millimetres(_image(metres, "32FC1"))
    assert mm.dtype == np.uint32
    regions = {r.name: r for r in summarize_depth_mm(mm)}
    assert regions["top-left"].median_m is None
    assert regions["middle-left"].nearest_m is None
    assert regions["bottom-left"].nearest_m is None
    assert regions["top-centre"].nearest_m == 0.001
    assert (regions["middle-centre"].nearest_m, regions["middle-centre"].median_m) == (70.0, 70.0)
    assert regions["bottom-right"].median_m == 2.5


def test_rejects_floats_and_wrong_shapes() -> None:
    with pytest.raises(ValueError, match="unsigned millimetres"):
        summarize_depth_mm(np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        summarize_depth_mm(np.ones((3, 3, 1), np.uint16))
