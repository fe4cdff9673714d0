"""Contracts of the operator channel: what a question and an answer are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness_ros.tools.contracts import CancelToken

__all__ = ["ASK_OPERATOR", "NOTIFY_OPERATOR", "OperatorAnswer", "OperatorChannel", "OperatorQuestion"]

ASK_OPERATOR = "ask_operator"
NOTIFY_OPERATOR = "notify_operator"

MAX_QUESTION_CHARS = 500
MAX_CHOICES = 8
MAX_CHOICE_CHARS = 120
MAX_ANSWER_CHARS = 1000
MAX_NOTICE_CHARS = 500


@dataclass(frozen=True)
class OperatorQuestion:
    task_id: str
    question_id: str
    text: str
    choices: tuple[str, ...]
    timeout_s: float


@dataclass(frozen=True)
class OperatorAnswer:
    """An operator's own words: memory may take a preference from them."""

    question_id: str
    text: str


class OperatorChannel(Protocol):
    """Where questions and notices go. ``ask`` waits, bounded by ``timeout_s`` and ``cancel``;
    None means no answer (timed out or cancelled), never a made-up one."""

    def ask(self, question: OperatorQuestion, cancel: CancelToken) -> OperatorAnswer | None: ...

    def notify(self, task_id: str, text: str, level: str) -> None: ...
