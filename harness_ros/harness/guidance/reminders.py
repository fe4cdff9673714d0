"""Reminders: the answer to a plain-text reply, and calls named after skills read as loads.

For every model (a hosted one writes prose too); the cases are the 1.5B's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness_ros.harness.calls import skill_hint, skill_named
from harness_ros.model.contracts import ModelReply, ToolCall
from harness_ros.model.text_calls import not_offered_name
from harness_ros.skills.contracts import LOAD_SKILL
from harness_ros.skills.guidance import named_calls
from harness_ros.tools.finish_task import FINISH_TASK

if TYPE_CHECKING:
    from harness_ros.skills import SkillSession
    from harness_ros.tools import ToolRegistry

__all__ = [
    "reminder_problems",
    "reminder_text",
    "skill_calls_as_loads",
    "skills_named_in",
    "with_skill_hints",
]


def with_skill_hints(
    problems: Sequence[str], skill_names: Sequence[str], loaded: str | None, loaded_calls: Sequence[str] = ()
) -> list[str]:
    """Each text-call problem, a skill called as a tool followed by how to load it.

    The loaded skill written as a call is said without its name, with the tools its steps
    name: told "'tidy-surface' is the loaded skill, not a tool", the 1.5B, its decision
    started as a call, wrote the same call three times and the task ended (run H); a note
    that named a skill last got that name back before (run E)."""
    out = []
    for problem in problems:
        name = not_offered_name(problem)
        if name is not None and loaded is not None and skill_named(name, [loaded]) is not None:
            tools = f"call a tool they name: {', '.join(loaded_calls)}" if loaded_calls else "call a tool"
            out.append(
                f"that call named the loaded skill, not a tool; its steps are in your context: {tools}"
            )
            continue
        out.append(problem)
        hint = skill_hint(name, skill_names, loaded) if name is not None else None
        if hint:
            out.append(hint)
    return out


def reminder_text(
    problems: Sequence[str], number: int, limit: int, *, call_format: Sequence[str] | None = None
) -> str:
    """The harness's answer to a plain-text reply: act through a tool or end the task.
    ``call_format``: the offered tools, for a model that writes its calls as text (it is
    shown the shape of one)."""
    lines = [
        f"Your last reply was plain text without a tool call, so nothing happened and the task "
        f"is still running (reminder {number} of {limit})."
    ]
    if problems:
        lines.append("It held no call that could run: " + "; ".join(problems[:3]) + ".")
    lines.append(
        "Tool results come from the harness: do not repeat them. Call exactly one tool now, or "
        f"call {FINISH_TASK} with outcome and summary to end the task."
    )
    if call_format:
        lines.append(
            'Reply with the call only, as {"name": "<tool>", "arguments": {...}}; tools: '
            + ", ".join(call_format)
            + "."
        )
    return " ".join(lines)


def _load_call(call_id: str, skill: str, from_text: bool) -> ToolCall:
    arguments = {"name": skill}
    return ToolCall(call_id, LOAD_SKILL, json.dumps(arguments), arguments, from_text)


def skills_named_in(text: str, skill_names: Sequence[str], loaded: str | None) -> list[str]:
    """How to load each skill a prose reply names (the 1.5B wrote "you can use the
    `recover-failed-grasp` tool to try again" instead of loading it)."""
    folded = text.lower().replace("_", "-")
    # Not the loaded one: its body is in context, and its name read last came back as a call.
    named = (skill for skill in skill_names if skill.lower() in folded and skill != loaded)
    hints = (skill_hint(skill, skill_names, loaded) for skill in named)
    return [hint for hint in hints if hint]


def skill_calls_as_loads(
    reply: ModelReply, skills: Sequence[str], session: SkillSession | None, registry: ToolRegistry
) -> ModelReply:
    """A call named after a skill, not a tool, is read as ``load_skill`` of it.

    Skills are loaded by name, loading one is read-only, and small models call them as
    tools: after a failed pick the 1.5B wrote ``{"name": "recover-failed-grasp",
    "arguments": {}}`` three times, answering each reminder that named ``load_skill``
    with the same call. The call's own arguments are not used; the events show the
    ``load_skill`` call that ran."""
    if not skills or registry.get(LOAD_SKILL) is None:
        return reply
    # The loaded skill is not loaded again: its call is refused as a skill (calls.skill_hint).
    loaded = session.loaded_name if session is not None else None
    loadable = [name for name in skills if name != loaded]
    calls, problems, changed = [], [], False
    for call in reply.tool_calls:
        skill = skill_named(call.name, loadable) if registry.get(call.name) is None else None
        calls.append(_load_call(call.id, skill, call.recovered_from_text) if skill else call)
        changed = changed or skill is not None
    for problem in reply.text_call_problems:
        name = not_offered_name(problem)
        skill = skill_named(name, loadable) if name is not None else None
        if skill is not None and not calls:
            calls.append(_load_call("text_call_skill", skill, True))
            changed = True
        elif skill is None:
            problems.append(problem)
    if not changed:
        return reply
    text = reply.text if reply.tool_calls else None  # a text call's JSON was the call
    return dataclasses.replace(reply, text=text, tool_calls=tuple(calls), text_call_problems=tuple(problems))


def reminder_problems(
    text_call_problems: Sequence[str],
    text: str,
    skills: Sequence[str],
    session: SkillSession | None,
    offered: Sequence[str],
) -> list[str]:
    """What a reminder says was wrong with a plain-text reply: each text-call problem (a skill
    called as a tool with how to load it), then how to load each skill the prose names."""
    loaded = session.loaded_name if session is not None else None
    skill = session.loaded_skill if session is not None else None
    loaded_calls = named_calls(skill.body, offered) if skill is not None else []
    return [
        *with_skill_hints(text_call_problems, skills, loaded, loaded_calls),
        *skills_named_in(text, skills, loaded),
    ]
