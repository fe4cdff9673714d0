"""``harness-ros report RUN_DIR [-o FILE]``: a self-contained HTML page for one task's run.

Per turn: the camera views the model saw (with freshness), clearance, the decision,
safety decisions, the tool result, the evaluator verdict with its evidence; at the
end the final report and the memory changes. Prints the path written.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a task's run folder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run_dir", type=Path, metavar="RUN_DIR", help="the task's run folder (has events.jsonl)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="HTML file to write (default: RUN_DIR/report.html)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness_ros.plugins import model_provider
    from harness_ros.report import write_report

    print(write_report(args.run_dir, args.output, providers=model_provider))
    return 0
