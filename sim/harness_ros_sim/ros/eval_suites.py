"""Which runner ``harness-ros eval`` uses: by ``--suite`` and ``--robot`` (``EvalOptions``).

``learning`` on the kinematic sim: ``eval_runner``; ``moved-objects``: ``world_eval_runner``;
``--robot stretch3-physics``: ``physics_eval_runner`` (the learning suite's arms on its one
fetch). Here, not in ``eval_runner``, because the other two runners build on that one.
"""

from __future__ import annotations

from harness_ros.errors import HarnessError
from harness_ros_sim.ros.children import stop_on_terminate, write_stdout
from harness_ros_sim.ros.eval_runner import ROBOTS, SUITES, EvalOptions, EvalRunner, Write
from harness_ros_sim.ros.physics_eval_runner import PhysicsEvalRunner
from harness_ros_sim.ros.world_eval_runner import WorldEvalRunner

__all__ = ["run_suite"]


def run_suite(options: EvalOptions, write: Write = write_stdout) -> int:
    """Run the evaluation ``options`` name; 0 when every episode ran (whatever its outcome)."""
    if options.suite not in SUITES:
        raise HarnessError(f"--suite must be one of {', '.join(SUITES)}, got {options.suite!r}")
    if options.robot not in ROBOTS:
        raise HarnessError(f"--robot must be one of {', '.join(ROBOTS)}, got {options.robot!r}")
    if options.robot != "sim" and options.suite != "learning":
        raise HarnessError(f"--suite {options.suite} runs on the kinematic sim only (--robot sim)")
    runner: EvalRunner
    if options.robot == "stretch3-physics":
        runner = PhysicsEvalRunner(options, write)
    elif options.suite == "moved-objects":
        runner = WorldEvalRunner(options, write)
    else:
        runner = EvalRunner(options, write)
    with stop_on_terminate():
        return runner.run()
