"""``harness-ros eval``: measure whether memory makes the robot fail less.

Runs a seeded suite of fetch tasks in the simulated apartment (objects out of reach
or out of view from the usual standoff, slippery grasps, paths that need a waypoint,
plain control tasks) twice: with memory carried across the episodes and with a fresh
memory every episode. Nobody answers the model's questions (ask_operator): it is told so
after 5 s. Success is checked on the sim's ground truth. Writes eval.json,
eval.md, pick_failures.png, the run folders with HTML reports, and prints a table.

Without --model or HARNESS_MODEL the scripted demo policy decides: it checks the
machinery end to end, and its numbers do not measure learning (it follows the
experience summaries by rule). Exit 0 when every episode ran, whatever the outcomes;
1 on a setup error.
"""

from __future__ import annotations

import argparse

from harness_ros_sim.commands import _options


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval",
        help="measure learning: the same seeded sim tasks with memory on and memory off",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _options.add_model_options(
        parser, api_base_help="base URL of an OpenAI-compatible server, e.g. a local one"
    )
    parser.add_argument("--episodes", type=int, default=6, metavar="N", help="episodes per arm (default 6)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="suite seed (default 0)")
    parser.add_argument(
        "--suite",
        choices=("learning", "moved-objects"),
        default="learning",
        help="learning: memory on / off over the seeded scenario suite (default); moved-objects: "
        "world memory on / off (memory.world; lessons on in both) while someone else moves "
        "objects between tasks (world_eval.json, world_eval.md)",
    )
    parser.add_argument(
        "--robot",
        choices=("sim", "stretch3-physics"),
        default="sim",
        help="sim: the kinematic sim (default); stretch3-physics: Stretch 3 in MuJoCo (its one "
        "fetch; without --model a scripted fetch, not the demo policy; physics_eval.json/md)",
    )
    _options.add_workdir_option(parser, "eval")
    _options.add_sim_run_options(
        parser,
        task_timeout_help="cancel a task after S seconds (default 300; 1800 with a local/ model, "
        "whose node then ends the task a minute before)",
        task_timeout_default=None,
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros_sim.ros.eval_runner import EvalOptions, default_workdir
    from harness_ros_sim.ros.eval_suites import run_suite

    options = EvalOptions(
        workdir=args.workdir if args.workdir is not None else default_workdir(),
        model=_options.model_from(args),
        api_base=args.api_base,
        episodes=args.episodes,
        seed=args.seed,
        sim_speed=args.sim_speed,
        task_timeout_s=args.task_timeout,
        config=args.config,
        suite=args.suite,
        robot=args.robot,
    )
    return run_suite(options)
