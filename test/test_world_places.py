"""Named places with poses (issues 45 and 48): a robot that navigates by pose (Nav2's
navigate_to_pose, as Stretch 3 does) is told where the places its instruction names are,
and recall_object answers with a pose a navigate_to_pose call takes. The physics eval
gives both arms the operator's map of its scene."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_ros.harness.recall_object import RecallObjectTool
from harness_ros.local_model.tokenizer import LocalTokenizer, installed_tokenizer_model
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.world import WORLD_FILE, WorldDocument, recall, render_brief
from harness_ros.tools.contracts import CancelToken
from harness_ros.trajectory import Trajectory
from harness_ros_sim.physics.scripted import PHYSICS_FETCH, PHYSICS_INSTRUCTION, PHYSICS_PLACES
from harness_ros_sim.ros.physics_eval_runner import operator_world, seed_operator_places

NOW = 1767265200.0  # 2026-01-01T11:00:00Z
MAP = """# World

## Places
- dining_table | kind: surface | pose: 2.10 0.50 1.5708 map | state: confirmed | evidence: the operator's map
- kitchen_counter | kind: surface | pose: 1.20 -0.40 -1.5708 map | state: unverified | evidence: my map
- hall_drawer | kind: drawer | state: confirmed | confirmed: 2026-01-01T10:00:00Z
## Objects
- red_cup | kind: cup | where: dining_table | state: confirmed | confirmed: 2026-01-01T10:00:00Z
- green_can | kind: can | where: kitchen_counter | state: stale | confirmed: 2026-01-01T10:00:00Z
"""
DINING = "place dining_table (surface) at x 2.10 y 0.50 yaw 90 deg map (the operator's map)"
COUNTER = "place kitchen_counter (surface) UNVERIFIED at x 1.20 y -0.40 yaw -90 deg map (my map)"


@pytest.fixture(scope="module")
def count() -> Iterator[Callable[[str], int]]:
    """The local model's tokenizer where it is installed, else the brief's own estimate."""
    path = installed_tokenizer_model()
    if path is None:
        yield lambda text: -(-len(text) // 3)
        return
    tokenizer = LocalTokenizer(path)
    try:
        yield tokenizer.count_text
    finally:
        tokenizer.close()


def _brief(text: str, instruction: str, count: Callable[[str], int], max_tokens: int = 120) -> str:
    return render_brief(WorldDocument.parse(text), instruction, NOW, max_tokens=max_tokens, count=count)


# ---------------------------------------------------------------------- the brief


def test_the_brief_names_the_places_the_instruction_names_with_their_pose(
    count: Callable[[str], int],
) -> None:
    brief = _brief(MAP, "Bring the green can from the kitchen counter to the dining table.", count)
    # After the named object, in the instruction's order, each with its pose and its source.
    assert brief.index("green_can (can) STALE") < brief.index(COUNTER) < brief.index(DINING)
    assert "hall_drawer" not in brief  # a place the instruction does not name
    assert count(brief) <= 120


def test_a_place_is_briefed_only_when_the_instruction_names_it(count: Callable[[str], int]) -> None:
    places_only = MAP.split("## Objects", maxsplit=1)[0]
    assert _brief(places_only, "Go to the dining table.", count).endswith(f": {DINING}.")
    assert _brief(places_only, "Turn around and look at the floor.", count) == ""
    # "table" alone does not name dining_table: every word of the name must be there.
    assert _brief(places_only, "Go to the table.", count) == ""


def test_the_place_a_named_object_is_on_comes_with_its_pose(count: Callable[[str], int]) -> None:
    brief = _brief(MAP, "Bring me the red cup.", count)
    assert brief.index("red_cup (cup) on dining_table (60 min ago)") < brief.index(DINING)
    # Not for an object marked stale: it is not there.
    assert "place kitchen_counter" not in _brief(MAP, "Bring me the green can.", count)


def test_the_brief_holds_its_budget_with_many_places(count: Callable[[str], int]) -> None:
    lines = ["# World", "", "## Places"]
    words = []
    for i in range(30):
        lines.append(
            f"- place{i}_table | kind: surface | pose: {i}.25 -{i}.50 3.14 map | state: confirmed "
            "| evidence: the operator's map"
        )
        words.append(f"place{i}")
    instruction = "Visit the table at " + ", ".join(words) + "."
    brief = _brief("\n".join(lines) + "\n", instruction, count)
    assert count(brief) <= 120
    assert "place place0_table (surface) at x 0.25 y -0.50 yaw 180 deg map" in brief
    assert 0 < brief.count("place place") < 30  # cut at the budget, not sent whole


def test_the_physics_task_brief_names_both_places_within_the_budget(count: Callable[[str], int]) -> None:
    brief = _brief(operator_world(), PHYSICS_INSTRUCTION, count)
    for name, (x, y, yaw) in PHYSICS_PLACES.items():
        assert f"place {name} (surface) at x {x:.2f} y {y:.2f} yaw {yaw} deg map (operator's map)" in brief
    assert brief.index("dining_table") < brief.index("kitchen_counter")  # the instruction's order
    assert count(brief) <= 120


# ---------------------------------------------------------------------- recall_object


def test_recall_gives_a_navigate_pose_for_a_place_and_an_object_on_it() -> None:
    doc = WorldDocument.parse(MAP)
    table = recall(doc, "dining table", NOW)["found"][0]
    assert table["navigate_target"] == "dining_table"
    assert table["navigate_pose"] == {"x": 2.1, "y": 0.5, "yaw": 90, "frame": "map"}
    cup = recall(doc, "cup", NOW)["found"][0]
    assert (cup["navigate_target"], cup["navigate_pose"]) == ("dining_table", table["navigate_pose"])
    # None where there is nowhere to drive: a stale object, a place without a pose.
    assert "navigate_pose" not in recall(doc, "green_can", NOW)["found"][0]
    assert "navigate_pose" not in recall(doc, "hall_drawer", NOW)["found"][0]


def test_recall_object_tool_answers_with_the_pose(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path, consolidator=_NoLessons(), tool_experience_summarizer=None)
    (tmp_path / WORLD_FILE).write_text(MAP, encoding="utf-8")
    tool = RecallObjectTool(memory)
    assert tool.offered()
    assert "navigate_pose" in tool.spec.description
    answer = tool.execute({"name": "kitchen_counter"}, cancel=CancelToken())
    assert answer["found"][0]["navigate_pose"] == {"x": 1.2, "y": -0.4, "yaw": -90, "frame": "map"}


class _NoLessons:
    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation()


# ---------------------------------------------------------------------- the physics eval


def test_the_physics_eval_seeds_the_operators_places_where_the_fetch_drives(tmp_path: Path) -> None:
    memory = tmp_path / "memory_off" / "memory" / "episode-000"
    assert seed_operator_places(memory)
    doc = WorldDocument.parse((memory / WORLD_FILE).read_text(encoding="utf-8"))
    assert doc.problems == []
    drives = [arguments for tool, arguments in PHYSICS_FETCH if tool == "navigate_to_pose"]
    poses = []
    for name in ("dining_table", "kitchen_counter"):
        place = doc.get("place", name)
        assert place is not None and place.pose is not None
        assert (place.kind, place.state, place.evidence) == ("surface", "confirmed", "operator's map")
        poses.append({"x": place.pose.x, "y": place.pose.y, "yaw": round(math.degrees(place.pose.yaw or 0))})
    # The poses the scripted fetch drives to for the pick and the place: they work in MuJoCo.
    assert poses == drives
    # A folder that has its WORLD.md (the memory-on arm after an episode) keeps it.
    (memory / WORLD_FILE).write_text("# World\n\nlearnt\n", encoding="utf-8")
    assert not seed_operator_places(memory)
    assert (memory / WORLD_FILE).read_text(encoding="utf-8") == "# World\n\nlearnt\n"


def test_a_seeded_memory_folder_briefs_the_physics_task(tmp_path: Path) -> None:
    """Through FileMemory, as the harness node reads it: the first snapshot carries the brief."""
    seed_operator_places(tmp_path)
    memory = FileMemory(tmp_path, consolidator=_NoLessons(), tool_experience_summarizer=None)
    memory.start_task(PHYSICS_INSTRUCTION, task_id="t1")
    first = memory.task_notes_snapshot_if_changed()
    assert first is not None
    assert "place dining_table (surface) at x 0.20 y 0.00 yaw 0 deg map (operator's map)" in first.text
    assert "place kitchen_counter (surface) at x 1.60 y 0.00 yaw 0 deg map (operator's map)" in first.text
