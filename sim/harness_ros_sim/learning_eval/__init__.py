"""The learning evaluation's pure core: does memory make the robot fail less?

Seeded sim scenarios with ground-truth success conditions (``scenarios``), metrics
from run folders (``metrics``), and the table, JSON, Markdown and plot (``outputs``).
The ROS side that runs the episodes is ``harness_ros_sim.ros.eval_runner``
(``harness-ros eval``).
"""

from __future__ import annotations

from harness_ros_sim.learning_eval.contracts import (
    Arm,
    ArmSummary,
    Challenge,
    EpisodeMetrics,
    EpisodeResult,
    EvalReport,
    ObjectOnSurface,
    Scenario,
    ScenarioKind,
    TokenCount,
)
from harness_ros_sim.learning_eval.metrics import (
    PICK_TOOL,
    episode_metrics,
    is_failed_result,
    read_jsonl,
    summarize_arm,
    support_tokens,
)
from harness_ros_sim.learning_eval.outputs import (
    EVAL_JSON,
    EVAL_MD,
    PLOT_PNG,
    PLOT_SIZE,
    SCRIPTED_DISCLAIMER,
    EvalOutputs,
    draw_pick_failures,
    episodes_done,
    render_markdown,
    render_table,
    report_to_dict,
    table_header,
    table_rows,
    write_outputs,
)
from harness_ros_sim.learning_eval.scenarios import (
    KIND_ROTATION,
    REQUIRED_CHALLENGES,
    SLIP_PROBABILITY,
    generate_suite,
    make_scenario,
    phrase,
    world_yaml,
    write_world,
)

__all__ = [
    "EVAL_JSON",
    "EVAL_MD",
    "KIND_ROTATION",
    "PICK_TOOL",
    "PLOT_PNG",
    "PLOT_SIZE",
    "REQUIRED_CHALLENGES",
    "SCRIPTED_DISCLAIMER",
    "SLIP_PROBABILITY",
    "Arm",
    "ArmSummary",
    "Challenge",
    "EpisodeMetrics",
    "EpisodeResult",
    "EvalOutputs",
    "EvalReport",
    "ObjectOnSurface",
    "Scenario",
    "ScenarioKind",
    "TokenCount",
    "draw_pick_failures",
    "episode_metrics",
    "episodes_done",
    "generate_suite",
    "is_failed_result",
    "make_scenario",
    "phrase",
    "read_jsonl",
    "render_markdown",
    "render_table",
    "report_to_dict",
    "summarize_arm",
    "support_tokens",
    "table_header",
    "table_rows",
    "world_yaml",
    "write_outputs",
    "write_world",
]
