"""What a model did in one task, from its events: decisions, timing, tokens, calls.

The demo prints these after each task decided by a language model (and the local-model
measurements in docs/local-model.md come from them):

- a decision's time is from the event before its ``model_response`` (the observation,
  or a compaction) to the response: the model call, including any retries;
- calls are the tool calls the model made; ``recovered`` those the adapter recovered from
  the reply's text (not native ``tool_calls``); ``refused`` those the harness did not
  execute (a second call in one reply, a call after ``finish_task``, invalid arguments);
- reminders are the harness's notes to a model that replied with plain text instead of
  a call (``reminder`` events).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DecisionStats", "decision_stats"]


@dataclass
class DecisionStats:
    decisions: int = 0
    seconds: list[float] = field(default_factory=list)
    """Per decision, in order."""
    first_prompt_tokens: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    recovered: int = 0
    refused: int = 0
    reminders: int = 0

    @property
    def first_s(self) -> float | None:
        return self.seconds[0] if self.seconds else None

    @property
    def later_median_s(self) -> float | None:
        return statistics.median(self.seconds[1:]) if len(self.seconds) > 1 else None

    def lines(self) -> list[str]:
        """What the demo prints: two lines."""
        if not self.decisions:
            return ["model: no decision was made"]
        timing = f"first {self.first_s:.1f} s ({self.first_prompt_tokens:,} prompt tokens)"
        if self.later_median_s is not None:
            later = self.seconds[1:]
            timing += (
                f", later median {self.later_median_s:.1f} s (min {min(later):.1f}, max {max(later):.1f})"
            )
        return [
            f"model: {self.decisions} decisions; {timing}; tokens {self.prompt_tokens:,} in "
            f"({self.cached_prompt_tokens:,} from the prompt cache), {self.completion_tokens:,} out",
            f"calls: {self.calls} made, {self.recovered} recovered from text, {self.refused} refused; "
            f"reminders sent: {self.reminders}",
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "decisions": self.decisions,
            "seconds": [round(s, 2) for s in self.seconds],
            "first_prompt_tokens": self.first_prompt_tokens,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "recovered": self.recovered,
            "refused": self.refused,
            "reminders": self.reminders,
        }


def _number(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def decision_stats(events: Iterable[Mapping[str, Any]]) -> DecisionStats:
    """Tally one task's events (run log ``events.jsonl`` or the ``~/events`` topic)."""
    stats = DecisionStats()
    previous: float | None = None
    for event in events:
        kind = event.get("type")
        data = event.get("data") or {}
        stamp = event.get("time")
        if kind == "model_response":
            usage = data.get("usage") or {}
            if stats.decisions == 0:
                stats.first_prompt_tokens = _number(usage.get("prompt_tokens"))
            stats.decisions += 1
            if isinstance(stamp, int | float) and previous is not None:
                stats.seconds.append(max(0.0, float(stamp) - previous))
            stats.prompt_tokens += _number(usage.get("prompt_tokens"))
            stats.cached_prompt_tokens += _number(usage.get("cached_prompt_tokens"))
            stats.completion_tokens += _number(usage.get("completion_tokens"))
            calls = [c for c in data.get("tool_calls") or [] if isinstance(c, Mapping)]
            stats.calls += len(calls)
            flagged = sum(1 for c in calls if c.get("recovered_from_text"))
            stats.recovered += max(flagged, _number(data.get("recovered_from_text")))
        elif kind == "tool_result":
            if data.get("refused") or data.get("executed") is False:
                stats.refused += 1
        elif kind == "reminder":
            stats.reminders += 1
        if isinstance(stamp, int | float):
            previous = float(stamp)
    return stats
