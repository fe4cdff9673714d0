"""A fork server of FileMemory writers, so a test can SIGKILL hundreds of them cheaply.

    python test/support/fault_memory_writer.py ROOT

Imports FileMemory once, then reads commands on stdin:

``spawn NAME``  fork a writer; prints ``pid NAME PID``. The writer consolidates one
                MEMORY.md entry ``Lesson NAME number N.`` and one ledger entry
                ``Grip NAME variant N.`` per completed task, forever, and prints
                ``done NAME N`` once finish_task has returned (both entries are durable).
``reap PID``    wait for that writer to exit; prints ``reaped PID``.
"""

from __future__ import annotations

import os
import sys

from harness_ros.memory import DurableMemoryEntry, FileMemory, MemoryConsolidation, ToolExperienceEntry


class _Writer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.number = 0

    def consolidate(
        self, task_notes: object, *, allowed_tools: object, existing: object
    ) -> MemoryConsolidation:
        n, name = self.number, self.name
        return MemoryConsolidation(
            memory_entries=(DurableMemoryEntry("General Lessons", f"Lesson {name} number {n}.", 0.9),),
            tool_experience_entries=(
                ToolExperienceEntry("pick_object", "success", f"Grip {name} variant {n}.", 0.9),
            ),
        )


class _Summarizer:
    def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
        return "unused"


def _say(line: str) -> None:
    # One write() per line: parent and children share the pipe, and a write of less than
    # PIPE_BUF bytes is atomic, so a kill never leaves half a line behind.
    os.write(1, (line + "\n").encode())


def _write_forever(root: str, name: str) -> None:
    writer = _Writer(name)
    memory = FileMemory(root, consolidator=writer, tool_experience_summarizer=_Summarizer())
    while True:
        memory.start_task("write")
        memory.record_tool_result(
            "pick_object", {}, {"success": True, "run_id": "r"}, {"status": "success", "run_id": "r"}
        )
        result = memory.finish_task("completed", allowed_tools=["pick_object"])
        if result["error"] or result["memory_written"] != 1 or result["tool_experience_written"] != 1:
            _say(f"error {name} {result}")
            os._exit(1)
        _say(f"done {name} {writer.number}")
        writer.number += 1


def main(argv: list[str]) -> int:
    root = argv[0]
    _say("ready")
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "spawn":
            pid = os.fork()
            if pid == 0:
                try:
                    _write_forever(root, argument)
                finally:
                    os._exit(1)
            _say(f"pid {argument} {pid}")
        elif command == "reap":
            os.waitpid(int(argument), 0)
            _say(f"reaped {argument}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
