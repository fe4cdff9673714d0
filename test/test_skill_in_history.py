"""A loaded skill for a model served on this machine joins the history, not the system message.

The chat template llama.cpp serves Qwen2.5 with renders the tool definitions after the system
text, so a skill added to the system message made the next decision read the definitions and
the whole history again (eval run Q: 599 of 2,727 prompt tokens from llama.cpp's cache, about
70 s with the 1.5B on two cores). Checked here on the harness's requests, on compaction, and
on the prompt the real chat template renders (the local model's tokenizer; ``make test``
installs the 0.5B).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from test_harness import ScriptedModel, call, final, plain, reply, run_all

from harness_ros.context import ContextBuilder
from harness_ros.context.compaction import Compactor
from harness_ros.context.contracts import EntryKind, ResidentContext
from harness_ros.harness import Harness
from harness_ros.local_model.tokenizer import LocalTokenizer, installed_tokenizer_model
from harness_ros.model.contracts import ToolCall
from harness_ros.skills import SkillCatalog
from harness_ros.tools import tool

SKILL_LINE = '- "object out of reach": drive to the object itself, then grasp again.'


class _ServedHereModel(ScriptedModel):
    """Scripted replies, as from a model served on this machine (a small local one)."""

    stops_at_harness_text = True
    keeps_skill_in_history = True


def _skills(tmp_path: Path) -> SkillCatalog:
    for name, line in (("recover-failed-grasp", SKILL_LINE), ("tidy-up", "- put things back.")):
        folder = tmp_path / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: When {name}.\n---\n{line}\n")
    return SkillCatalog.discover(tmp_path / "skills")


@tool(description="Grasp an object.", physical=True)
def grasp(object_id: str) -> dict[str, Any]:
    return {"success": True, "message": f"holding the {object_id}"}


def _load(name: str) -> ToolCall:
    return ToolCall(f"l_{name}", "load_skill", f'{{"name": "{name}"}}', {"name": name})


def _requests(model: ScriptedModel, tmp_path: Path) -> list[list[dict[str, Any]]]:
    script = [reply(_load("recover-failed-grasp")), reply(call("grasp", object_id="red_cup")), final("ok")]
    model.steps = script
    run_all(Harness(model=model, tools=[grasp], skills=_skills(tmp_path)))
    return model.requests


def _skill_messages(request: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(request) if str(m["content"]).startswith("<loaded_skill>")]


def test_a_model_served_here_gets_the_skill_in_its_history_and_the_prefix_stays(tmp_path: Path) -> None:
    before, after, later = _requests(_ServedHereModel([]), tmp_path)
    assert after[0] == before[0]  # the system message did not change
    assert "<loaded_skill>" not in str(after[0]["content"])
    (at,) = _skill_messages(after)
    assert after[at - 1]["role"] == "tool" and "is loaded" in str(after[at - 1]["content"])
    block = str(after[at]["content"])
    assert block.startswith("<loaded_skill>\nLoaded skill: recover-failed-grasp\n")
    assert SKILL_LINE in block and block.endswith("</loaded_skill>")
    # The next request keeps it in the same place: everything up to it is the same bytes.
    assert later[: at + 1] == after[: at + 1]
    assert _skill_messages(later) == [at]


def test_a_hosted_model_keeps_the_resident_order(tmp_path: Path) -> None:
    before, after, _ = _requests(ScriptedModel([]), tmp_path)
    assert "<loaded_skill>" not in str(before[0]["content"])
    assert str(after[0]["content"]).rstrip().endswith("</loaded_skill>")
    assert SKILL_LINE in str(after[0]["content"])
    assert _skill_messages(after) == []


def test_a_second_skill_supersedes_the_first_and_compaction_keeps_only_the_latest_whole() -> None:
    resident = ResidentContext(system_prompt="# harness_ros: decide\nrules")
    builder = ContextBuilder(resident, skill_in_history=True)
    builder.history.add_instruction("bring the red cup")
    assert builder.set_loaded_skill("Loaded skill: first\n\nstep one\n") is True
    assert builder.set_loaded_skill("Loaded skill: first\n\nstep one\n") is False  # unchanged: no new block
    for n in range(3):
        builder.history.add_assistant({"role": "assistant", "content": f"call {n}"})
        builder.history.add_tool({"role": "tool", "tool_call_id": str(n), "content": f"result {n}"})
    assert builder.set_loaded_skill("Loaded skill: second\n\nstep two\n") is True
    for n in range(3, 6):
        builder.history.add_assistant({"role": "assistant", "content": f"call {n}"})
        builder.history.add_tool({"role": "tool", "tool_call_id": str(n), "content": f"result {n}"})
    system = builder.system_text
    compact = ScriptedModel([], compact=plain('{"summary": "six calls made"}'))
    outcome = Compactor(compact, keep_exchanges=2).compact(builder.history, measure=lambda: 0)
    assert outcome.compacted and outcome.error is None
    transcript = str(compact.compact_requests[0][1]["content"])
    assert "step one" not in transcript and "step two" not in transcript  # never summarised
    kinds = [e.kind for e in builder.history.entries]
    assert kinds[:3] == [EntryKind.INSTRUCTION, EntryKind.SKILL, EntryKind.CHECKPOINT]
    assert "step two" in str(builder.history.entries[1].message["content"])
    assert not any("step one" in str(m["content"]) for m in builder.history.messages())
    assert builder.system_text == system
    with pytest.raises(ValueError, match="skill_in_history"):
        ContextBuilder(ResidentContext(system_prompt="x", loaded_skill="y"), skill_in_history=True)


def _common_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_the_real_chat_template_shares_the_tools_and_history_across_a_skill_load(tmp_path: Path) -> None:
    path = installed_tokenizer_model()
    if path is None:
        why = "no local model installed (make test-model)"
        if os.environ.get("HARNESS_REQUIRE_LOCAL_MODEL", "").strip():
            pytest.fail(f"{why}; HARNESS_REQUIRE_LOCAL_MODEL is set")
        pytest.skip(why)
    here = _ServedHereModel([])
    here_requests = _requests(here, tmp_path / "here")
    hosted = ScriptedModel([])
    hosted_requests = _requests(hosted, tmp_path / "hosted")
    with LocalTokenizer(path) as tokenizer:

        def shared(model: ScriptedModel, requests: list[list[dict[str, Any]]]) -> tuple[str, int]:
            before = tokenizer.render_request(requests[0], model.tools[0])
            after = tokenizer.render_request(requests[1], model.tools[1])
            return before, _common_prefix(before, after)

        before, reused = shared(here, here_requests)
        task_at = before.index("# Task\nbring the red cup")
        assert before.index("<tools>") < task_at  # the template renders the tools before the history
        # Served here: the definitions and the history before the load are read from the cache.
        assert reused > task_at, before[reused - 80 : reused + 80]
        # In the system message the skill is rendered ahead of the definitions: what the
        # harness did before, and does for a hosted model (which renders tools first).
        before, reused = shared(hosted, hosted_requests)
        assert reused < before.index("<tools>")
