"""Context lifetimes: Resident rendering, the Observation message, compact results, compaction."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from harness_ros.context import (
    COMPACT_PROMPT,
    IMAGE_TOKENS,
    Compactor,
    ContextBuilder,
    EntryKind,
    History,
    ResidentContext,
    compact_value,
    estimate_tokens,
    observation_message,
    observation_summary,
    render_resident,
    tool_message,
)
from harness_ros.errors import LLMError
from harness_ros.model.contracts import ModelReply
from harness_ros.observation.contracts import Clearance, DepthRegion, DepthSummary, Observation, ViewImage

JPEG = b"\xff\xd8\xff\xe0fake-jpeg\xff\xd9"


def _observation(*, stale_wrist: bool = True) -> Observation:
    return Observation(
        time=100.0,
        views=(
            ViewImage("front", JPEG, 320, 240, 99.9, 0.1, False),
            ViewImage("wrist", JPEG, 160, 120, 97.0, 3.0, stale_wrist),
            ViewImage("torso", b"", 0, 0, None, None, True, missing=True),
        ),
        depth=DepthSummary((DepthRegion("centre", 0.52, 1.1),), 99.9, 0.1, False),
        clearance=Clearance(1.2, 0.4, None, 0.8, 99.95, 0.05, False),
    )


class _Model:
    name = "fake"

    def __init__(self, reply: ModelReply | Exception) -> None:
        self.reply = reply
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_resident_order_and_bytes_are_stable() -> None:
    resident = ResidentContext(
        system_prompt="# harness_ros: decide\nrules",
        memory="## Preferences\n- [user-preference] cups on the left",
        profile="# Embodiment Profile\nfootprint 0.3 m",
        tool_definitions=({"type": "function", "function": {"name": "pick"}},),
        skill_catalog="- tidy-table: clear a table",
        loaded_skill="Step 1: look.",
    )
    text = render_resident(resident)
    assert text.startswith("# harness_ros: decide\n")
    positions = [
        text.index(h) for h in ("<memory>", "<embodiment_profile>", "<skill_catalog>", "<loaded_skill>")
    ]
    assert positions == sorted(positions)
    assert render_resident(ResidentContext(**resident.__dict__)).encode() == text.encode()
    # Empty parts leave no empty section behind.
    bare = render_resident(ResidentContext(system_prompt="# harness_ros: decide"))
    assert "<memory>" not in bare and "<loaded_skill>" not in bare


def test_builder_puts_observation_last_and_does_not_keep_it() -> None:
    builder = ContextBuilder(ResidentContext(system_prompt="# harness_ros: decide"))
    builder.history.add_instruction("bring the cup")
    obs = observation_message(_observation())
    with_obs = builder.messages(obs)
    assert with_obs[-1] is obs
    assert builder.messages() == with_obs[:-1]
    assert builder.set_loaded_skill("body") is True
    assert builder.set_loaded_skill("body") is False
    assert "<loaded_skill>\nbody" in builder.messages()[0]["content"]


def test_a_3x3_depth_grid_is_one_line_row_by_row_left_to_right() -> None:
    from harness_ros.observation.contracts import DEPTH_REGION_NAMES

    regions = tuple(
        DepthRegion(name, round(0.5 + i / 10, 2), None if name == "bottom-right" else round(1.0 + i / 10, 2))
        for i, name in enumerate(DEPTH_REGION_NAMES)
    )
    observation = replace(_observation(), depth=DepthSummary(regions, 99.9, 0.1, False))
    text = observation_message(observation)["content"][0]["text"]
    (line,) = [line for line in text.splitlines() if line.startswith("Depth")]
    assert line == (
        "Depth nearest/median m per image region, left to right: "
        "top 0.5/1.0 0.6/1.1 0.7/1.2; middle 0.8/1.3 0.9/1.4 1.0/1.5; "
        "bottom 1.1/1.6 1.2/1.7 1.3/unknown"
    )
    assert "top-left" not in text


def test_observation_message_labels_freshness_and_metres() -> None:
    message = observation_message(_observation())
    assert message["role"] == "user"
    text = message["content"][0]["text"]
    assert text.startswith("# Observation")
    assert "front: 320x240, age 0.10 s" in text
    assert "wrist: 160x120, STALE (age 3.00 s)" in text
    assert "torso: 0x0, not started (no frame received yet)" in text
    # Metres, said once in each line's heading; clearance to the centimetre, depth regions
    # to the decimetre (a digit is a token to a local model).
    # A fresh reading carries no age (a stale one does, test below).
    assert "Base clearance m from the footprint edge: forward 1.20" in text
    assert "forward 1.20, left 0.40, backward unknown, right 0.80" in text
    assert "centre 0.5/1.1" in text and "nearest/median m" in text
    images = [part for part in message["content"] if part["type"] == "image_url"]
    assert len(images) == 2  # the missing view sends no image
    url = images[0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == JPEG


def test_stale_clearance_is_flagged_in_the_message() -> None:
    obs = Observation(time=1.0, clearance=Clearance(1.0, 1.0, 1.0, 1.0, 0.0, 2.0, True))
    text = observation_message(obs)["content"][0]["text"]
    assert "Base clearance m from the footprint edge (STALE, age 2.00 s: base motion will be blocked)" in text
    missing = Observation(time=1.0, clearance=Clearance(1.0, 1.0, 1.0, 1.0, 0.0, None, False))
    assert "footprint edge (missing):" in observation_message(missing)["content"][0]["text"]
    regions = (DepthRegion("centre", 0.5, 0.6),)
    stale_depth = Observation(time=1.0, depth=DepthSummary(regions, 0.0, 4.0, True))
    assert (
        "nearest/median m (STALE, age 4.00 s): centre 0.5/0.6"
        in (observation_message(stale_depth)["content"][0]["text"])
    )


def test_observation_summary_has_no_image_bytes() -> None:
    summary = observation_summary(_observation())
    dumped = json.dumps(summary)
    assert base64.b64encode(JPEG).decode() not in dumped
    assert summary["views"][0] == {
        "name": "front",
        "width": 320,
        "height": 240,
        "jpeg_bytes": len(JPEG),
        "age_s": 0.1,
        "stale": False,
        "missing": False,
        "freshness": "age 0.10 s",
    }
    assert summary["clearance"]["backward"] is None


def test_compact_value_caps_strings_lists_and_bytes() -> None:
    value = {
        "text": "x" * 5000,
        "items": list(range(50)),
        "blob": b"\x00" * 10,
        "deep": {"a": {"b": {"c": {"d": 1}}}},
    }
    out = compact_value(value)
    assert len(out["text"]) < 1100 and out["text"].endswith("chars cut]")
    assert len(out["items"]) == 21 and out["items"][-1] == "... 30 more items"
    assert out["blob"] == "<10 bytes omitted>"
    json.dumps(out)
    message = tool_message("call_1", {"success": True, "value": 1})
    assert message == {"role": "tool", "tool_call_id": "call_1", "content": '{"success": true, "value": 1}'}


def test_estimate_counts_images_at_a_fixed_cost() -> None:
    obs = observation_message(_observation())
    with_images = estimate_tokens([obs])
    text_only = estimate_tokens([{"role": "user", "content": obs["content"][0]["text"]}])
    assert with_images - text_only >= 2 * IMAGE_TOKENS


def _history_with_exchanges(n: int) -> History:
    history = History()
    history.add_instruction("tidy the table")
    for i in range(n):
        history.add_assistant(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}}
                ],
            }
        )
        history.add_tool(tool_message(f"c{i}", {"success": True, "seen": f"thing {i}"}))
        history.add_notes(f"notes after step {i}")
    return history


def test_compaction_keeps_instruction_latest_notes_and_tail() -> None:
    history = _history_with_exchanges(5)
    before = history.entries
    model = _Model(ModelReply(text='{"summary": "looked at things 0-2"}'))
    outcome = Compactor(model, keep_exchanges=2).compact(history, measure=lambda: len(history))
    assert outcome.compacted and outcome.error is None
    kinds = [e.kind for e in history.entries]
    assert kinds[:2] == [EntryKind.INSTRUCTION, EntryKind.CHECKPOINT]
    assert history.entries[0] == before[0]
    # The last two exchanges (assistant + tool + notes) are untouched, in order.
    assert history.entries[2:] == before[-6:]
    # Only the latest notes snapshot survives verbatim (it is in the tail here).
    notes = [e.message["content"] for e in history.entries if e.kind is EntryKind.NOTES]
    assert notes[-1].endswith("notes after step 4\n</task_notes>")
    # Every tool result still follows its assistant tool call.
    for index, entry in enumerate(history.entries):
        if entry.kind is EntryKind.TOOL:
            assert history.entries[index - 1].kind is EntryKind.ASSISTANT
    # The summariser saw only older accumulated messages, never the system prompt.
    request = model.requests[0]
    assert request[0]["content"] == COMPACT_PROMPT
    assert request[0]["content"].splitlines()[0] == "# harness_ros: compact"
    assert "thing 0" in request[1]["content"] and "thing 4" not in request[1]["content"]
    assert "tidy the table" not in request[1]["content"]


def test_compaction_moves_latest_notes_forward_when_it_is_older_than_the_tail() -> None:
    history = _history_with_exchanges(3)
    # Two more exchanges without notes: the latest snapshot is now outside the tail.
    for i in (7, 8):
        history.add_assistant(
            {
                "role": "assistant",
                "content": "hm",
                "tool_calls": [
                    {"id": f"d{i}", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                ],
            }
        )
        history.add_tool(tool_message(f"d{i}", {"success": True, "v": i}))
    Compactor(_Model(ModelReply(text='{"summary": "s"}'))).compact(history, measure=lambda: 0)
    kinds = [e.kind for e in history.entries]
    assert kinds == [
        EntryKind.INSTRUCTION,
        EntryKind.CHECKPOINT,
        EntryKind.NOTES,
        EntryKind.ASSISTANT,
        EntryKind.TOOL,
        EntryKind.ASSISTANT,
        EntryKind.TOOL,
    ]
    assert "notes after step 2" in history.entries[2].message["content"]


@pytest.mark.parametrize(
    "reply",
    [ModelReply(text="not json at all"), ModelReply(text='{"summary": ""}'), LLMError("provider down")],
)
def test_failed_compaction_leaves_history_unchanged(reply: ModelReply | Exception) -> None:
    history = _history_with_exchanges(4)
    before = history.entries
    outcome = Compactor(_Model(reply)).compact(history, measure=lambda: 123)
    assert not outcome.compacted
    assert outcome.error
    assert outcome.before_tokens == outcome.after_tokens == 123
    assert history.entries == before


def test_nothing_to_compact_is_a_no_op() -> None:
    history = _history_with_exchanges(2)
    model = _Model(ModelReply(text='{"summary": "s"}'))
    outcome = Compactor(model, keep_exchanges=2).compact(history, measure=lambda: 1)
    assert not outcome.compacted and outcome.error is None
    assert model.requests == []


class _EchoingSummariser:
    """Answers every request with the markers it was shown, so a test sees what got through."""

    name = "fake"

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        import re

        self.requests.append(messages)
        seen = re.findall(r"MARKER-[A-Z]+", messages[-1]["content"])
        return ModelReply(text=json.dumps({"summary": "saw " + " ".join(seen) if seen else "nothing"}))


def _long_text(chars: int) -> str:
    filler = "the robot looked around and saw the same shelf again. "
    half = (filler * (chars // len(filler) + 1))[: chars // 2]
    text = f"MARKER-START {half}MARKER-MIDDLE {half}"
    return text[: chars - len(" MARKER-END")] + " MARKER-END"


def _raw_tool_message(call_id: str, content: dict[str, Any]) -> dict[str, Any]:
    """A tool message with the whole result: what a model reads from tool_message is
    bounded (400 characters a string), so a long result in the history comes from
    elsewhere (an older history, a plugin's message); compaction must still keep it whole."""
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(content)}


def _history_with_a_long(message: dict[str, Any], *, tool: bool) -> History:
    history = History()
    history.add_instruction("tidy the table")
    for i in range(4):
        calls = [{"id": f"c{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}}]
        if i == 0 and not tool:
            history.add_assistant({**message, "tool_calls": calls})
        else:
            history.add_assistant({"role": "assistant", "content": None, "tool_calls": calls})
        history.add_tool(_raw_tool_message(f"c{i}", message if (i == 0 and tool) else {"success": True}))
    return history


def test_the_middle_and_end_of_a_long_message_reach_the_summariser() -> None:
    text = _long_text(11_000)
    assert len(text) == 11_000
    history = _history_with_a_long({"role": "assistant", "content": text}, tool=False)
    model = _EchoingSummariser()
    outcome = Compactor(model, keep_exchanges=2, max_request_chars=8000).compact(history, measure=lambda: 0)
    assert outcome.compacted, outcome.error
    shown = "\n".join(request[-1]["content"] for request in model.requests[:-1])
    for marker in ("MARKER-START", "MARKER-MIDDLE", "MARKER-END"):
        assert marker in shown
    # Every request fits the summariser's budget, and the checkpoint request carries the
    # summary of the whole message, end included.
    assert all(sum(len(m["content"]) for m in request) <= 8000 for request in model.requests)
    final = model.requests[-1][1]["content"]
    assert "[summarised by the harness: the whole" in final
    assert "MARKER-MIDDLE" in final and "MARKER-END" in final
    assert "saw MARKER-START MARKER-MIDDLE MARKER-END" in history.entries[1].message["content"]


def test_a_long_tool_result_keeps_its_outcome_and_is_summarised_to_its_end() -> None:
    result = {"success": False, "reason": "nothing found", "log": _long_text(11_000)}
    history = _history_with_a_long(result, tool=True)
    model = _EchoingSummariser()
    assert Compactor(model, keep_exchanges=2).compact(history, measure=lambda: 0).compacted
    final = model.requests[-1][1]["content"]
    block = json.loads(final.split("[tool result]\n")[1].split("\n\n[")[0])
    assert (block["success"], block["reason"]) == (False, "nothing found")
    assert "MARKER-MIDDLE" in block["details"] and "MARKER-END" in block["details"]


def test_a_transcript_longer_than_one_request_is_summarised_in_parts() -> None:
    history = History()
    history.add_instruction("tidy the table")
    for i in range(12):
        calls = [{"id": f"c{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}}]
        history.add_assistant(
            {"role": "assistant", "content": f"step MARKER-{'ABCDEFGHIJKL'[i]}", "tool_calls": calls}
        )
        history.add_tool(_raw_tool_message(f"c{i}", {"success": True, "seen": "shelf " * 200}))
    model = _EchoingSummariser()
    Compactor(model, keep_exchanges=2, max_request_chars=6000).compact(history, measure=lambda: 0)
    assert len(model.requests) > 2
    assert all(sum(len(m["content"]) for m in request) <= 6000 for request in model.requests)
    assert model.requests[-1][0]["content"] == COMPACT_PROMPT
    # Every older step (A-J) reaches the checkpoint request through the part summaries.
    assert all(f"MARKER-{letter}" in model.requests[-1][1]["content"] for letter in "ABCDEFGHIJ")
