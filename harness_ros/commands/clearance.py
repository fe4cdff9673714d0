"""``harness-ros clearance --config FILE [--once] [--json]``: print base clearance as the node sees it.

Subscribes to the config's clearance topics like the node (same QoS, mounts, footprint and
valid-reading rules) and prints the free distance from the footprint edge in each direction
with the reading's age, so it can be checked against a tape measure during bring-up.
Without ``--once`` it prints every ``--period`` seconds until Ctrl-C. Exits 1 when no
reading arrives within ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_ros.observation.contracts import Clearance

__all__ = ["clearance_json", "format_clearance", "register"]

_DIRECTIONS = ("forward", "left", "backward", "right")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "clearance",
        help="print the four-direction base clearance the node would measure, with its age",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, metavar="FILE", help="harness config YAML")
    parser.add_argument("--once", action="store_true", help="print one reading and exit")
    parser.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per reading: {"forward": m|null, ..., "age_s": s, "stale": bool}',
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="wait this long for a reading (default 10)"
    )
    parser.add_argument(
        "--period", type=float, default=1.0, metavar="S", help="seconds between readings without --once"
    )
    parser.set_defaults(handler=run_clearance)


def _number(value: float | None) -> float | None:
    if value is None:
        return None
    return value if math.isfinite(value) else None


def clearance_json(clearance: Clearance) -> dict[str, Any]:
    """The JSON object printed with ``--json`` (metres, null = unknown)."""
    data: dict[str, Any] = {direction: _number(clearance.get(direction)) for direction in _DIRECTIONS}
    data["age_s"] = clearance.age_s
    data["stale"] = clearance.stale
    return data


def format_clearance(clearance: Clearance, inside: Sequence[tuple[tuple[str, ...], str]] = ()) -> str:
    """One line: each direction in metres from the footprint edge, then the age. ``inside``:
    returns that end inside the footprint (``RosObservationSource.inside_footprint``): the
    directions they block say so, and each is explained on a line of its own."""
    blocked = {direction for directions, _ in inside for direction in directions}
    parts = []
    for direction in _DIRECTIONS:
        value = clearance.get(direction)
        text = f"{direction} {'unknown' if value is None else f'{value:.2f} m'}"
        if value == 0.0 and direction in blocked:
            text += " (a return inside the footprint)"
        parts.append(text)
    age = "no reading" if clearance.age_s is None else f"age {clearance.age_s:.2f} s"
    stale = " STALE (base motion blocked)" if clearance.stale else ""
    notes = "".join(f"\n  note: {text}" for _, text in inside)
    return "  ".join(parts) + f"  ({age}{stale})" + notes


def run_clearance(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from harness_ros.config import load_config
    from harness_ros.errors import ConfigError, HarnessError
    from harness_ros.observation.geometry import Footprint
    from harness_ros.ros.compat import ros_init
    from harness_ros.ros.observations import RosObservationSource

    config = load_config(args.config)
    if config.observations.clearance is None:
        raise ConfigError(
            f"{args.config}: observations.clearance is not set (without it base motion is always blocked)"
        )
    if args.timeout <= 0 or args.period <= 0:
        raise HarnessError("--timeout and --period must be positive")
    # only the clearance topics: no camera or depth subscriptions
    observations = config.observations.model_copy(update={"views": {}, "depth": None})
    with ros_init(args=["harness_clearance", *(getattr(args, "ros_args", None) or [])]):
        node = rclpy.create_node("harness_clearance")
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        source = RosObservationSource(
            node, observations, footprint=Footprint.from_config(config.safety), views=()
        )

        def spin_until(condition: Any, deadline: float) -> bool:
            # spin in this thread: nothing outlives the context at exit
            while not condition():
                if time.monotonic() > deadline:
                    return False
                executor.spin_once(timeout_sec=0.05)
            return True

        try:
            received = spin_until(
                lambda: all(count > 0 for count in source.stats().values()), time.monotonic() + args.timeout
            )
            if not received:
                missing = sorted(topic for topic, count in source.stats().items() if count == 0)
                raise HarnessError(
                    f"no clearance reading within {args.timeout:g} s on {', '.join(missing)} "
                    "(is the sensor publishing on this ROS_DOMAIN_ID, with a matching "
                    "observations.clearance.qos?)"
                )
            for note in source.check_mounts():
                print(f"warning: {note}", file=sys.stderr)
            while True:
                clearance = source.clearance()
                assert clearance is not None
                inside = source.inside_footprint()
                if args.json:
                    data = clearance_json(clearance)
                    if inside:  # only then: the six keys stay what they were
                        data["inside_footprint"] = [text for _, text in inside]
                    print(json.dumps(data))
                else:
                    print(format_clearance(clearance, inside))
                sys.stdout.flush()
                if args.once:
                    return 0
                spin_until(lambda: False, time.monotonic() + args.period)
        except KeyboardInterrupt:
            return 0
        finally:
            source.destroy()
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
