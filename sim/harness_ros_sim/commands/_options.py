"""Options ``demo`` and ``eval`` share: the model, the work folder and the sim run.

The leading underscore keeps this module out of the command entry points.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_model_options(parser: argparse.ArgumentParser, *, api_base_help: str) -> None:
    """--model and --api-base; read them back with ``model_from``."""
    parser.add_argument(
        "--model",
        help="litellm model string (default: HARNESS_MODEL, else the scripted demo policy); "
        "the API key comes from the provider's environment variable",
    )
    parser.add_argument("--api-base", help=api_base_help)


def add_workdir_option(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument(
        "--workdir",
        type=Path,
        help=f"where everything is written (default: ~/.ros/harness_ros/{command}/<timestamp>)",
    )


def add_sim_run_options(
    parser: argparse.ArgumentParser, *, task_timeout_help: str, task_timeout_default: float | None = 300.0
) -> None:
    """--sim-speed, --task-timeout and --config."""
    parser.add_argument(
        "--sim-speed",
        type=float,
        default=2.0,
        metavar="X",
        help="simulated seconds per wall-clock second while the robot moves (default 2)",
    )
    parser.add_argument(
        "--task-timeout", type=float, default=task_timeout_default, metavar="S", help=task_timeout_help
    )
    parser.add_argument("--config", type=Path, help="harness config (default: the shipped config/sim.yaml)")


def model_from(args: argparse.Namespace) -> str | None:
    """--model, else HARNESS_MODEL, else None (the scripted demo policy)."""
    return args.model or os.environ.get("HARNESS_MODEL") or None
