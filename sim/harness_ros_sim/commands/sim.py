"""``harness-ros sim [--seed N] [--world NAME] [--rate HZ] [--ros-args ...]``: run the simulated robot."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "sim",
        help="run the simulated mobile manipulator (cameras, depth, scan, navigate/pick/place actions)",
        description=(
            "Run the sim_robot node: a kinematic apartment with objects, rendered cameras, depth and "
            "laser, and harness_sim_msgs actions under /sim. ROS arguments go after --ros-args; "
            "flags given here override the matching parameters."
        ),
    )
    parser.add_argument("--seed", type=int, help="seed of the grasp-slip randomness (default 0)")
    parser.add_argument("--world", help="built-in world name (apartment) or a YAML world file")
    parser.add_argument("--rate", type=float, metavar="HZ", help="sensor publication rate (default 5)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros_sim.ros.sim.node import run_sim

    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.world is not None:
        overrides["world"] = args.world
    if args.rate is not None:
        overrides["rate_hz"] = args.rate
    return run_sim(overrides=overrides, ros_args=args.ros_args)
