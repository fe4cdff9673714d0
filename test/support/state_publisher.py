"""Publish a robot's measured state: nav_msgs/Odometry and a localizer's pose.

    python test/support/state_publisher.py --x 4.2 --y -1.5 --yaw-deg 90 [--speed 0.0]
        [--odom-topic /odom] [--odom-frame odom] [--pose-topic /amcl_pose] [--rate 20]

The odometry carries the pose in ``--odom-frame`` and a forward speed of ``--speed``;
the PoseWithCovarianceStamped on ``--pose-topic`` carries the same pose in ``map``.
Stamps are the publisher's clock. Prints ``publishing`` once the publishers exist;
runs until killed.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frame_publisher


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--x", type=float, required=True)
    parser.add_argument("--y", type=float, required=True)
    parser.add_argument("--yaw-deg", type=float, required=True)
    parser.add_argument("--speed", type=float, default=0.0, help="forward speed in the odometry, m/s")
    parser.add_argument("--odom-topic", default="/odom")
    parser.add_argument("--odom-frame", default="odom")
    parser.add_argument("--pose-topic", default="/amcl_pose")
    parser.add_argument("--rate", type=float, default=20.0)
    args = parser.parse_args(argv)

    from geometry_msgs.msg import PoseWithCovarianceStamped
    from nav_msgs.msg import Odometry

    odometry = Odometry()
    odometry.header.frame_id = args.odom_frame
    odometry.child_frame_id = "base_link"
    localized = PoseWithCovarianceStamped()
    localized.header.frame_id = "map"
    for pose in (odometry.pose.pose, localized.pose.pose):
        pose.position.x, pose.position.y = args.x, args.y
        pose.orientation.z = math.sin(math.radians(args.yaw_deg) / 2.0)
        pose.orientation.w = math.cos(math.radians(args.yaw_deg) / 2.0)
    odometry.twist.twist.linear.x = args.speed
    frame_publisher.publish_until_shutdown(
        "state_publisher",
        [(odometry, args.odom_topic), (localized, args.pose_topic)],
        rate=args.rate,
        stamp_age_s=0.0,
        ready="publishing",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
