"""The memory guard over a corpus of hostile and benign sentences, through consolidation.

    .venv/bin/python bench/guard_corpus.py CORPUS.yaml [--verbose]

The corpus is YAML with one top-level key ``sentences``: a list of mappings, each with
``text`` (a string) and ``kind`` (``hostile``: it loosens what the robot does around a
safety subject; ``benign``: it does not). Other keys of an item (``expect``, notes) are
ignored. Each sentence is proposed on its own as a ``General Lessons`` memory entry
(confidence 0.9) of a completed task, and ``FileMemory.consolidate_trajectory`` decides it
(a dry run: nothing is written), the same entry point a task's consolidation takes: every
rule of the consolidation table (transient, poisoning, the weakening guard's hold).

Printed: hostile accepted / held / refused and benign accepted / held / refused, and, with
``--verbose``, every sentence with its outcome and rule. A hostile sentence accepted or a
benign one refused is listed either way. Exit status 2 for a corpus that cannot be read
(the message names the file, the item and what is wrong), else 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from harness_ros.memory import DurableMemoryEntry, FileMemory, MemoryConsolidation
from harness_ros.trajectory import Trajectory

KINDS = ("hostile", "benign")
OUTCOMES = ("accepted", "held", "refused")


class CorpusError(ValueError):
    """A corpus file that is not ``sentences: [{text, kind}, ...]``."""


def load_corpus(path: Path) -> list[tuple[str, str]]:
    """(kind, text) for each item of ``path``; ``CorpusError`` naming the file, the item
    and the field for anything else."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CorpusError(f"{path}: cannot read the corpus: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("sentences"), list):
        raise CorpusError(f"{path}: expected a top-level key 'sentences' holding a list")
    rows: list[tuple[str, str]] = []
    for index, item in enumerate(data["sentences"]):
        where = f"{path}: sentences[{index}]"
        if not isinstance(item, dict):
            raise CorpusError(
                f"{where}: expected a mapping with 'text' and 'kind', got {type(item).__name__}"
            )
        text, kind = item.get("text"), item.get("kind")
        if not isinstance(text, str) or not text.strip():
            raise CorpusError(f"{where}.text: expected a non-empty string, got {text!r}")
        if kind not in KINDS:
            raise CorpusError(f"{where}.kind: expected 'hostile' or 'benign', got {kind!r}")
        rows.append((kind, text))
    return rows


class _One:
    """A consolidator proposing one General Lessons entry."""

    def __init__(self, text: str) -> None:
        self.text = text

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation(memory_entries=(DurableMemoryEntry("General Lessons", self.text, 0.9),))


def judge(text: str, root: Path) -> tuple[str, str]:
    """(outcome, rule) of consolidating ``text`` alone, as a dry run in ``root``."""
    memory = FileMemory(root, consolidator=_One(text))
    trajectory = Trajectory(task_id="corpus", goal="g", phase="", status="completed")
    result = memory.consolidate_trajectory(trajectory, allowed_tools=[], dry_run=True)
    [decision] = result["decisions"]
    if decision["accepted"]:
        return "accepted", decision["rule"]
    return ("held" if decision.get("held") else "refused"), decision["rule"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="YAML file: sentences: [{text, kind: hostile|benign}]")
    parser.add_argument("--verbose", action="store_true", help="print every sentence with its outcome")
    args = parser.parse_args(argv)
    try:
        rows = load_corpus(args.corpus)
    except CorpusError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    counts: Counter[tuple[str, str]] = Counter()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="guard-corpus-") as tmp:
        for kind, text in rows:
            outcome, rule = judge(text, Path(tmp))
            counts[(kind, outcome)] += 1
            wrong = (kind, outcome) in {("hostile", "accepted"), ("benign", "refused")}
            if args.verbose or wrong:
                flag = "!" if wrong else " "
                lines.append(f"{flag} {kind:<7} {outcome:<8} {rule:<36} {text!a}")
    print(f"corpus: {args.corpus} ({len(rows)} sentences)")
    for kind in KINDS:
        total = sum(counts[(kind, outcome)] for outcome in OUTCOMES)
        figures = " / ".join(str(counts[(kind, outcome)]) for outcome in OUTCOMES)
        print(f"{kind:<7} accepted / held / refused: {figures}  (of {total})")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
