"""Make the replay test data by running the real Harness on scripted tools and a scripted model.

    .venv/bin/python test/data/make_bags.py      # regenerate test/data/replay_pick*

Two tasks, recorded the way ``harness-ros node --record`` records them (events and
instruction as std_msgs/String JSON, a throttled camera topic):
1. "pick up the red cup": pick_object fails (out of reach), navigate_to moves closer,
   pick_object succeeds and the evaluator confirms it; the model then proposes a
   Failure and a Success lesson (accepted) plus a transient and a low-confidence entry
   (rejected).
2. "put the cup in the sink": three malformed decisions in a row -> aborted (skipped).

The model replies are recorded as JSONL (``--model-replies``), with the decide and
summarize replies of the session kept in, as a real recording has them. If the
consolidation prompt changes, rerun this script (recorded digests no longer match).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness_ros.evaluation.contracts import Verdict, VerdictStatus  # noqa: E402
from harness_ros.events import HarnessEvent  # noqa: E402
from harness_ros.model.contracts import ModelReply, ToolCall  # noqa: E402
from harness_ros.model.recording import ModelRecorder  # noqa: E402
from harness_ros.tools.contracts import ToolSpec, failure, success  # noqa: E402
from harness_ros.tools.function_tool import FunctionTool  # noqa: E402

DATA = Path(__file__).resolve().parent
BAG_NAME = "replay_pick"
NODE = "/harness"
CAMERA = "/front_camera/image_raw"
START_NS = 1_700_000_000_000_000_000
STEP_NS = 50_000_000
"""Synthetic timeline: one recorded message every 50 ms (deterministic bags)."""

TASK_PICK = "task-pick-1"
TASK_SINK = "task-sink-2"

CONSOLIDATION_REPLY = {
    "memory_entries": [
        {"section": "General Lessons", "text": "cup_2 is currently on the kitchen table.", "confidence": 0.9},
        {"section": "Preferences", "text": "The user likes red cups.", "confidence": 0.4},
    ],
    "tool_experience_entries": [
        {
            "tool": "pick_object",
            "outcome": "failure",
            "text": "When pick_object fails because the object is out of reach, navigate closer "
            "to the object first, then retry the pick.",
            "confidence": 0.9,
        },
        {
            "tool": "pick_object",
            "outcome": "success",
            "text": "pick_object succeeds when the base is within 0.5 m of the object.",
            "confidence": 0.85,
        },
    ],
}


def _call(name: str, arguments: dict[str, Any] | str, call_id: str) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    parsed = None if isinstance(arguments, str) else arguments
    return ToolCall(call_id, name, text, parsed)


DECISIONS: list[ModelReply] = [
    ModelReply(None, (_call("pick_object", {"object": "red cup"}, "c1"),)),
    ModelReply(None, (_call("navigate_to", {"target": "red cup", "standoff_m": 0.4}, "c2"),)),
    ModelReply(None, (_call("pick_object", {"object": "red cup"}, "c3"),)),
    ModelReply(
        None,
        (
            _call(
                "finish_task",
                {
                    "outcome": "succeeded",
                    "summary": "I picked up the red cup after moving closer to the table.",
                },
                "c4",
            ),
        ),
    ),
    # task 2: malformed three times in a row -> aborted
    ModelReply(None, (_call("pick_object", "{not json", "d1"),)),
    ModelReply(None, (_call("teleport", {"where": "sink"}, "d2"),)),
    ModelReply(None, (_call("navigate_to", {"target": 3}, "d3"),)),
]


class ScriptedModel:
    """Routes on the ``# harness_ros: <purpose>`` line; decide replies in order."""

    name = "scripted-test"

    def __init__(self, recorder: ModelRecorder | None = None) -> None:
        self._decisions = list(DECISIONS)
        self._recorder = recorder

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        first = str(messages[0].get("content", "")).split("\n", 1)[0]
        if "consolidate" in first:
            reply = ModelReply(json.dumps(CONSOLIDATION_REPLY))
        elif "summarize" in first:
            reply = ModelReply(json.dumps({"summary": "Navigate within 0.5 m before picking."}))
        else:
            reply = self._decisions.pop(0)
        if self._recorder is not None:
            self._recorder.record(messages, tools=tools, json_mode=json_mode, reply=reply)
        return reply


class ScriptedEvaluator:
    """Confirms every run (the sim's ground truth would)."""

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Any) -> Verdict:
        return Verdict(VerdictStatus.SUCCESS, run_id, None, f"{tool} post-condition holds")


def make_tools() -> list[FunctionTool]:
    picks = {"n": 0}

    def pick_object(object: str) -> dict[str, Any]:
        picks["n"] += 1
        if picks["n"] == 1:
            return failure("object out of reach: 0.92 m from the gripper, reach is 0.60 m")
        return success(run_id=f"pick-{picks['n']}", grasped=object)

    def navigate_to(target: str, standoff_m: float = 0.5) -> dict[str, Any]:
        return success(run_id="nav-1", reached=target, standoff_m=standoff_m)

    obj = {"type": "object", "properties": {"object": {"type": "string"}}, "required": ["object"]}
    nav = {
        "type": "object",
        "properties": {"target": {"type": "string"}, "standoff_m": {"type": "number"}},
        "required": ["target"],
    }
    return [
        FunctionTool(
            ToolSpec(
                "pick_object",
                "Pick an object.",
                obj,
                physical=True,
                evaluated=True,
                post_condition="The object is in the gripper.",
            ),
            pick_object,
        ),
        FunctionTool(
            ToolSpec(
                "navigate_to",
                "Drive next to a target.",
                nav,
                physical=True,
                evaluated=True,
                post_condition="The base is next to the target.",
            ),
            navigate_to,
        ),
    ]


def run_session(work: Path, *, replies: Path | None = None) -> tuple[list[dict[str, Any]], Path]:
    """Run both tasks with the real Harness; returns (event dicts, runs dir)."""
    from harness_ros.harness import Harness
    from harness_ros.memory import FileMemory, ModelMemoryConsolidator

    recorder = ModelRecorder(replies) if replies is not None else None
    model = ScriptedModel(recorder)
    memory = FileMemory(work / "memory", consolidator=ModelMemoryConsolidator(model))
    runs = work / "runs"
    harness = Harness(
        model=model, tools=make_tools(), memory=memory, evaluator=ScriptedEvaluator(), runs_dir=runs
    )
    events: list[dict[str, Any]] = []
    for task_id, instruction in (
        (TASK_PICK, "Pick up the red cup."),
        (TASK_SINK, "Put the cup in the sink."),
    ):
        events.extend(event.to_dict() for event in harness.run(instruction, task_id=task_id))
    return events, runs


def _image_cdr(typestore: Any, stamp_ns: int) -> bytes:
    import numpy as np

    msgs = typestore.types
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    header = msgs["std_msgs/msg/Header"](
        stamp=msgs["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id="front_camera"
    )
    width, height = 8, 6
    data = np.full(width * height * 3, (stamp_ns // STEP_NS) % 256, dtype=np.uint8)
    image = msgs["sensor_msgs/msg/Image"](
        header=header, height=height, width=width, encoding="rgb8", is_bigendian=0, step=width * 3, data=data
    )
    return bytes(typestore.serialize_cdr(image, "sensor_msgs/msg/Image"))


def write_bag(path: Path, events: list[dict[str, Any]], *, storage: str = "mcap", frames: int = 6) -> None:
    """A rosbag2 like the recorder's: camera frames, the instructions, then every event."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_KILTED)
    string = typestore.types["std_msgs/msg/String"]
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        camera = writer.add_connection(CAMERA, "sensor_msgs/msg/Image", typestore=typestore)
        events_conn = writer.add_connection(f"{NODE}/events", "std_msgs/msg/String", typestore=typestore)
        instruction = writer.add_connection(f"{NODE}/instruction", "std_msgs/msg/String", typestore=typestore)
        stamp = START_NS
        for _ in range(frames):
            writer.write(camera, stamp, _image_cdr(typestore, stamp))
            stamp += STEP_NS
        for event in events:
            if event["type"] == "task_started":
                payload = json.dumps(
                    {"instruction": event["data"]["instruction"], "task_id": event["task_id"]}
                )
                writer.write(
                    instruction, stamp, typestore.serialize_cdr(string(data=payload), "std_msgs/msg/String")
                )
                stamp += STEP_NS
            text = HarnessEvent.from_dict(event).to_json()
            writer.write(
                events_conn, stamp, typestore.serialize_cdr(string(data=text), "std_msgs/msg/String")
            )
            stamp += STEP_NS


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        replies = DATA / f"{BAG_NAME}.replies.jsonl"
        replies.unlink(missing_ok=True)
        events, _ = run_session(Path(tmp), replies=replies)
    bag = DATA / BAG_NAME
    if bag.exists():
        shutil.rmtree(bag)
    write_bag(bag, events)
    print(f"wrote {bag} ({len(events)} events) and {replies}")
    print(
        "now: .venv/bin/python -m harness_ros.cli replay test/data/replay_pick "
        "--model-replies test/data/replay_pick.replies.jsonl --write-expect test/data/replay_pick.expect.yaml"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
