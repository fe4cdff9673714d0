"""Publish one sensor_msgs/Range reading at a fixed rate (its own process), e.g. a rear sonar.

    python test/support/range_publisher.py --topic /sonar_rear --range 0.5 [--stamp-age 0]

Stamps are the publisher's clock minus ``--stamp-age`` seconds. Prints ``publishing``
once the publisher exists; runs until interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frame_publisher


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--range", type=float, required=True, help="the reading in metres")
    parser.add_argument("--min-range", type=float, default=0.02)
    parser.add_argument("--max-range", type=float, default=4.0)
    parser.add_argument("--frame-id", default="sonar")
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--stamp-age", type=float, default=0.0, help="stamps this many seconds old")
    args = parser.parse_args(argv)

    from sensor_msgs.msg import Range

    reading = Range(
        radiation_type=Range.ULTRASOUND,
        field_of_view=0.5,
        min_range=args.min_range,
        max_range=args.max_range,
        range=args.range,
    )
    reading.header.frame_id = args.frame_id
    frame_publisher.publish_until_shutdown(
        "range_publisher",
        [(reading, args.topic)],
        rate=args.rate,
        stamp_age_s=args.stamp_age,
        ready="publishing",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
