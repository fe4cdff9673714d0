"""``harness-ros node --config FILE [--ros-args ...]``: run the harness node in this venv."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "node",
        help="run the harness node (configure + activate, then serve tasks)",
        description="Run the harness lifecycle node. ROS arguments go after --ros-args.",
    )
    parser.add_argument("--config", type=Path, help="YAML config (every key is also a ROS parameter)")
    parser.add_argument(
        "--no-autostart", action="store_true", help="stay unconfigured until a lifecycle manager says so"
    )
    parser.add_argument("--record", type=Path, help="record sensors, instructions and events to this rosbag2")
    parser.add_argument(
        "--record-model",
        type=Path,
        metavar="FILE",
        help="append every model request digest and reply to this JSONL (replay with model replay/FILE)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros.ros.node import run_node

    ros_args = list(args.ros_args) or ["--ros-args"]
    if args.record is not None:
        ros_args += ["-p", f"record.path:={args.record.resolve()}"]
    if args.record_model is not None:
        ros_args += ["-p", f"model.record_file:={args.record_model.resolve()}"]
    return run_node(args.config, ros_args=ros_args, autostart=not args.no_autostart)
