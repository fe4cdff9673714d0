"""Ledger summaries for tool descriptions, and their cache (``.summary_cache.json``).

A ledger's summary is cached by the ledger's content hash, so an unchanged ledger costs
no model call. A summary is model-written text entering every later prompt, so it passes
the memory guard like an entry; a changed ledger that cannot be summarised (no
summarizer, a failed call, a refused summary) falls back to its last cached summary, or
is left out: either way a notice tells the operator. Never silent. A summary that lost
what its lessons quote or the tools they name (``summary_fidelity``) is replaced by the
lessons as written, with a notice.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.consolidation import OUTCOME_SECTIONS
from harness_ros.memory.contracts import ToolExperienceSummarizerProtocol
from harness_ros.memory.document import SectionedDocument
from harness_ros.memory.model_policies import SUMMARY_MAX_CHARS
from harness_ros.memory.rules import TextRule, screen
from harness_ros.memory.storage import atomic_write_bytes, read_text
from harness_ros.memory.store import MemoryStore
from harness_ros.memory.summary_fidelity import summary_problems, verbatim_summary
from harness_ros.validators import valid_tool_name

__all__ = ["LedgerSummaries"]

logger = logging.getLogger(__name__)

Notify = Callable[[dict[str, Any]], None]


class LedgerSummaries:
    def __init__(self, store: MemoryStore, *, notify: Notify) -> None:
        self.store = store
        self.notify = notify
        self.errors: dict[str, str] = {}
        """Why a tool's ledger has no fresh summary (kept until it has one)."""

    def _read_cache(self) -> dict[str, Any]:
        try:
            raw = json.loads(read_text(self.store.summary_cache_path) or "{}")
        except (ValueError, MemoryStoreError) as err:
            logger.warning("Ignoring unreadable summary cache in %s: %s", self.store.root, err)
            return {}
        return raw if isinstance(raw, dict) else {}

    def _ledger_digest(self, tool: str) -> tuple[str, dict[str, list[str]]] | None:
        text = read_text(self.store.ledger_path(tool))
        if text is None:
            return None
        entries = SectionedDocument(text)
        ledger = {outcome: entries.entries(section) for outcome, section in OUTCOME_SECTIONS.items()}
        if not ledger["success"] and not ledger["failure"]:
            return None
        return hashlib.sha256(text.encode("utf-8")).hexdigest(), ledger

    @staticmethod
    def _refusal(summary: str, poisoning_rules: Sequence[TextRule]) -> str | None:
        """Why the guard does not let a ledger summary into a tool description, or None."""
        verdict = screen(summary, poisoning_rules)
        return None if verdict.accepted else f"{verdict.outcome}: {verdict.rule}"

    def cached(self, tool: str, poisoning_rules: Sequence[TextRule]) -> str | None:
        """The cached summary of an unchanged ledger, without any model call."""
        digest = self._ledger_digest(tool)
        if digest is None:
            return None
        cached = self._read_cache().get(tool)
        if (
            isinstance(cached, dict)
            and cached.get("sha256") == digest[0]
            and isinstance(cached.get("summary"), str)
        ):
            summary = str(cached["summary"])[:SUMMARY_MAX_CHARS]
            return summary if self._refusal(summary, poisoning_rules) is None else None
        return None

    def _refused_notice(self, tool: str, why: str) -> None:
        logger.warning("Summary of the %r ledger not used: the memory guard says %s", tool, why)
        self.notify(
            {
                "notice": "ledger_summary_refused",
                "tool": tool,
                "reason": why,
                "message": f"the summary of the {tool} ledger did not pass the memory guard ({why}): "
                "it is not in the tool description",
            }
        )

    def _fallback(
        self,
        tool: str,
        cached: Any,
        summaries: dict[str, str],
        poisoning_rules: Sequence[TextRule],
        ledger: dict[str, list[str]] | None = None,
    ) -> None:
        """A changed ledger that cannot be summarised now: the last cached summary (of an
        earlier ledger) stands in, and a notice says so; without one, the ledger's lessons
        as written when the summariser ran and failed (``ledger``: its reply was unusable
        or refused), else the ledger is left out of the tool definition, and the notice
        says that. Never silent."""
        reason = self.errors[tool]
        if (
            isinstance(cached, dict)
            and isinstance(cached.get("summary"), str)
            and cached["summary"].strip()
            and self._refusal(cached["summary"], poisoning_rules) is None
        ):
            summaries[tool] = " ".join(cached["summary"].split())[:SUMMARY_MAX_CHARS]
            logger.warning("Ledger of %r not summarised (%s): using its last cached summary", tool, reason)
            self.notify(
                {
                    "notice": "ledger_summary_fallback",
                    "tool": tool,
                    "reason": reason,
                    "message": f"ledger of {tool} changed and could not be summarised ({reason}): "
                    "the tool description carries its last cached summary",
                }
            )
            return
        written = (
            verbatim_summary(
                ledger,
                max_chars=SUMMARY_MAX_CHARS,
                accepted=lambda lesson: self._refusal(lesson, poisoning_rules) is None,
            )
            if ledger is not None
            else ""
        )
        if written:
            # Not cached: the next task start asks the summariser again. The 1.5B once
            # answered without a summary, and its first lesson reached no tool description.
            summaries[tool] = written
            logger.warning("Ledger of %r not summarised (%s): its lessons as written instead", tool, reason)
            self.notify(
                {
                    "notice": "ledger_lessons_as_written",
                    "tool": tool,
                    "reason": reason,
                    "message": f"ledger of {tool} could not be summarised ({reason}) and has no cached "
                    "summary: the tool description carries the ledger's lessons as written",
                }
            )
            return
        logger.warning("Ledger of %r not summarised (%s) and no cached summary: left out", tool, reason)
        self.notify(
            {
                "notice": "ledger_omitted",
                "tool": tool,
                "reason": reason,
                "message": f"ledger of {tool} could not be summarised ({reason}) and has no cached "
                "summary: its experience is not in the tool description",
            }
        )

    def _unfaithful(
        self,
        tool: str,
        summary: str,
        problems: list[str],
        ledger: dict[str, list[str]],
        poisoning_rules: Sequence[TextRule],
    ) -> str:
        """The lessons as written in place of a summary that lost or garbled them (cached
        like a summary: the same ledger is not sent to the model again)."""
        why = "; ".join(problems)
        written = verbatim_summary(
            ledger,
            max_chars=SUMMARY_MAX_CHARS,
            accepted=lambda lesson: self._refusal(lesson, poisoning_rules) is None,
        )
        logger.warning("Summary of the %r ledger not used (%s): the lessons as written instead", tool, why)
        self.notify(
            {
                "notice": "ledger_summary_unfaithful",
                "tool": tool,
                "reason": why,
                "summary": summary,
                "message": f"the summary of the {tool} ledger was not used ({why}): "
                "the tool description carries the ledger's lessons as written",
            }
        )
        return written

    def summaries(
        self,
        tool_names: Iterable[str],
        *,
        summarizer: ToolExperienceSummarizerProtocol | None,
        poisoning_rules: Sequence[TextRule],
    ) -> dict[str, str]:
        """Summary per tool that has a non-empty ledger; a changed ledger is re-summarised once."""
        summaries: dict[str, str] = {}
        fresh: dict[str, dict[str, str]] = {}
        cache = self._read_cache()
        names = list(tool_names)
        for tool in names:
            if not valid_tool_name(tool):
                continue
            digest = self._ledger_digest(tool)
            if digest is None:
                continue
            sha, ledger = digest
            cached = cache.get(tool)
            if (
                isinstance(cached, dict)
                and cached.get("sha256") == sha
                and isinstance(cached.get("summary"), str)
            ):
                summary = str(cached["summary"])[:SUMMARY_MAX_CHARS]
                refusal = self._refusal(summary, poisoning_rules)
                if refusal is None:
                    summaries[tool] = summary
                else:  # a cache written by hand or by an older version: the guard still applies
                    self._refused_notice(tool, refusal)
                continue
            if summarizer is None:
                self.errors[tool] = "no tool_experience_summarizer configured"
                self._fallback(tool, cached, summaries, poisoning_rules)
                continue
            try:
                summary = summarizer.summarize(tool, success=ledger["success"], failure=ledger["failure"])
            except Exception as err:  # noqa: BLE001 - a summary failure must not stop a task from starting
                self.errors[tool] = f"{type(err).__name__}: {err}"
                self._fallback(tool, cached, summaries, poisoning_rules, ledger)
                continue
            summary = " ".join(str(summary).split())[:SUMMARY_MAX_CHARS]
            lessons = ledger["failure"] + ledger["success"]
            problems = summary_problems(summary, lessons, names) if summary else []
            if problems:
                summary = self._unfaithful(tool, summary, problems, ledger, poisoning_rules)
                if not summary:  # no lesson passes the guard on its own
                    self.errors[tool] = f"its new summary was not used ({'; '.join(problems)})"
                    self._fallback(tool, cached, summaries, poisoning_rules)
                    continue
            refusal = self._refusal(summary, poisoning_rules) if summary else None
            if refusal is not None:
                # Not cached: the next task start asks again; meanwhile the last good summary
                # (of an earlier ledger) stands in, or the ledger is left out, with a notice.
                self._refused_notice(tool, refusal)
                self.errors[tool] = f"its new summary did not pass the memory guard ({refusal})"
                self._fallback(tool, cached, summaries, poisoning_rules)
                continue
            if summary:
                summaries[tool] = summary
                fresh[tool] = {"sha256": sha, "summary": summary}
                self.errors.pop(tool, None)
        if fresh:
            with self.store.lock_only():
                merged = self._read_cache()
                merged.update(fresh)
                payload = json.dumps(merged, ensure_ascii=False, indent=1, sort_keys=True)
                atomic_write_bytes(self.store.summary_cache_path, payload.encode("utf-8"))
        return summaries
