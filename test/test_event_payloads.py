"""Typed event payloads (issue 46, item 1): one frozen payload class per event type, JSON only
at files and topics, in the shape recordings have always had."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_ros.events import (
    PAYLOADS,
    DonePayload,
    EventType,
    HarnessEvent,
    ToolResultPayload,
    TurnPayload,
    VerdictPayload,
)
from harness_ros.ros.bag import iter_events, open_bag

DATA = Path(__file__).resolve().parent / "data"
RECORDINGS = [DATA / "replay_pick", DATA / "sim_fetch" / "recording.mcap"]


def test_every_event_type_has_its_payload_class() -> None:
    assert set(PAYLOADS) == set(EventType)
    assert len(set(PAYLOADS.values())) == len(EventType)


@pytest.mark.parametrize("bag", RECORDINGS, ids=lambda path: path.name)
def test_recorded_events_are_typed_and_written_back_unchanged(bag: Path) -> None:
    raws = list(iter_events(open_bag(bag)))
    assert len(raws) > 20
    kinds = set()
    for raw in raws:
        event = HarnessEvent.from_dict(raw)
        kinds.add(event.type)
        assert type(event.payload) is PAYLOADS[event.type]
        assert json.loads(event.to_json()) == json.loads(json.dumps(raw, sort_keys=True))
        assert HarnessEvent.from_json(event.to_json()) == event
    assert {EventType.TOOL_RESULT, EventType.TOOL_CALL, EventType.DONE} <= kinds


def test_a_recorded_value_of_another_type_is_kept_as_it_was() -> None:
    data: dict[str, Any] = {"tool": 7, "call_id": "c1", "result": {"success": True}, "surprise": [1]}
    payload = ToolResultPayload.from_data(data)
    assert payload.tool == "" and payload.call_id == "c1"
    assert payload.extra == {"tool": 7, "surprise": [1]}
    assert payload.to_data() == data  # no keys added (no executed, refusal, ...)


def test_the_harness_fields_are_read_typed() -> None:
    done = HarnessEvent(EventType.DONE, "t", data={"status": "completed", "turns": 3, "reason": ""})
    assert isinstance(done.payload, DonePayload)
    assert done.payload.status == "completed" and done.payload.turns == 3
    assert done.payload.to_data() == {
        "status": "completed",
        "turns": 3,
        "reason": "",
    }  # the absent keys stay absent
    task = VerdictPayload(scope="task", goal="g", claim=None, verdict={"status": "success"})
    assert task.to_data() == {"scope": "task", "goal": "g", "claim": None, "verdict": {"status": "success"}}
    call = VerdictPayload(tool="pick", run_id=None, verdict={"status": "failure"})
    assert call.to_data() == {"tool": "pick", "run_id": None, "verdict": {"status": "failure"}}
    ran = ToolResultPayload(
        tool="pick", call_id="c", result={}, executed=True, malformed=False, elapsed_s=0.5
    )
    assert ran.to_data()["refusal"] is None
    extra_call = ToolResultPayload(tool="pick", call_id="c2", result={}, refused=True)
    assert set(extra_call.to_data()) == {"tool", "call_id", "result", "refused"}


def test_a_payload_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match="tool_result event takes a ToolResultPayload, got TurnPayload"):
        HarnessEvent(EventType.TOOL_RESULT, "t", payload=TurnPayload(elapsed_s=1.0))
    event = HarnessEvent(EventType.TURN, "t", payload=TurnPayload(elapsed_s=1.0))
    with pytest.raises(AttributeError):
        event.turn = 3  # type: ignore[misc]
