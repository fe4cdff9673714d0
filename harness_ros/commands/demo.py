"""``harness-ros demo``: the simulated robot and the harness node fetch two objects and learn.

Everything goes under the workdir (default ``~/.ros/harness_ros/demo/<timestamp>``):
logs/, memory/, runs/<task>/ (run logs and HTML reports) and recording/ (a rosbag2).
Without --model or HARNESS_MODEL, decisions come from the scripted demo policy, which
is not a language model. Exit 0 when every task completed and its goal was verified.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the end-to-end demo: simulated robot + harness node, two fetch tasks, memory learning",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where everything is written (default: ~/.ros/harness_ros/demo/<timestamp>)",
    )
    parser.add_argument(
        "--model",
        help="litellm model string (default: HARNESS_MODEL, else the scripted demo policy); "
        "the API key comes from the provider's environment variable",
    )
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server (with --model)")
    parser.add_argument("--no-record", action="store_true", help="do not record a rosbag2")
    parser.add_argument("--tasks", type=int, default=2, metavar="N", help="run the first N tasks (1 or 2)")
    parser.add_argument(
        "--sim-speed",
        type=float,
        default=2.0,
        metavar="X",
        help="simulated seconds per wall-clock second while the robot moves (default 2)",
    )
    parser.add_argument(
        "--task-timeout", type=float, default=300.0, metavar="S", help="give up on a task after S seconds"
    )
    parser.add_argument("--config", type=Path, help="harness config (default: the shipped config/sim.yaml)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros.demo.runner import DemoOptions, default_workdir, run_demo

    model = args.model or os.environ.get("HARNESS_MODEL") or None
    options = DemoOptions(
        workdir=args.workdir if args.workdir is not None else default_workdir(),
        model=model,
        api_base=args.api_base,
        record=not args.no_record,
        tasks=args.tasks,
        sim_speed=args.sim_speed,
        task_timeout_s=args.task_timeout,
        config=args.config,
    )
    return run_demo(options)
