"""Publish a subset of frame_publisher's scene, so a test can stop one sensor at a time.

    python test/support/fault_sensor_publisher.py --topics /cam/front/image /scan [--rate 20]

Same messages, QoS and stamping as frame_publisher.py (stamps are the publisher's
clock), restricted to ``--topics``. Prints ``publishing`` once the publishers exist;
runs until killed.
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
    parser.add_argument("--topics", nargs="+", required=True, help="topics of frame_publisher to publish")
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second per topic")
    args = parser.parse_args(argv)

    chosen = [(msg, topic) for msg, topic in frame_publisher._build_messages() if topic in args.topics]
    unknown = set(args.topics) - {topic for _, topic in chosen}
    if unknown:
        print(f"unknown topics {sorted(unknown)}", file=sys.stderr)
        return 2
    frame_publisher.publish_until_shutdown(
        "fault_sensor_publisher", chosen, rate=args.rate, stamp_age_s=0.0, ready="publishing"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
