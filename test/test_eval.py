"""The learning evaluation: scenario suite, metrics, outputs, and ``harness-ros eval`` end to end."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_orchestrator

from harness_ros_sim.demo.scenarios import parse_fetch_goal
from harness_ros_sim.learning_eval import (
    KIND_ROTATION,
    PLOT_SIZE,
    REQUIRED_CHALLENGES,
    SCRIPTED_DISCLAIMER,
    Arm,
    EpisodeResult,
    EvalReport,
    ObjectOnSurface,
    ScenarioKind,
    TokenCount,
    draw_pick_failures,
    episode_metrics,
    episodes_done,
    generate_suite,
    make_scenario,
    render_markdown,
    render_table,
    report_to_dict,
    summarize_arm,
    support_tokens,
    table_rows,
    write_outputs,
    write_world,
)
from harness_ros_sim.sim.spec import load_world_spec
from harness_ros_sim.sim.world import World

CLI = [sys.executable, "-m", "harness_ros.cli"]


@pytest.fixture(scope="module")
def suite() -> tuple[Any, ...]:
    return generate_suite(11, 5)


# ---------------------------------------------------------------------- scenarios
def test_episode_i_depends_only_on_seed_and_index(suite: tuple[Any, ...]) -> None:
    again = make_scenario(11, 3)
    assert again == suite[3]
    assert again.world == suite[3].world
    assert generate_suite(11, 2) == suite[:2]  # a shorter run is a prefix of a longer one
    other = make_scenario(12, 3)
    assert (other.instruction, other.world) != (again.instruction, again.world)


def test_kinds_rotate_and_the_direct_plan_meets_exactly_their_challenges(suite: tuple[Any, ...]) -> None:
    assert [s.kind for s in suite] == list(KIND_ROTATION)
    for scenario in suite:
        assert set(scenario.challenges) == REQUIRED_CHALLENGES[scenario.kind], scenario.id
        assert scenario.reference_plan[-1] == f"place_object({scenario.target}): ok"
        assert scenario.success == ObjectOnSurface(scenario.object_id, scenario.target)


def test_instructions_read_like_a_person_and_name_object_source_and_target(suite: tuple[Any, ...]) -> None:
    for scenario in suite:
        assert "_" not in scenario.instruction
        goal = parse_fetch_goal(scenario.instruction)
        assert goal is not None
        assert (goal.object_id, goal.source, goal.target) == (
            scenario.object_id,
            scenario.source,
            scenario.target,
        )


def _direct_pick(scenario: Any) -> str:
    world = World(scenario.world, seed=scenario.world_seed, slip_probability=scenario.slip_probability)
    assert world.navigate_to(scenario.source).success
    outcome = world.pick_object(scenario.object_id)
    return "ok" if outcome.success else outcome.message


def test_the_world_itself_shows_each_difficulty(suite: tuple[Any, ...]) -> None:
    """Rechecked on a fresh World, not on the generator's own notes."""
    by_kind = {s.kind: s for s in suite}
    assert _direct_pick(by_kind[ScenarioKind.REACH]).startswith("object out of reach")
    assert _direct_pick(by_kind[ScenarioKind.HIDDEN]).startswith("object not visible")
    assert _direct_pick(by_kind[ScenarioKind.SLIPPERY]).startswith("grasp slipped")
    assert _direct_pick(by_kind[ScenarioKind.PLAIN]) == "ok"
    blocked = by_kind[ScenarioKind.BLOCKED]
    world = World(blocked.world, seed=blocked.world_seed)
    assert world.navigate_to(blocked.source).success
    assert world.pick_object(blocked.object_id).success
    assert world.navigate_to(blocked.target).message.startswith("path blocked")


def test_world_file_round_trips_and_resets_the_robot_start(suite: tuple[Any, ...], tmp_path: Path) -> None:
    scenario = suite[0]
    path = write_world(scenario, tmp_path)
    assert load_world_spec(path) == scenario.world
    robot = scenario.world.robot
    world = World(load_world_spec(path))
    assert (world.pose.x, world.pose.y) == (robot.x, robot.y)
    assert scenario.to_dict()["robot_start"] == [robot.x, robot.y, robot.yaw]


def test_success_condition_reads_the_ground_truth() -> None:
    condition = ObjectOnSurface("red_cup", "coffee_table")
    state = {"objects": {"red_cup": {"on": "coffee_table"}}, "gripper": {"holding": None}}
    assert condition.check(state) == (True, "red_cup is on coffee_table")
    held = {"objects": {"red_cup": {"on": "gripper"}}, "gripper": {"holding": "red_cup"}}
    assert condition.check(held) == (False, "red_cup is still in the gripper")
    elsewhere = {"objects": {"red_cup": {"on": "kitchen_table"}}, "gripper": {"holding": None}}
    assert condition.check(elsewhere)[1] == "red_cup is on 'kitchen_table', not on 'coffee_table'"
    assert condition.check({"objects": {}})[0] is False


# ---------------------------------------------------------------------- metrics
def _result(tool: str, success: bool, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"success": True, "result": {}} if success else {"success": False, "reason": "x"}
    return {"type": "tool_result", "data": {"tool": tool, "result": result, **extra}}


HAND_MADE_EVENTS: list[dict[str, Any]] = [
    {"type": "task_started", "data": {}},
    {"type": "turn", "data": {}},
    {"type": "model_response", "data": {"usage": {"prompt_tokens": 100, "completion_tokens": 7}}},
    _result("navigate_to", True),
    {"type": "turn", "data": {}},
    {"type": "model_response", "data": {"usage": {"prompt_tokens": 150, "completion_tokens": 9}}},
    _result("pick_object", False),
    _result("place_object", False, refused=True),  # a second call in one turn is refused: a failure
    {"type": "turn", "data": {}},
    {"type": "model_response", "data": {"usage": {"prompt_tokens": 200}}},
    {"type": "tool_result", "data": {"tool": "pick_object", "result": "not an envelope"}},
    {"type": "turn", "data": {}},
    {"type": "model_response", "data": {}},
    {"type": "done", "data": {"status": "completed", "elapsed_s": 12.5}},
]


def test_episode_metrics_from_hand_made_events() -> None:
    metrics = episode_metrics(HAND_MADE_EVENTS)
    assert metrics.status == "completed"
    assert metrics.turns == 4
    assert dict(metrics.tool_calls) == {"navigate_to": 1, "pick_object": 2, "place_object": 1}
    assert dict(metrics.failed_calls) == {"pick_object": 2, "place_object": 1}
    assert metrics.failed_total == 3
    assert metrics.decision_tokens == TokenCount(450, 16)
    assert metrics.task_elapsed_s == 12.5
    assert episode_metrics([]).status == "no done event"
    assert dict(metrics.held_calls) == {}


def test_a_call_held_by_its_ledgers_step_is_counted_as_held_not_as_a_call_or_a_failure() -> None:
    held = _result("pick_object", False, refusal="held_by_experience", executed=False)
    events = [*HAND_MADE_EVENTS[:-1], held, held, HAND_MADE_EVENTS[-1]]
    metrics = episode_metrics(events)
    assert dict(metrics.held_calls) == {"pick_object": 2}
    assert dict(metrics.failed_calls) == {"pick_object": 2, "place_object": 1}  # as without them
    assert dict(metrics.tool_calls) == {"navigate_to": 1, "pick_object": 2, "place_object": 1}
    assert metrics.to_dict()["held_calls"] == {"pick_object": 2}


def test_how_a_task_ended_and_what_it_taught_come_from_its_events() -> None:
    def done(**data: Any) -> dict[str, Any]:
        return {"type": "done", "data": {"status": "failed", **data}}

    cases = [
        (done(status="completed", finished_by="finish_task"), "finish_task"),
        (done(status="completed", finished_by="operator_question"), "operator question"),
        (done(reason="task wall-time limit of 300 s reached"), "limit: wall time"),
        (done(reason="the model replied with plain text 3 times in a row"), "limit: text replies"),
        (done(status="aborted", reason="3 malformed decisions in a row"), "limit: malformed replies"),
        (done(status="cancelled", reason="operator stop"), "cancelled"),
    ]  # fmt: skip
    for event, expected in cases:
        assert episode_metrics([event]).ended_by == expected
    assert episode_metrics([]).ended_by == "none"
    consolidation = {
        "type": "memory_consolidation",
        "data": {
            "memory_written": 1,
            "tool_experience_written": 2,
            "decisions": [
                {"accepted": True, "rule": "accepted"},
                {"accepted": False, "rule": "transient:run_id"},
                {"accepted": False, "rule": "transient:run_id"},
                {"accepted": False, "rule": "evidence:no_confirmed_success"},
            ],
        },
    }
    metrics = episode_metrics([consolidation, done(status="completed", finished_by="finish_task")])
    assert metrics.lessons_written == 3
    assert dict(metrics.lessons_refused) == {"transient:run_id": 2, "evidence:no_confirmed_success": 1}


def test_support_tokens_count_everything_but_decisions() -> None:
    records = [
        {
            "request": {"purpose": "decide"},
            "reply": {"usage": {"prompt_tokens": 999, "completion_tokens": 9}},
        },
        {
            "request": {"purpose": "consolidate"},
            "reply": {"usage": {"prompt_tokens": 50, "completion_tokens": 5}},
        },
        {
            "request": {"purpose": "summarize"},
            "reply": {"usage": {"prompt_tokens": 20, "completion_tokens": 2}},
        },
        {
            "request": {"purpose": "summarize"},
            "reply": {"usage": {"prompt_tokens": 1, "completion_tokens": 1}},
        },
    ]
    assert support_tokens(records) == {"consolidate": TokenCount(50, 5), "summarize": TokenCount(21, 3)}


def _report(suite: tuple[Any, ...], *, scripted: bool) -> EvalReport:
    scenarios = suite[:3]
    results = []
    for arm, picks in ((Arm.MEMORY_ON, (1, 0, 0)), (Arm.MEMORY_OFF, (1, 2, 1))):
        for scenario, failed in zip(scenarios, picks, strict=True):
            events = [
                {"type": "turn", "data": {}},
                {"type": "model_response", "data": {"usage": {"prompt_tokens": 10, "completion_tokens": 1}}},
                *[_result("pick_object", False) for _ in range(failed)],
                _result("pick_object", True),
                {"type": "done", "data": {"status": "completed"}},
            ]
            results.append(
                EpisodeResult(
                    arm=arm,
                    scenario=scenario,
                    success=failed < 2,
                    check="hand-made",
                    metrics=episode_metrics(events),
                    wall_s=10.0,
                    support_tokens={"consolidate": TokenCount(3, 1)},
                )
            )
    return EvalReport(
        seed=11,
        episodes=len(scenarios),
        decisions="scripted" if scripted else "model 'openai/x'",
        measures_learning=not scripted,
        disclaimer=SCRIPTED_DISCLAIMER if scripted else None,
        scenarios=scenarios,
        results=tuple(results),
        summaries={arm: summarize_arm(arm, results) for arm in Arm},
    )


def test_summary_table_json_and_markdown_agree(suite: tuple[Any, ...]) -> None:
    report = _report(suite, scripted=False)
    on, off = report.summaries[Arm.MEMORY_ON], report.summaries[Arm.MEMORY_OFF]
    assert (on.successes, on.failures, on.pick_failures) == (3, 0, (1, 0, 0))
    assert (off.successes, off.failures, off.pick_failures) == (2, 1, (1, 2, 1))
    assert off.failed_calls == {"pick_object": 4}
    assert on.memory_tokens == TokenCount(9, 3)
    rows = {row[0]: row[1:] for row in table_rows(report)}
    assert rows["tasks succeeded (ground truth)"] == ["3/3", "2/3"]
    assert rows["failed calls: pick_object"] == ["1", "4"]
    assert rows["decision tokens in"] == ["30", "30"]
    data = report_to_dict(report)
    assert data["measures_learning"] is True and data["disclaimer"] is None
    assert data["arms"]["memory_off"]["failed_calls"] == {"pick_object": 4}
    assert [r["episode"] for r in data["arms"]["memory_on"]["results"]] == [0, 1, 2]
    markdown = render_markdown(report)
    assert "Not a learning measurement" not in markdown
    for row in table_rows(report):
        assert any(line.startswith(f"| {row[0]} ") for line in markdown.splitlines()), row[0]


def test_a_report_of_an_evaluation_stopped_early_says_how_far_it_got(
    suite: tuple[Any, ...], tmp_path: Path
) -> None:
    whole = _report(suite, scripted=False)
    assert episodes_done(whole) == 3
    assert render_table(whole).startswith("harness-ros eval: 3 episode(s) per arm,")
    # Stopped during episode 2 of memory off: memory on has run it, memory off has not.
    last_off = max((r for r in whole.results if r.arm is Arm.MEMORY_OFF), key=lambda r: r.scenario.episode)
    results = tuple(r for r in whole.results if r is not last_off)
    stopped = dataclasses.replace(
        whole, results=results, summaries={arm: summarize_arm(arm, results) for arm in Arm}
    )
    assert episodes_done(stopped) == 2
    assert render_table(stopped).startswith("harness-ros eval: 2 of 3 episode(s) per arm so far,")
    outputs = write_outputs(stopped, tmp_path)
    data = json.loads(outputs.json.read_text())
    assert (data["episodes"], data["episodes_done"]) == (3, 2)
    assert outputs.markdown.read_text().startswith("# harness-ros eval: 2 of 3 episode(s) per arm so far,")


def test_scripted_runs_say_they_do_not_measure_learning(suite: tuple[Any, ...], tmp_path: Path) -> None:
    report = _report(suite, scripted=True)
    assert SCRIPTED_DISCLAIMER in render_table(report)
    assert "NOT a learning measurement" in render_table(report).splitlines()[2]  # the table header
    outputs = write_outputs(report, tmp_path)
    assert json.loads(outputs.json.read_text())["disclaimer"] == SCRIPTED_DISCLAIMER
    assert SCRIPTED_DISCLAIMER in outputs.markdown.read_text()


def test_plot_draws_both_arms_with_their_colours(suite: tuple[Any, ...]) -> None:
    image = draw_pick_failures(_report(suite, scripted=False))
    width, height = PLOT_SIZE
    assert image.shape == (height, width, 3)
    pixels = Counter(map(tuple, image.reshape(-1, 3).tolist()))
    assert pixels[(180, 110, 30)] > 100  # memory on (BGR)
    assert pixels[(20, 120, 240)] > 100  # memory off


# ---------------------------------------------------------------------- end to end
def _table(markdown: str) -> dict[str, list[str]]:
    """Rows of eval.md's results table: metric -> [memory on, memory off]."""
    lines = markdown.split("## Results", 1)[1].split("\n\n", 2)[1].splitlines()
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return {row[0]: row[1:] for row in rows}


def _failed_in_run_folders(arm_dir: Path) -> Counter[str]:
    failed: Counter[str] = Counter()
    for events_file in (arm_dir / "runs").glob("*/events.jsonl"):
        for line in events_file.read_text().splitlines():
            event = json.loads(line)
            if event["type"] == "tool_result" and event["data"]["result"].get("success") is not True:
                failed[event["data"]["tool"]] += 1
    return failed


@pytest.mark.serial
@pytest.mark.ros
@pytest.mark.slow
def test_two_episode_scripted_eval_end_to_end(tmp_path: Path, ros_env: dict[str, str]) -> None:
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    import cv2

    workdir = tmp_path / "eval"
    result = run_orchestrator(
        [*CLI, "eval", "--episodes", "2", "--workdir", str(workdir), "--sim-speed", "8"],
        env=ros_env,
        timeout=170,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"NOTE: {SCRIPTED_DISCLAIMER}" in result.stdout
    # The arms take turns, so an evaluation stopped early compares the same episodes.
    starts = [line.split(":")[0].strip() for line in result.stdout.splitlines() if "] episode " in line]
    assert starts == [
        "[memory on] episode 0 (reach)",
        "[memory off] episode 0 (reach)",
        "[memory on] episode 1 (hidden)",
        "[memory off] episode 1 (hidden)",
    ], starts

    data = json.loads((workdir / "eval.json").read_text())
    assert (data["episodes"], data["episodes_done"]) == (2, 2)
    assert data["measures_learning"] is False and data["disclaimer"] == SCRIPTED_DISCLAIMER
    expected = [s.to_dict() for s in generate_suite(0, 2)]
    assert data["scenarios"] == expected
    arms = data["arms"]
    for name in ("memory_on", "memory_off"):
        arm = arms[name]
        assert [(r["episode"], r["scenario"], r["world_seed"]) for r in arm["results"]] == [
            (s["episode"], s["id"], s["world_seed"]) for s in expected
        ]
        assert arm["successes"] + arm["failures"] == arm["episodes"] == 2
        assert arm["successes"] == sum(r["success"] for r in arm["results"])
        assert Counter(arm["failed_calls"]) == _failed_in_run_folders(workdir / name)
        assert arm["pick_failures"] == [r["failed_calls"].get("pick_object", 0) for r in arm["results"]]
        for episode in arm["results"]:
            assert Path(episode["report_html"]).is_file()
            assert Path(episode["run_dir"], "events.jsonl").is_file()
    # Memory isolation: only the memory-on arm carries the lesson of episode 0 into episode 1.
    assert arms["memory_on"]["results"][0]["memory_dir"] == arms["memory_on"]["results"][1]["memory_dir"]
    off_dirs = {r["memory_dir"] for r in arms["memory_off"]["results"]}
    assert len(off_dirs) == 2
    assert arms["memory_on"]["pick_failures"] == [1, 0]
    assert arms["memory_off"]["pick_failures"] == [1, 1]

    markdown = (workdir / "eval.md").read_text()
    assert SCRIPTED_DISCLAIMER in markdown
    table = _table(markdown)
    assert table == {row[0]: row[1:] for row in data["table"]["rows"]}
    assert table["tasks succeeded (ground truth)"] == [
        f"{arms['memory_on']['successes']}/2",
        f"{arms['memory_off']['successes']}/2",
    ]
    for tool in ("navigate_to", "pick_object", "place_object"):
        assert table[f"failed calls: {tool}"] == [
            str(arms["memory_on"]["failed_calls"].get(tool, 0)),
            str(arms["memory_off"]["failed_calls"].get(tool, 0)),
        ]
    assert table["turns per task"] == [
        f"{arms['memory_on']['turns_per_task']:.1f}",
        f"{arms['memory_off']['turns_per_task']:.1f}",
    ]

    image = cv2.imread(str(workdir / "pick_failures.png"))
    assert image is not None and image.shape == (PLOT_SIZE[1], PLOT_SIZE[0], 3)
    assert math.isclose(
        sum(r["wall_s"] for r in arms["memory_on"]["results"]), arms["memory_on"]["wall_s"], abs_tol=0.01
    )


def test_setup_errors_exit_1_without_a_traceback(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something").write_text("x")
    for extra, message in (
        (["--workdir", str(busy)], "is not empty"),
        (["--workdir", str(tmp_path / "a"), "--episodes", "0"], "--episodes must be between"),
        (["--workdir", str(tmp_path / "b"), "--api-base", "http://localhost:1"], "--api-base needs a model"),
    ):
        result = subprocess.run(
            [*CLI, "eval", *extra], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert message in result.stderr
        assert "Traceback" not in result.stderr


def test_sigterm_ends_a_run_through_its_finally_blocks(tmp_path: Path) -> None:
    # The demo and the eval stop their sim, node and model server in finally blocks; a
    # SIGTERM must reach them (Python's default ends the process at once, orphaning all three).
    import signal
    import subprocess
    import sys

    marker = tmp_path / "stopped"
    script = (
        "import sys, time\n"
        "from harness_ros_sim.ros.children import stop_on_terminate\n"
        "with stop_on_terminate():\n"
        "    try:\n"
        "        print('running', flush=True)\n"
        "        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
        "    finally:\n"
        f"        open({str(marker)!r}, 'w').write('children stopped')\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "running"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
    assert marker.read_text() == "children stopped"


def test_nobody_answers_a_question_in_the_eval_and_a_local_model_gets_the_eval_time_limit(
    tmp_path: Path,
) -> None:
    from harness_ros.config import config_from_flat, flatten_config, load_config
    from harness_ros_sim.ros.eval_runner import EvalOptions, EvalRunner

    scripted = EvalRunner(EvalOptions(workdir=tmp_path))._node_parameters()
    local = EvalRunner(
        EvalOptions(workdir=tmp_path, model="local/1.5b", task_timeout_s=900)
    )._node_parameters()
    # Two minutes per unanswered question was most of a failing episode with the local model.
    assert scripted == {"operator.answer_timeout_s": "5"}
    assert local == {"operator.answer_timeout_s": "5", "harness.task_timeout_s": "840"}
    # The keys are the config's own parameters: set on sim.yaml's, they change what the node runs with.
    path = Path(__file__).parents[1] / "config" / "sim.yaml"
    config = load_config(path)
    flat = flatten_config(config)
    assert set(local) <= set(flat)
    applied = config_from_flat({**flat, **local}, base_dir=path.parent, origin=str(path))
    assert (applied.operator.answer_timeout_s, applied.harness.task_timeout_s) == (5.0, 840.0)
    assert (config.operator.answer_timeout_s, config.harness.task_timeout_s) != (5.0, 840.0)
