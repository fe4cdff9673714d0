"""Text-call problems as data (issue 46, item 3): each is a kind with fields, its English
rendered from them; what the harness does with one is decided from the fields, so rewording
the English changes nothing, and English alone (the harness's own words copied) drives nothing."""

from __future__ import annotations

from typing import Any

import pytest

from harness_ros.harness.guidance.reminders import with_skill_hints
from harness_ros.model.contracts import ModelReply
from harness_ros.model.recording import reply_from_dict, reply_to_dict
from harness_ros.model.text_calls import TextCallProblem, TextCallProblemKind, recover_text_calls

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "load_skill", "parameters": {"type": "object"}}},
    {
        "type": "function",
        "function": {
            "name": "pick_object",
            "parameters": {
                "type": "object",
                "properties": {"object_id": {"type": "string"}},
                "required": ["object_id"],
            },
        },
    },
]
SKILLS = ["tidy-surface"]
REPLY = '{"name": "tidy-surface", "arguments": {}}\n{"name": "pick_object", "arguments": {"object_id": 3}}'


def _problems() -> tuple[TextCallProblem, ...]:
    return recover_text_calls(REPLY, TOOLS).problems


def _reworded(kind: TextCallProblemKind, tool: str, detail: str, offered: tuple[str, ...]) -> str:
    return f"[{kind.value}] la herramienta {tool} no sirve ({detail})"


def test_each_problem_is_a_kind_with_fields_and_its_english() -> None:
    unknown, invalid = _problems()
    assert (unknown.kind, unknown.tool, unknown.offered) == (
        TextCallProblemKind.NOT_OFFERED,
        "tidy-surface",
        ("load_skill", "pick_object"),
    )
    assert unknown == "'tidy-surface' is not an offered tool (offered: load_skill, pick_object)"
    assert (invalid.kind, invalid.tool) == (TextCallProblemKind.INVALID_ARGUMENTS, "pick_object")
    assert invalid.startswith("'pick_object': invalid arguments: object_id: ")


def test_the_skill_hint_holds_when_the_english_is_reworded(monkeypatch: pytest.MonkeyPatch) -> None:
    hinted = with_skill_hints(_problems(), SKILLS, None)
    monkeypatch.setattr(TextCallProblem, "render", staticmethod(_reworded))
    reworded = _problems()
    assert reworded[0] == "[not_offered] la herramienta tidy-surface no sirve ()"
    again = with_skill_hints(reworded, SKILLS, None)
    assert len(again) == len(hinted) == 3
    assert again[1] == hinted[1] and "load_skill" in again[1]  # the same hint, from the fields
    # The loaded skill written as a call: the same note whatever the problem's words.
    assert with_skill_hints(reworded[:1], SKILLS, "tidy-surface")[0].startswith(
        "that call named the loaded skill"
    )


def test_the_harness_s_english_alone_drives_nothing() -> None:
    """The words of a not-offered problem, as a plain string (a model copying them, an older
    recording), are no problem the harness acts on: it is passed on, without a hint."""
    words = str(_problems()[0])
    assert with_skill_hints([words], SKILLS, None) == [words]


def test_a_recorded_reply_keeps_its_problems_structured() -> None:
    reply = ModelReply(text=REPLY, text_call_problems=_problems())
    raw = reply_to_dict(reply)
    assert raw["text_call_problems"][0] == {
        "kind": "not_offered",
        "tool": "tidy-surface",
        "detail": "",
        "offered": ["load_skill", "pick_object"],
    }
    replayed = reply_from_dict(raw)
    assert replayed.text_call_problems == reply.text_call_problems
    assert [p.kind for p in replayed.text_call_problems] == [p.kind for p in _problems()]  # type: ignore[attr-defined]
    # An older recording kept the words only: read as OTHER, rendered as they were.
    old = reply_from_dict({**raw, "text_call_problems": ["'x' is not an offered tool (offered: none)"]})
    [problem] = old.text_call_problems
    assert isinstance(problem, TextCallProblem) and problem.kind is TextCallProblemKind.OTHER
    assert problem == "'x' is not an offered tool (offered: none)"
