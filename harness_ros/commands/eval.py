"""``harness-ros eval``: measure whether memory makes the robot fail less.

Runs a seeded suite of fetch tasks in the simulated apartment (objects out of reach
or out of view from the usual standoff, slippery grasps, paths that need a waypoint,
plain control tasks) twice: with memory carried across the episodes and with a fresh
memory every episode. Success is checked on the sim's ground truth. Writes eval.json,
eval.md, pick_failures.png, the run folders with HTML reports, and prints a table.

Without --model or HARNESS_MODEL the scripted demo policy decides: it checks the
machinery end to end, and its numbers do not measure learning (it follows the
experience summaries by rule). Exit 0 when every episode ran, whatever the outcomes;
1 on a setup error.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval",
        help="measure learning: the same seeded sim tasks with memory on and memory off",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        help="litellm model string (default: HARNESS_MODEL, else the scripted demo policy); "
        "the API key comes from the provider's environment variable",
    )
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server, e.g. a local one")
    parser.add_argument("--episodes", type=int, default=6, metavar="N", help="episodes per arm (default 6)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="suite seed (default 0)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where everything is written (default: ~/.ros/harness_ros/eval/<timestamp>)",
    )
    parser.add_argument(
        "--sim-speed",
        type=float,
        default=2.0,
        metavar="X",
        help="simulated seconds per wall-clock second while the robot moves (default 2)",
    )
    parser.add_argument(
        "--task-timeout", type=float, default=300.0, metavar="S", help="cancel a task after S seconds"
    )
    parser.add_argument("--config", type=Path, help="harness config (default: the shipped config/sim.yaml)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros.ros.eval_runner import EvalOptions, default_workdir, run_eval

    options = EvalOptions(
        workdir=args.workdir if args.workdir is not None else default_workdir(),
        model=args.model or os.environ.get("HARNESS_MODEL") or None,
        api_base=args.api_base,
        episodes=args.episodes,
        seed=args.seed,
        sim_speed=args.sim_speed,
        task_timeout_s=args.task_timeout,
        config=args.config,
    )
    return run_eval(options)
