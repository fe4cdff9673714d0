"""Publish a LaserScan of a straight wall as seen by an off-centre scanner (its own process).

    python test/support/scan_publisher.py --mount-x 0.25 --wall-behind 0.60 [--frame-id laser]

The scanner sits ``--mount-x`` metres ahead of the base centre, facing forward, and
sweeps ``--fov-deg`` degrees (default 360, centred on forward) in ``--beams`` beams;
the wall is the line ``x = -wall_behind`` in the base frame. Beams that miss it read
+inf (REP 117). Stamps are the publisher's clock. Prints ``publishing`` once the
publisher exists; runs until interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frame_publisher

TOPIC = "/scan"
RANGE_MIN, RANGE_MAX = 0.05, 10.0


def wall_ranges(
    mount_x: float, wall_behind: float, beams: int, fov_deg: float = 360.0
) -> tuple[float, float, list[float]]:
    """(angle_min, angle_increment, ranges) of the wall ``x = -wall_behind`` from ``(mount_x, 0)``."""
    fov = math.radians(fov_deg)
    angle_min, increment = -fov / 2, fov / beams
    angles = angle_min + increment * np.arange(beams)
    cos = np.cos(angles)
    with np.errstate(divide="ignore"):
        ranges = np.where(cos < -1e-9, (-wall_behind - mount_x) / cos, np.inf)
    ranges = np.where(ranges > RANGE_MAX, np.inf, ranges)
    return angle_min, increment, [float(r) for r in ranges]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mount-x", type=float, required=True, help="scanner x in the base frame (m)")
    parser.add_argument(
        "--wall-behind", type=float, required=True, help="wall distance behind the base centre"
    )
    parser.add_argument("--beams", type=int, default=720)
    parser.add_argument("--frame-id", default="laser")
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--fov-deg", type=float, default=360.0, help="field of view, centred on forward")
    parser.add_argument(
        "--mast",
        type=float,
        nargs=2,
        metavar=("BEARING_DEG", "RANGE_M"),
        help="a part of the robot the scanner sees: beams within 3 degrees of BEARING_DEG read RANGE_M",
    )
    args = parser.parse_args(argv)

    from sensor_msgs.msg import LaserScan

    angle_min, increment, ranges = wall_ranges(args.mount_x, args.wall_behind, args.beams, args.fov_deg)
    if args.mast is not None:
        bearing, distance = args.mast
        for index in range(args.beams):
            if abs(math.degrees(angle_min + increment * index) - bearing) <= 3.0:
                ranges[index] = distance
    scan = LaserScan(
        angle_min=angle_min,
        angle_max=angle_min + increment * (args.beams - 1),
        angle_increment=increment,
        range_min=RANGE_MIN,
        range_max=RANGE_MAX,
        ranges=ranges,
    )
    scan.header.frame_id = args.frame_id
    frame_publisher.publish_until_shutdown(
        "scan_publisher", [(scan, TOPIC)], rate=args.rate, stamp_age_s=0.0, ready="publishing"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
