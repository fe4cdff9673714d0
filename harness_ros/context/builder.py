"""Assembles one model request from the three context lifetimes.

Request = system message (Resident) + Accumulated history + the newest
Observation message (Refreshed, appended last and never stored), with the Tool
Definitions as the ``tools`` parameter. The system message text is cached per
Resident value, so it is the same string (same bytes) until something in it changes.

With ``skill_in_history`` the loaded skill's block joins the history where it was loaded,
pinned (compaction keeps the latest one whole), instead of the system message: a chat
template that renders the tool definitions after the system text (llama.cpp serving
Qwen2.5) would otherwise read the definitions and the whole history again. Eval run Q,
episode 0, the 1.5B: the decision after ``load_skill`` reused 599 of 2,727 prompt tokens
from llama.cpp's cache (about 70 s at that machine's speed) where the one before reused
1,832 of 2,140.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from harness_ros.context.compaction import estimate_tokens
from harness_ros.context.contracts import Message, ResidentContext
from harness_ros.context.history import History
from harness_ros.context.resident import loaded_skill_section, render_resident

__all__ = ["ContextBuilder"]


class ContextBuilder:
    def __init__(
        self, resident: ResidentContext, history: History | None = None, *, skill_in_history: bool = False
    ) -> None:
        self._skill_in_history = skill_in_history
        self._skill_shown = ""
        if skill_in_history and resident.loaded_skill.strip():
            raise ValueError(
                "with skill_in_history the loaded skill is set with set_loaded_skill, not resident"
            )
        self._resident = resident
        self._system = render_resident(resident)
        self.history = history if history is not None else History()
        self._withheld: frozenset[str] = frozenset()
        self._tools = self._offered()

    @property
    def resident(self) -> ResidentContext:
        return self._resident

    @property
    def system_text(self) -> str:
        return self._system

    def set_loaded_skill(self, text: str | None) -> bool:
        """Update the loaded Skill body; True when the Resident context changed (the system
        message, or with ``skill_in_history`` a new block at the end of the history)."""
        text = text or ""
        if self._skill_in_history:
            if text == self._skill_shown:
                return False
            self._skill_shown = text
            if text.strip():  # unloading happens at task end, with the history's end
                self.history.add_skill(loaded_skill_section(text))
            return True
        if text == self._resident.loaded_skill:
            return False
        self._resident = dataclasses.replace(self._resident, loaded_skill=text)
        self._system = render_resident(self._resident)
        return True

    def withhold(self, names: Iterable[str]) -> bool:
        """Leave these tools out of the request (until withheld again without them);
        True when the offered tools changed."""
        withheld = frozenset(names)
        if withheld == self._withheld:
            return False
        self._withheld = withheld
        self._tools = self._offered()
        return True

    def _offered(self) -> list[dict[str, Any]]:
        return [
            definition
            for definition in self._resident.tool_definitions
            if definition.get("function", {}).get("name") not in self._withheld
        ]

    def tools(self) -> list[dict[str, Any]] | None:
        return list(self._tools) or None

    def messages(self, observation: Message | None = None) -> list[Message]:
        messages: list[Message] = [{"role": "system", "content": self._system}, *self.history.messages()]
        if observation is not None:
            messages.append(observation)
        return messages

    def estimate_tokens(self, observation: Message | None = None) -> int:
        return estimate_tokens(self.messages(observation), self.tools())
