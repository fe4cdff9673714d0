"""``harness-ros sim [--seed N] [--world NAME] [--rate HZ] [--ros-args ...]``: run the simulated robot."""

from __future__ import annotations

import argparse
import sys
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
    parser.add_argument(
        "--physics",
        choices=["stretch3"],
        help="run a robot in MuJoCo instead: stretch3 (Hello Robot's model; docs/physics-sim.md)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.physics is not None:
        from harness_ros_sim.ros.physics_node import run_physics

        physics: dict[str, Any] = {} if args.rate is None else {"rate_hz": args.rate}
        if args.seed is not None or args.world is not None:
            sys.stderr.write(
                "error: --seed and --world are the kinematic sim's; the physics robot has one scene\n"
            )
            return 2
        return run_physics(overrides=physics, ros_args=args.ros_args)
    from harness_ros_sim.ros.sim.node import run_sim

    overrides: dict[str, Any] = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.world is not None:
        overrides["world"] = args.world
    if args.rate is not None:
        overrides["rate_hz"] = args.rate
    return run_sim(overrides=overrides, ros_args=args.ros_args)
