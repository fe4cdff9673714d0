"""What kind of failure a result's reason names.

A failure reason is ``<what>: <detail>`` clauses (``action server '/arm/pick_object'
aborted the goal: object out of reach: 1.01 m > 0.75 m``); the short clauses made of words
(``object out of reach``) name the kind, which skills and lessons quote to speak of it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_ros.trajectory.contracts import TrajectoryStep

__all__ = ["failure_phrases", "failure_reason"]

_WORDY = re.compile(r"^[a-z][a-z' -]*[a-z]$")
_MAX_PHRASE_WORDS = 6


def failure_phrases(reason: str) -> list[str]:
    """The clauses of ``reason`` that name a kind of failure: two to six plain words, or
    such words before `` by `` and what did it (``path blocked by office_wall_south_a``:
    ``path blocked``; the sim's drives and the Gazebo lidar stop say what blocked them)."""
    phrases = []
    for part in re.split(r"[:;]", reason.lower()):
        clause = part.strip().strip(".")
        kind = clause.split(" by ", 1)[0] if not _WORDY.match(clause) else clause
        if _WORDY.match(kind) and 2 <= len(kind.split()) <= _MAX_PHRASE_WORDS and kind not in phrases:
            phrases.append(kind)
    return phrases


def failure_reason(step: TrajectoryStep) -> str:
    """Why ``step`` failed: the evaluator's failure reason when its verdict refuted the call,
    else its result's reason ("" if none).

    A refuted call's result reason is the harness's own envelope, ``post-condition not met:
    <the evaluator's reason>``; read as a failure phrase, "post-condition not met" keyed
    lessons and skill notes on the harness's wording rather than on what failed."""
    verdict = step.verdict
    if verdict is not None and verdict.status == "failure":
        return verdict.failure_reason if isinstance(verdict.failure_reason, str) else ""
    if step.result.success is False:
        return step.result.reason or ""
    return (verdict.failure_reason if verdict is not None else None) or ""
