"""``harness-ros demo``: the simulated robot and the harness node fetch two objects and learn.

Everything goes under the workdir (default ``~/.ros/harness_ros/demo/<timestamp>``):
logs/, memory/, runs/<task>/ (run logs and HTML reports) and recording/ (a rosbag2).
Without --model or HARNESS_MODEL, decisions come from the scripted demo policy, which
is not a language model. ``--model local/1.5b`` (or ``local/0.5b``, ``local/<file>.gguf``)
installs that local model on first use and serves it with llama.cpp on 127.0.0.1 for the
demo's lifetime (``make demo-local``; docs/local-model.md). Exit 0 when every task
completed and its goal was verified.
"""

from __future__ import annotations

import argparse

from harness_ros_sim.commands import _options


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the end-to-end demo: simulated robot + harness node, two fetch tasks, memory learning",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _options.add_workdir_option(parser, "demo")
    _options.add_model_options(parser, api_base_help="base URL of an OpenAI-compatible server (with --model)")
    parser.add_argument("--no-record", action="store_true", help="do not record a rosbag2")
    parser.add_argument("--tasks", type=int, default=2, metavar="N", help="run the first N tasks (1 or 2)")
    _options.add_sim_run_options(
        parser,
        task_timeout_help="give up on a task after S seconds (default 300; 1800 with a local/ model, "
        "whose first decision takes minutes on a small CPU)",
        task_timeout_default=None,
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros_sim.demo.runner import DemoOptions, default_task_timeout, default_workdir, run_demo

    model = _options.model_from(args)
    options = DemoOptions(
        workdir=args.workdir if args.workdir is not None else default_workdir(),
        model=model,
        api_base=args.api_base,
        record=not args.no_record,
        tasks=args.tasks,
        sim_speed=args.sim_speed,
        task_timeout_s=args.task_timeout if args.task_timeout is not None else default_task_timeout(model),
        config=args.config,
    )
    return run_demo(options)
