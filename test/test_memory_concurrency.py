"""FileMemory under concurrent writers and under writers killed mid-write (real processes)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness_ros.memory import FileMemory

# A writer process: consolidates one memory entry and one ledger entry per completed task,
# and prints the task number once finish_task has returned (the entries are durable then).
WRITER = r"""
import sys
from harness_ros.memory import DurableMemoryEntry, FileMemory, MemoryConsolidation, ToolExperienceEntry

root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])


class Writer:
    number = 0

    def consolidate(self, task_notes, *, allowed_tools, existing):
        n = self.number
        return MemoryConsolidation(
            memory_entries=(DurableMemoryEntry("General Lessons", f"Lesson {name} number {n}.", 0.9),),
            tool_experience_entries=(
                ToolExperienceEntry("pick_object", "success", f"Grip {name} variant {n}.", 0.9),
            ),
        )


class Summarizer:
    def summarize(self, tool, *, success, failure):
        return "unused"


writer = Writer()
memory = FileMemory(root, consolidator=writer, tool_experience_summarizer=Summarizer())
number = 0
while count < 0 or number < count:
    writer.number = number
    memory.start_task("write")
    ok = {"success": True, "run_id": "r"}
    memory.record_tool_result("pick_object", {}, ok, {"status": "success", "run_id": "r"})
    result = memory.finish_task("completed", allowed_tools=["pick_object"])
    if result["error"] or result["memory_written"] != 1 or result["tool_experience_written"] != 1:
        sys.exit(f"unexpected result {result}")
    print(number, flush=True)
    number += 1
"""


def _writer(root: Path, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), name, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _parse_all(root: Path) -> tuple[set[str], set[str]]:
    """Every durable file must parse; returns (memory entries, ledger entries)."""
    memory_text = (root / "MEMORY.md").read_bytes().decode("utf-8")
    headings = [line for line in memory_text.splitlines() if line.startswith("#")]
    assert headings == ["# Memory", "## Preferences", "## Conventions", "## General Lessons"]
    ledger_text = (root / "tool_experience" / "pick_object.md").read_bytes().decode("utf-8")
    assert ledger_text.startswith("# Tool Experience: pick_object\n\n## Success\n")
    memory = FileMemory(root)
    lessons = memory.memory_entries()["General Lessons"]
    ledger = memory.ledger_entries("pick_object")["success"]
    assert len(lessons) == len(set(lessons)) and len(ledger) == len(set(ledger))
    return set(lessons), set(ledger)


def test_two_processes_consolidating_into_one_folder_lose_nothing(tmp_path: Path) -> None:
    count = 20
    writers = [_writer(tmp_path, name, count) for name in ("alpha", "beta")]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert len(out.split()) == count
    lessons, ledger = _parse_all(tmp_path)
    assert lessons == {f"Lesson {name} number {n}." for name in ("alpha", "beta") for n in range(count)}
    assert ledger == {f"Grip {name} variant {n}." for name in ("alpha", "beta") for n in range(count)}
    proposals = [r for r in FileMemory(tmp_path).audit_records() if r.get("event") == "proposal"]
    assert sum(1 for r in proposals if r["accepted"]) == 4 * count


def test_writer_killed_mid_write_100_times_never_corrupts_or_loses(tmp_path: Path) -> None:
    rng = random.Random(1234)
    confirmed_lessons: set[str] = set()
    confirmed_ledger: set[str] = set()
    seen_lessons: set[str] = set()
    seen_ledger: set[str] = set()
    for kill in range(100):
        name = f"k{kill}"
        writer = _writer(tmp_path, name, -1)
        assert writer.stdout is not None
        line = writer.stdout.readline()  # one task fully consolidated in this process
        assert line.strip().isdigit(), writer.stderr.read() if writer.stderr else ""
        number = int(line)
        confirmed_lessons.add(f"Lesson {name} number {number}.")
        confirmed_ledger.add(f"Grip {name} variant {number}.")
        # Kill at a random point of the next consolidation (deliberate timing jitter, not a wait).
        time.sleep(rng.uniform(0.0, 0.004))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        writer.stdout.close()
        if writer.stderr:
            writer.stderr.close()
        lessons, ledger = _parse_all(tmp_path)
        assert confirmed_lessons <= lessons, f"kill {kill}: lost {confirmed_lessons - lessons}"
        assert confirmed_ledger <= ledger, f"kill {kill}: lost {confirmed_ledger - ledger}"
        assert seen_lessons <= lessons and seen_ledger <= ledger, f"kill {kill}: an earlier entry vanished"
        seen_lessons, seen_ledger = lessons, ledger
    assert len(seen_lessons) >= 100
    # A clean writer afterwards finishes any consolidation a kill interrupted: every lesson has its
    # ledger twin (all-or-nothing across MEMORY.md and the ledger).
    final = _writer(tmp_path, "final", 1)
    final.communicate(timeout=60)
    assert final.returncode == 0
    lessons, ledger = _parse_all(tmp_path)
    twins = {text.replace("Lesson ", "Grip ").replace(" number ", " variant ") for text in lessons}
    assert twins == ledger
    assert not (tmp_path / ".journal.json").exists()
    # The audit log stays readable (a line torn by a kill is skipped, never fatal).
    assert len(FileMemory(tmp_path).audit_records()) >= 200
