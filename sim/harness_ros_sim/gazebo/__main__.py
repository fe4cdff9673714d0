"""``python -m harness_ros_sim.gazebo [--check]``: regenerate (or check) every Gazebo file.

sim/worlds/apartment.sdf, sim/models/harness_robot/ and sim/config/gazebo_bridge.yaml all derive
from the sim's world spec; run this after changing it.
"""

from __future__ import annotations

import sys

from harness_ros_sim.gazebo import bridge, robot_sdf, world_sdf


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    flags = ["--check"] if "--check" in args else []
    if set(args) - {"--check"}:
        sys.stderr.write("usage: python -m harness_ros_sim.gazebo [--check]\n")
        return 2
    return max(int(module.main(flags)) for module in (world_sdf, robot_sdf, bridge))


if __name__ == "__main__":
    sys.exit(main())
