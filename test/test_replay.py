"""Consolidation replay from rosbags: trajectory rebuild, expected files, bag errors (no ROS needed)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness_ros.cli import main as cli_main
from harness_ros.errors import BagError
from harness_ros.replay import rebuild_tasks
from harness_ros.ros.bag import iter_events, iter_messages, open_bag

DATA = Path(__file__).resolve().parent / "data"
BAG = DATA / "replay_pick"
REPLIES = DATA / "replay_pick.replies.jsonl"
EXPECT = DATA / "replay_pick.expect.yaml"
SAMPLES = Path("/work/shared/data/rosbag2-samples")

sys.path.insert(0, str(DATA))
import make_bags  # noqa: E402


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli_main(["replay", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    """The two scripted tasks run by the real Harness (events + run folders)."""
    return make_bags.run_session(tmp_path_factory.mktemp("session"))


# ---------------------------------------------------------------------- trajectory rebuild
def test_rebuilt_trajectories_equal_the_harness_trajectory_json(
    session: tuple[list[dict[str, Any]], Path],
) -> None:
    events, runs = session
    tasks = rebuild_tasks(events)
    assert [t.task_id for t in tasks] == [make_bags.TASK_PICK, make_bags.TASK_SINK]
    assert [t.status for t in tasks] == ["completed", "aborted"]
    for task in tasks:
        written = json.loads((runs / task.task_id / "trajectory.json").read_text(encoding="utf-8"))
        assert task.trajectory.to_json() == written
    pick = tasks[0].trajectory.steps
    assert [step.tool for step in pick] == ["pick_object", "navigate_to", "pick_object"]
    assert pick[0].result.success is False and pick[0].verdict is None
    assert pick[2].verdict is not None and pick[2].verdict.status == "success"
    # malformed calls of known tools are in the trajectory, the unknown tool is not
    assert [step.tool for step in tasks[1].trajectory.steps] == ["pick_object", "navigate_to"]


def test_rebuilt_trajectory_from_the_recorded_bag_equals_the_live_one(
    session: tuple[list[dict[str, Any]], Path],
) -> None:
    live = rebuild_tasks(session[0])
    recorded = rebuild_tasks(iter_events(open_bag(BAG)))
    assert [t.trajectory for t in recorded] == [t.trajectory for t in live]


def _event(kind: str, data: dict[str, Any], task_id: str = "t1") -> dict[str, Any]:
    return {"type": kind, "task_id": task_id, "turn": 1, "time": 0.0, "data": data}


def test_rebuild_applies_hook_rewrites_and_skips_refused_calls() -> None:
    events = [
        _event("task_started", {"instruction": " go ", "tools": ["move_base"]}),
        _event("tool_call", {"tool": "move_base", "call_id": "a", "arguments": {"distance_m": 2.0}}),
        _event("safety", {"tool": "move_base", "action": "rewrite", "arguments": {"distance_m": 0.6}}),
        _event(
            "tool_result", {"tool": "move_base", "call_id": "a", "result": {"success": True, "moved": 0.6}}
        ),
        _event(
            "tool_result",
            {"tool": "move_base", "call_id": "b", "refused": True, "result": {"success": False}},
        ),
        _event("tool_result", {"tool": "not_a_tool", "malformed": True, "result": {"success": False}}),
        {"type": "unknown_future_event", "task_id": "t1", "data": {}},
        {"garbage": True},
    ]
    (task,) = rebuild_tasks(events)
    assert task.instruction == "go" and task.status is None
    assert task.trajectory.status == "running"
    assert task.trajectory.to_json()["events"] == [
        {
            "index": 1,
            "tool": "move_base",
            "arguments": {"distance_m": 0.6},
            "result": {"success": True, "moved": 0.6},
            "verdict": None,
        }
    ]


# ---------------------------------------------------------------------- consolidate replay
def test_replay_reproduces_the_expected_entries_from_the_checked_in_bag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _replay(capsys, str(BAG), "--model-replies", str(REPLIES), "--expect", str(EXPECT))
    assert code == 0, out
    assert "accepted tool_experience [pick_object/failure]" in out
    assert "rejected memory [General Lessons] 'cup_2 is currently" in out
    assert "rule transient:instance_id" in out
    assert "task task-sink-2 (aborted)" in out and "skipped" in out
    assert "expected entries match" in out


def test_expect_fails_on_a_changed_rule(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness_ros.memory.consolidation as consolidation

    # A rule change: the evidence rule for failure lessons now never holds.
    monkeypatch.setattr(consolidation, "has_failure_then_confirmed_success", lambda events, tool: False)
    code, out, _ = _replay(capsys, str(BAG), "--model-replies", str(REPLIES), "--expect", str(EXPECT))
    assert code == 1
    assert "DIFFERENCE" in out
    assert "- expected: tool_experience [pick_object/failure]" in out
    assert "(proposed, rejected by rule" in out


def test_expect_fails_on_a_changed_expected_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    changed = tmp_path / "expect.yaml"
    changed.write_text(EXPECT.read_text().replace("within 0.5 m", "within 0.3 m"), encoding="utf-8")
    code, out, _ = _replay(capsys, str(BAG), "--model-replies", str(REPLIES), "--expect", str(changed))
    assert code == 1
    assert (
        "- expected: tool_experience [pick_object/success] 'pick_object succeeds when the base is within 0.3"
        in out
    )
    assert (
        "+ accepted: tool_experience [pick_object/success] 'pick_object succeeds when the base is within 0.5"
        in out
    )


def test_from_recording_and_write_expect_round_trip(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "golden.json"
    memory = tmp_path / "memory"
    code, out, _ = _replay(
        capsys, str(BAG), "--from-recording", "--write-expect", str(written), "--memory", str(memory)
    )
    assert code == 0, out
    golden = json.loads(written.read_text(encoding="utf-8"))
    assert golden["tasks"]["task-sink-2"] == {"skipped": "aborted"}
    assert len(golden["tasks"]["task-pick-1"]["accepted"]) == 2
    assert "navigate closer" in (memory / "tool_experience" / "pick_object.md").read_text(encoding="utf-8")
    code, out, _ = _replay(capsys, str(BAG), "--from-recording", "--expect", str(EXPECT))
    assert code == 0, out


def test_replay_consolidates_with_the_node_memory_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Replay opens the memory folder as the node does (``FileMemory.from_config``): the
    config's audit rotation applies, not FileMemory's defaults (5 MiB, 3 generations)."""
    config = tmp_path / "config.yaml"
    config.write_text("memory:\n  audit_max_bytes: 1024\n  audit_keep: 1\n", encoding="utf-8")
    memory = tmp_path / "memory"
    memory.mkdir()
    earlier = json.dumps({"time": 1.0, "event": "earlier", "pad": "x" * 200}) + "\n"
    (memory / "audit.jsonl").write_text(earlier, encoding="utf-8")
    code, out, _ = _replay(
        capsys, str(BAG), "--config", str(config), "--from-recording", "--memory", str(memory)
    )
    assert code == 0, out
    # The replay's audit (over 1 KiB with the earlier line) rotated it out, as the node would.
    assert (memory / "audit.jsonl.1").read_text(encoding="utf-8") == earlier
    assert not (memory / "audit.jsonl.2").exists()
    from harness_ros.config import load_config
    from harness_ros.memory import FileMemory

    node_memory = FileMemory.from_config(load_config(config).memory, root=memory)
    assert node_memory.audit_files() == [memory / "audit.jsonl.1", memory / "audit.jsonl"]
    proposals = [r for r in node_memory.audit_records() if r.get("event") == "proposal"]
    assert {r["task_id"] for r in proposals} == {make_bags.TASK_PICK} and len(proposals) == 4


def test_sqlite3_bag_replays_like_the_mcap_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, session: tuple[list[dict[str, Any]], Path]
) -> None:
    bag = tmp_path / "pick_sqlite"
    make_bags.write_bag(bag, session[0], storage="sqlite3")
    assert open_bag(bag).storage == "sqlite3"
    code, out, _ = _replay(capsys, str(bag), "--model-replies", str(REPLIES), "--expect", str(EXPECT))
    assert code == 0, out


def test_changed_request_is_refused_unless_lenient(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("memory:\n  min_confidence: 0.95\n", encoding="utf-8")
    code, _, err = _replay(capsys, str(BAG), "--config", str(config), "--model-replies", str(REPLIES))
    assert code == 1 and "differs from the recording" in err and "Traceback" not in err
    args = (
        "--config",
        str(config),
        "--model-replies",
        str(REPLIES),
        "--lenient-replies",
        "--expect",
        str(EXPECT),
    )
    code, out, _ = _replay(capsys, str(BAG), *args)
    assert code == 1 and "rejected by rule 'below_confidence'" in out


# ---------------------------------------------------------------------- rosbag2 samples and errors
@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("mcap-cdr_test", 7),
        ("sqlite3-cdr_test", 7),
        ("mcap-bag_with_topics_and_service_events", 10),
        ("sqlite3-bag_with_topics_and_service_events", 10),
        ("mcap-talker", 20),
        ("sqlite3-talker", 20),
    ],
)
def test_reads_bags_written_by_ros2_bag(name: str, count: int) -> None:
    bag = open_bag(SAMPLES / name)
    messages = list(iter_messages(bag))
    assert len(messages) == count == bag.message_count
    assert {m.topic for m in messages} <= set(bag.topics)


def _truncated(tmp_path: Path) -> Path:
    bag = tmp_path / "truncated"
    shutil.copytree(SAMPLES / "mcap-cdr_test", bag)
    storage = bag / "cdr_test_0.mcap"
    storage.chmod(0o644)
    storage.write_bytes(storage.read_bytes()[:4000])
    return bag


def _no_metadata(tmp_path: Path) -> Path:
    folder = tmp_path / "not_a_bag"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "nowhere", "no such file or directory"),
        (_no_metadata, "not a rosbag2: no metadata.yaml"),
        (lambda tmp: SAMPLES / "empty_bag", "the bag is empty: 0 messages recorded"),
        (lambda tmp: SAMPLES / "mcap-wrong_rmw_test", "unsupported serialization format"),
        (_truncated, "corrupt or truncated"),
        (
            lambda tmp: SAMPLES / "mcap-cdr_test",
            r"no harness events topic .*topics: /array_topic \(test_msgs/msg/Arrays\)",
        ),
        (lambda tmp: SAMPLES / "sqlite3-talker", r"no harness events topic .*/topic \(std_msgs/msg/String\)"),
    ],
)
def test_bad_bags_give_one_clear_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: Any, message: str
) -> None:
    import re

    bag = make(tmp_path)
    code, _, err = _replay(capsys, str(bag), "--from-recording")
    assert code == 1
    assert err.startswith(f"error: {str(bag)!r}: ")
    assert re.search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_truncated_bag_raises_bag_error_while_reading(tmp_path: Path) -> None:
    with pytest.raises(BagError, match="truncated"):
        list(iter_messages(open_bag(_truncated(tmp_path))))


def test_checked_in_data_is_small() -> None:
    for path in DATA.rglob("*"):
        if path.is_file():
            assert path.stat().st_size < 1_000_000, path


# ---------------------------------------------------------------------- bad messages
def _string_cdr(text: str) -> bytes:
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_KILTED)
    message = typestore.types["std_msgs/msg/String"](data=text)
    return bytes(typestore.serialize_cdr(message, "std_msgs/msg/String"))


def test_a_bad_message_is_skipped_named_and_counted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, session: tuple[list[dict[str, Any]], Path]
) -> None:
    bag = tmp_path / "with_bad_messages"
    nested = "[" * 100_000 + "]" * 100_000  # json.loads: RecursionError
    deep = json.dumps(
        {"type": "note", "task_id": make_bags.TASK_PICK, "data": json.loads("[" * 200 + "]" * 200)}
    )
    corrupt = b"\x00\x01\x00\x00\xff\xff\xff\x7fabc"  # a string length past the message: SerdeError
    make_bags.write_bag(
        bag, session[0], raw_events={2: _string_cdr(nested), 4: corrupt, 6: _string_cdr(deep), 7: b"\x00"}
    )
    code, out, err = _replay(capsys, str(bag), "--model-replies", str(REPLIES), "--expect", str(EXPECT))
    assert code == 0, out + err
    assert "expected entries match" in out  # the real events all arrived
    skipped = [line for line in err.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 4, err
    assert skipped[0].startswith(f"skipped {make_bags.NODE}/events message 2 (recorded at 1700000000.")
    assert "JSON nested too deeply" in skipped[0]
    assert (
        f"{make_bags.NODE}/events message 5 " in skipped[1] and "not a CDR std_msgs/msg/String" in skipped[1]
    )
    assert "Invalid string length" in skipped[1]
    assert "nested deeper than" in skipped[2]
    assert "not a CDR std_msgs/msg/String" in skipped[3]
    assert "Traceback" not in err
    assert "4 message(s) skipped" in out


def test_iter_events_reports_each_skipped_message(
    tmp_path: Path, session: tuple[list[dict[str, Any]], Path]
) -> None:
    from harness_ros.ros.bag import SkippedMessage

    bag = tmp_path / "not_events"
    make_bags.write_bag(bag, session[0], raw_events={0: _string_cdr("[1, 2]"), 1: _string_cdr("{oops")})
    skipped: list[SkippedMessage] = []
    events = list(iter_events(open_bag(bag), on_skip=skipped.append))
    assert len(events) == len(session[0])
    # Indices count every message of the topic: raw 0, event 0, raw 1.
    assert [(s.index, s.topic) for s in skipped] == [
        (0, f"{make_bags.NODE}/events"),
        (2, f"{make_bags.NODE}/events"),
    ]
    assert "not a harness event" in skipped[0].reason and "not JSON" in skipped[1].reason
