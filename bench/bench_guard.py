"""The memory guard over its corpus: how many sentences it accepts, holds and refuses.

    .venv/bin/python bench/bench_guard.py [--corpus test/data/guard_corpus.jsonl] [--verbose]

Each line of the corpus is ``{"text", "expect", "why"}`` with ``expect`` one of
``accept``, ``hold``, ``refuse``. The guard is ``harness_ros.memory.rules.screen``: the
same check consolidation, ledger summaries and session summaries use. Printed: the
sentences tried, the guard's outcomes, the outcomes against the expected classes (a
confusion table), the rules and hold reasons that fired, and the time per sentence.
Then the same guard over the repository's own skill and profile prose (operator-written
text, never screened in use): how much harmless text its caution holds.
Exit status 1 when an expected-refused or expected-held sentence was accepted.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from _common import REPO_ROOT, base_parser, headline, machine_line, median_ms, print_table

from harness_ros.memory.rules import screen

CLASSES = ("accept", "hold", "refuse")


def _shipped_prose() -> list[str]:
    """The prose lines of skills/ and profiles/ (as test_memory_integrity reads them)."""
    files = [*REPO_ROOT.glob("skills/**/*.md"), *REPO_ROOT.glob("profiles/*.md")]
    lines = [
        line.strip().lstrip("-*0123456789. ")
        for path in files
        for line in path.read_text("utf-8").splitlines()
    ]
    return [line for line in lines if len(line.split()) >= 4 and not line.startswith(("#", "`", "|", "<"))]


def main() -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "test" / "data" / "guard_corpus.jsonl")
    parser.add_argument("--verbose", action="store_true", help="print every sentence with its outcome")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    verdicts = [screen(row["text"]) for row in rows]
    print(machine_line())
    outcomes = Counter(verdict.outcome for verdict in verdicts)
    wrong = [
        (row, verdict)
        for row, verdict in zip(rows, verdicts, strict=True)
        if verdict.outcome != row["expect"]
    ]
    leaked = [row for row, verdict in wrong if verdict.outcome == "accept"]
    headline(
        "guard corpus",
        f"{len(rows)} sentences tried: {outcomes['accept']} accepted, {outcomes['hold']} held for review, "
        f"{outcomes['refuse']} refused",
        "no sentence expected to be held or refused is accepted",
        not leaked,
    )
    confusion = Counter((row["expect"], verdict.outcome) for row, verdict in zip(rows, verdicts, strict=True))
    print_table(
        ["expected \\ guard", *CLASSES, "total"],
        [
            [
                expected,
                *(confusion[(expected, got)] for got in CLASSES),
                sum(confusion[(expected, g)] for g in CLASSES),
            ]
            for expected in CLASSES
        ],
    )
    print()
    fired = Counter(f"{verdict.outcome}: {verdict.rule}" for verdict in verdicts if verdict.rule)
    print_table(["rule or hold reason", "sentences"], sorted(fired.items()))
    print()
    texts = [row["text"] for row in rows]
    median, p90 = median_ms(lambda: [screen(text) for text in texts], repeat=3 if args.quick else 10)
    print(f"time: {median / len(texts):.2f} ms per sentence (median of runs; p90 {p90 / len(texts):.2f} ms)")
    wrong = [
        (row, verdict)
        for row, verdict in zip(rows, verdicts, strict=True)
        if verdict.outcome != row["expect"]
    ]
    for row, verdict in wrong if not args.verbose else zip(rows, verdicts, strict=True):
        print(f"{row['expect']:>6} -> {verdict.outcome:<6} {verdict.rule or '':<26} {row['text']!a}")
    print(f"{len(wrong)} sentence(s) not in their expected class")
    print()
    prose = _shipped_prose()
    prose_outcomes = Counter(screen(line).outcome for line in prose)
    print(
        f"shipped skill and profile prose: {len(prose)} lines, {prose_outcomes['accept']} accepted, "
        f"{prose_outcomes['hold']} held, {prose_outcomes['refuse']} refused"
    )
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
