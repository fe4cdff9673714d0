"""What an evaluation writes: the table, ``eval.json``, ``eval.md`` and the pick-failure plot.

The table is one list of rows (``table_rows``) used for the terminal, ``eval.md`` and
the ``table`` key of ``eval.json``, so the three never disagree. With the scripted demo
policy the disclaimer heads the table, eval.md and eval.json. The plot is drawn with
OpenCV on a numpy canvas (no plotting library).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_ros.errors import HarnessError
from harness_ros_sim.learning_eval.contracts import Arm, ArmSummary, EvalReport
from harness_ros_sim.learning_eval.metrics import PICK_TOOL

__all__ = [
    "EVAL_JSON",
    "EVAL_MD",
    "FORMAT",
    "PLOT_PNG",
    "PLOT_SIZE",
    "SCRIPTED_DISCLAIMER",
    "EvalOutputs",
    "draw_pick_failures",
    "episodes_done",
    "render_markdown",
    "render_table",
    "report_to_dict",
    "table_header",
    "table_rows",
    "write_outputs",
]

FORMAT = "harness_ros.eval/1"
EVAL_JSON = "eval.json"
EVAL_MD = "eval.md"
PLOT_PNG = "pick_failures.png"
PLOT_SIZE = (800, 480)
"""Width, height of the plot in pixels."""

SCRIPTED_DISCLAIMER = (
    "Decisions came from the scripted demo policy, not a language model. It follows the "
    "experience summaries in its tool definitions by rule, so these numbers check that the "
    "evaluation machinery works; they do not measure learning."
)
_ARMS = (Arm.MEMORY_ON, Arm.MEMORY_OFF)
_OUTCOMES = ("succeeded", "failed", "unverified")
_COLOURS_BGR = {Arm.MEMORY_ON: (180, 110, 30), Arm.MEMORY_OFF: (20, 120, 240)}


# ---------------------------------------------------------------------- the table
def table_header(report: EvalReport) -> list[str]:
    first = (
        "metric (scripted demo policy: NOT a learning measurement)"
        if not report.measures_learning
        else "metric"
    )
    return [first, *(arm.label for arm in _ARMS if arm in report.summaries)]


def _tools(report: EvalReport) -> list[str]:
    names = {tool for s in report.summaries.values() for tool in s.failed_calls}
    names |= {tool for r in report.results for tool in r.metrics.tool_calls}
    return sorted(names | {PICK_TOOL})  # the plotted tool always has its row


def _rows_for(summary: ArmSummary, tools: Sequence[str], ended_by: Sequence[str]) -> list[str]:
    return [
        str(summary.episodes),
        f"{summary.successes}/{summary.episodes}",
        f"{100 * summary.success_rate:.1f}%",
        f"{summary.completed}/{summary.episodes}",
        *(f"{summary.outcomes.get(name, 0)}/{summary.episodes}" for name in _OUTCOMES),
        f"{summary.outcome_wrong}/{summary.episodes}",
        *(str(summary.failed_calls.get(tool, 0)) for tool in tools),
        str(summary.failed_total),
        _refused(summary.held_calls),
        f"{summary.turns_per_task:.1f}",
        str(summary.decision_tokens.prompt),
        str(summary.decision_tokens.cached),
        str(summary.decision_tokens.completion),
        str(summary.memory_tokens.prompt),
        str(summary.memory_tokens.completion),
        f"{summary.wall_s:.1f}",
        *(f"{summary.ended_by.get(way, 0)}/{summary.episodes}" for way in ended_by),
        str(summary.lessons_written),
        _refused(summary.lessons_refused),
    ]


def _refused(by_rule: Mapping[str, int]) -> str:
    if not by_rule:
        return "0"
    rules = ", ".join(f"{rule} {count}" for rule, count in sorted(by_rule.items()))
    return f"{sum(by_rule.values())} ({rules})"


def _ended_by(report: EvalReport) -> list[str]:
    """The ways tasks ended in either arm, finish_task first."""
    ways = {way for summary in report.summaries.values() for way in summary.ended_by}
    return sorted(ways, key=lambda way: (way != "finish_task", way))


def table_rows(report: EvalReport) -> list[list[str]]:
    """[metric, memory on, memory off] rows, as printed and written."""
    tools = _tools(report)
    ended_by = _ended_by(report)
    names = [
        "episodes",
        "tasks succeeded (ground truth)",
        "success rate",
        "tasks reported completed (model's word)",
        *(f"outcome {name} (harness)" for name in _OUTCOMES),
        "outcome contradicted by ground truth",
        *(f"failed calls: {tool}" for tool in tools),
        "failed calls: total",
        "calls held by a ledger's step (not run)",
        "turns per task",
        "decision tokens in",
        "decision tokens in, cached by the provider",
        "decision tokens out",
        "memory tokens in (consolidate + summarize)",
        "memory tokens out (consolidate + summarize)",
        "wall time of the tasks (s)",
        *(f"ended by {way}" for way in ended_by),
        "lessons written (memory + ledgers)",
        "lessons refused (by rule)",
    ]
    columns = [_rows_for(report.summaries[arm], tools, ended_by) for arm in _ARMS if arm in report.summaries]
    return [[name, *(column[index] for column in columns)] for index, name in enumerate(names)]


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [line(header), separator, *(line(row) for row in rows)]


def episodes_done(report: EvalReport) -> int:
    """Episodes every arm has run: fewer than asked for when the evaluation stopped early."""
    return min((sum(r.arm is arm for r in report.results) for arm in _ARMS), default=0)


def _title(report: EvalReport) -> str:
    done = episodes_done(report)
    episodes = (
        f"{report.episodes} episode(s) per arm"
        if done >= report.episodes
        else f"{done} of {report.episodes} episode(s) per arm so far"
    )
    return f"harness-ros eval: {episodes}, suite seed {report.seed}, decisions by {report.decisions}"


def render_table(report: EvalReport) -> str:
    """The terminal table: title, the disclaimer when there is one, the Markdown table."""
    lines = [_title(report)]
    if report.disclaimer:
        lines.append(f"NOTE: {report.disclaimer}")
    lines.extend(_markdown_table(table_header(report), table_rows(report)))
    return "\n".join(lines)


# ---------------------------------------------------------------------- JSON and Markdown
def report_to_dict(report: EvalReport) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "measures_learning": report.measures_learning,
        "disclaimer": report.disclaimer,
        "decisions": report.decisions,
        "seed": report.seed,
        "episodes": report.episodes,
        "episodes_done": episodes_done(report),
        "settings": dict(report.settings),
        "definitions": {
            "success": "the scenario's success condition on the sim's ground truth after the task",
            "outcome": "the done event's outcome: succeeded (claimed and confirmed by the evaluator's "
            "goal check), failed (the model gave up or the goal check refuted it), unverified (nothing "
            "checked the goal); contradicted when the ground truth disagrees with succeeded or failed",
            "failed call": "a tool_result event whose result envelope is not success: true, except a "
            "held one",
            "held call": "a call the harness answered with the step its tool's ledger gives before a "
            "first call (refusal held_by_experience), once per call, or a finish_task giving up right "
            "after a robot call refused for its arguments or one that succeeded (held_finish), once per "
            "task: the robot did nothing",
            "turns": "turn events of the task",
            "decision tokens": "summed usage of the model_response events",
            "memory tokens": "usage of consolidate and summarize model calls (model.record_file)",
            "wall time": "from sending the instruction to the done event",
            "ended by": "what ended the task (done event): finish_task, an operator question, a limit "
            "(wall time, text replies, malformed replies, turns) or a cancel; a copied tool result "
            "never ends one (it gets a reminder)",
            "lessons": "entries consolidation wrote, and refused per rule (memory_consolidation events)",
        },
        "table": {"header": table_header(report), "rows": table_rows(report)},
        "scenarios": [s.to_dict() for s in report.scenarios],
        "arms": {
            arm.value: {
                **report.summaries[arm].to_dict(),
                "results": [
                    r.to_dict()
                    for r in sorted(report.results, key=lambda r: r.scenario.episode)
                    if r.arm is arm
                ],
            }
            for arm in _ARMS
            if arm in report.summaries
        },
        "plot": PLOT_PNG,
    }


def _shown(path: Path | None, base: Path | None) -> str:
    """A path relative to ``base`` when it lies inside it (the folder stays movable)."""
    if path is None:
        return "-"
    if base is not None and path.is_relative_to(base):
        return str(path.relative_to(base))
    return str(path)


def render_markdown(report: EvalReport, base: Path | None = None) -> str:
    """eval.md; paths inside ``base`` (the folder it is written to) are shown relative."""
    lines = [f"# {_title(report)}", ""]
    if report.disclaimer:
        lines += [f"> **Not a learning measurement.** {report.disclaimer}", ""]
    else:
        lines += [
            "Both arms ran the same scenarios with the same seeds; only memory differs: "
            "*memory on* carries one memory folder across the episodes, *memory off* starts "
            "every episode with an empty one.",
            "",
        ]
    lines += ["## Results", "", *_markdown_table(table_header(report), table_rows(report)), ""]
    lines += [f"![failed pick_object calls per episode]({PLOT_PNG})", "", "## Episodes", ""]
    header = [
        "episode",
        "kind",
        "arm",
        "success",
        "status",
        "outcome",
        "turns",
        "failed calls",
        "wall s",
        "run",
    ]
    rows = []
    for result in sorted(report.results, key=lambda r: (r.scenario.episode, _ARMS.index(r.arm))):
        failed = ", ".join(f"{t} {n}" for t, n in sorted(result.metrics.failed_calls.items())) or "none"
        if result.metrics.held_calls:
            failed += "; held " + ", ".join(f"{t} {n}" for t, n in sorted(result.metrics.held_calls.items()))
        rows.append(
            [
                str(result.scenario.episode),
                result.scenario.kind.value,
                result.arm.label,
                "yes" if result.success else f"no ({result.check})",
                result.metrics.status,
                result.metrics.outcome,
                str(result.metrics.turns),
                failed,
                f"{result.wall_s:.1f}",
                _shown(result.report_html or result.run_dir, base),
            ]
        )
    lines += [*_markdown_table(header, rows), "", "## Scenarios", ""]
    for scenario in report.scenarios:
        challenges = ", ".join(c.value for c in scenario.challenges) or "none"
        lines += [
            f'- **{scenario.id}** (sim seed {scenario.world_seed}): "{scenario.instruction}"  ',
            f"  success: {scenario.success.describe()}; direct plan meets: {challenges}  ",
            f"  reference plan: {'; '.join(scenario.reference_plan)}",
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- the plot
def _ticks(top: int) -> list[int]:
    step = max(1, math.ceil(top / 6))
    return list(range(0, top + 1, step))


def _marker(image: np.ndarray, arm: Arm, point: tuple[int, int], colour: tuple[int, int, int]) -> None:
    """A disc for memory on, a square for memory off (readable without colour too)."""
    import cv2

    x, y = point
    if arm is Arm.MEMORY_ON:
        cv2.circle(image, (x, y), 6, colour, -1, cv2.LINE_AA)
    else:
        cv2.rectangle(image, (x - 5, y - 5), (x + 5, y + 5), colour, -1)


def draw_pick_failures(report: EvalReport) -> np.ndarray:
    """Failed pick_object calls per episode for both arms (BGR image of ``PLOT_SIZE``)."""
    import cv2

    width, height = PLOT_SIZE
    image = np.full((height, width, 3), 255, np.uint8)
    # Title, note and legend sit above the plot area, so no data point hides under them.
    left, right, top, bottom = 70, width - 40, 95, height - 60
    pad = 20
    font = cv2.FONT_HERSHEY_SIMPLEX
    black, grey = (0, 0, 0), (220, 220, 220)
    episodes = max(report.episodes, 1)
    peak = max([1, *(v for s in report.summaries.values() for v in s.pick_failures)])

    def x_of(index: int) -> int:
        span = right - left - 2 * pad
        return left + pad + round(span * (index / (episodes - 1) if episodes > 1 else 0.5))

    def y_of(value: float) -> int:
        return bottom - round((bottom - top) * value / peak)

    cv2.putText(image, "failed pick_object calls per episode", (left, 30), font, 0.7, black, 2, cv2.LINE_AA)
    for value in _ticks(peak):
        y = y_of(value)
        cv2.line(image, (left, y), (right, y), grey, 1)
        cv2.putText(image, str(value), (left - 30, y + 5), font, 0.45, black, 1, cv2.LINE_AA)
    for index in _ticks(episodes - 1):
        x = x_of(index)
        cv2.line(image, (x, bottom), (x, bottom + 5), black, 1)
        cv2.putText(image, str(index), (x - 5, bottom + 22), font, 0.45, black, 1, cv2.LINE_AA)
    cv2.line(image, (left, bottom), (right, bottom), black, 2)
    cv2.line(image, (left, top), (left, bottom), black, 2)
    cv2.putText(image, "episode", ((left + right) // 2 - 30, height - 15), font, 0.55, black, 1, cv2.LINE_AA)
    cv2.putText(image, "failed", (12, top - 14), font, 0.5, black, 1, cv2.LINE_AA)

    for offset, arm in enumerate(a for a in _ARMS if a in report.summaries):
        colour = _COLOURS_BGR[arm]
        # A small sideways offset keeps equal values of the two arms both visible.
        shift = -4 if offset == 0 else 4
        points = [(x_of(i) + shift, y_of(v)) for i, v in enumerate(report.summaries[arm].pick_failures)]
        for a, b in itertools.pairwise(points):
            cv2.line(image, a, b, colour, 2, cv2.LINE_AA)
        for point in points:
            _marker(image, arm, point, colour)
        legend_y = 24 + 24 * offset
        cv2.line(image, (right - 150, legend_y), (right - 110, legend_y), colour, 2, cv2.LINE_AA)
        _marker(image, arm, (right - 130, legend_y), colour)
        cv2.putText(image, arm.label, (right - 100, legend_y + 5), font, 0.5, black, 1, cv2.LINE_AA)
    if not report.measures_learning:
        note = "scripted demo policy: not a learning measurement"
        cv2.putText(image, note, (left, 56), font, 0.5, (0, 0, 200), 1, cv2.LINE_AA)
    return image


# ---------------------------------------------------------------------- writing
@dataclass(frozen=True)
class EvalOutputs:
    json: Path
    markdown: Path
    plot: Path


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(report: EvalReport, folder: Path) -> EvalOutputs:
    """Write eval.json, eval.md and the plot into ``folder``."""
    import cv2

    outputs = EvalOutputs(folder / EVAL_JSON, folder / EVAL_MD, folder / PLOT_PNG)
    ok, png = cv2.imencode(".png", draw_pick_failures(report))
    if not ok:
        raise HarnessError(f"cannot encode the plot {str(outputs.plot)!r}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(report_to_dict(report), indent=2, ensure_ascii=False) + "\n"
        _atomic_write(outputs.json, text.encode("utf-8"))
        _atomic_write(outputs.markdown, render_markdown(report, folder).encode("utf-8"))
        _atomic_write(outputs.plot, png.tobytes())
    except OSError as err:
        raise HarnessError(
            f"cannot write the evaluation into {str(folder)!r}: {err.strerror or err}"
        ) from None
    return outputs
