"""Options several sub-commands share (``check``, ``tools`` and ``skills list`` read a
config that defaults to the shipped example).

The leading underscore keeps this module out of the CLI's sub-command discovery.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_example_config_option(parser: argparse.ArgumentParser) -> None:
    """--config FILE, defaulting to the shipped config/example.yaml."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="config YAML (default: the shipped config/example.yaml)",
    )
