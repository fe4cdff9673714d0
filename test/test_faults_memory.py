"""Fault test (``HARNESS_FAULTS=1``, ``make faults``): 200 FileMemory writers SIGKILLed at
random points of a consolidation. After every kill every file parses, no earlier entry is
lost and no partial entry appears; a clean writer then finishes any interrupted one.

The quick 100-kill version runs in the default suite (test/test_memory_concurrency.py).
"""

from __future__ import annotations

import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness_ros.memory import FileMemory

pytestmark = pytest.mark.skipif(
    os.environ.get("HARNESS_FAULTS") != "1", reason="slow fault test: run with HARNESS_FAULTS=1 (make faults)"
)

WRITERS = Path(__file__).resolve().parent / "support" / "fault_memory_writer.py"
KILLS = 200
LESSON = re.compile(r"^Lesson (k\d+|final) number (\d+)\.$")
GRIP = re.compile(r"^Grip (k\d+|final) variant (\d+)\.$")


class ForkServer:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITERS), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.confirmed: set[tuple[str, int]] = set()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.expect("ready") == ["ready"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout_s: float = 30.0) -> list[str]:
        """Read lines until one starts with ``prefix`` (bounded); ``done`` lines are recorded."""
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert not line.startswith("error"), line
            if line.startswith("done "):
                _, name, number = line.split(maxsplit=2)
                assert number.isdigit(), f"torn line {line!r}"
                self.confirmed.add((name, int(number)))
            if line.startswith(prefix):
                return line.split()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _parse_all(root: Path) -> tuple[set[str], set[str]]:
    memory_text = (root / "MEMORY.md").read_bytes().decode("utf-8")
    headings = [line for line in memory_text.splitlines() if line.startswith("#")]
    assert headings == ["# Memory", "## Preferences", "## Conventions", "## General Lessons"]
    ledger_text = (root / "tool_experience" / "pick_object.md").read_bytes().decode("utf-8")
    assert ledger_text.startswith("# Tool Experience: pick_object\n\n## Success\n")
    memory = FileMemory(root)
    lessons = memory.memory_entries()["General Lessons"]
    ledger = memory.ledger_entries("pick_object")["success"]
    partial = [t for t in lessons if not LESSON.match(t)] + [t for t in ledger if not GRIP.match(t)]
    assert not partial, f"partial entries: {partial}"
    assert len(lessons) == len(set(lessons)) and len(ledger) == len(set(ledger))
    return set(lessons), set(ledger)


def test_writer_killed_at_random_points_200_times_never_corrupts_or_loses(tmp_path: Path) -> None:
    rng = random.Random(8)
    server = ForkServer(tmp_path)
    seen_lessons: set[str] = set()
    seen_ledger: set[str] = set()
    try:
        for kill in range(KILLS):
            name = f"k{kill}"
            _, _, pid = server.send(f"spawn {name}") or server.expect(f"pid {name} ")
            server.expect(f"done {name} 0")  # one task fully consolidated by this writer
            # a random point in one of the next consolidations (timing jitter, not a wait)
            time.sleep(rng.uniform(0.0, 0.03))
            os.kill(int(pid), signal.SIGKILL)
            server.send(f"reap {pid}")
            server.expect(f"reaped {pid}")
            lessons, ledger = _parse_all(tmp_path)
            confirmed_lessons = {f"Lesson {n} number {i}." for n, i in server.confirmed}
            confirmed_ledger = {f"Grip {n} variant {i}." for n, i in server.confirmed}
            assert confirmed_lessons <= lessons, f"kill {kill}: lost {confirmed_lessons - lessons}"
            assert confirmed_ledger <= ledger, f"kill {kill}: lost {confirmed_ledger - ledger}"
            assert seen_lessons <= lessons and seen_ledger <= ledger, (
                f"kill {kill}: an earlier entry vanished"
            )
            seen_lessons, seen_ledger = lessons, ledger
        # A clean writer finishes any consolidation a kill interrupted (the journal).
        _, _, pid = server.send("spawn final") or server.expect("pid final ")
        server.expect("done final 0")
        os.kill(int(pid), signal.SIGKILL)
        server.send(f"reap {pid}")
        server.expect(f"reaped {pid}")
    finally:
        server.close()
    lessons, ledger = _parse_all(tmp_path)
    assert len(server.confirmed) >= KILLS
    twins = {text.replace("Lesson ", "Grip ").replace(" number ", " variant ") for text in lessons}
    assert twins == ledger  # all-or-nothing across MEMORY.md and the ledger
    audit = FileMemory(tmp_path).audit_records()
    assert len(audit) >= 2 * KILLS
    # some kills landed inside a multi-file write and were recovered from the journal
    assert any(record.get("recovered") for record in audit)
