"""Terminal control characters never reach the operator's terminal (issue 24, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.commands.task import print_event
from harness_ros.terminal import terminal_safe

HOSTILE = {
    "\x1b[2J": "\\x1b[2J",  # clear the screen
    "\x1b]0;owned\x07": "\\x1b]0;owned\\x07",  # OSC window title, BEL-terminated
    "\x07": "\\x07",  # BEL
    "\x9b31m": "\\x9b31m",  # C1 CSI
    "\x85": "\\x85",  # C1 next line
    "\x7f": "\\x7f",  # DEL
    "\r": "\\x0d",  # back to column 0: overwrite what the line said
    "\x08": "\\x08",  # backspace
    "\u202e": "\\u202e",  # right-to-left override
    "\u202a": "\\u202a",
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u2069": "\\u2069",
    "\u2028": "\\u2028",  # line separator
}


@pytest.mark.parametrize(("raw", "shown"), list(HOSTILE.items()))
def test_every_control_is_written_as_a_visible_escape(raw: str, shown: str) -> None:
    assert terminal_safe(f"ok {raw} end") == f"ok {shown} end"


def test_plain_text_and_other_scripts_are_unchanged() -> None:
    text = "Bring the red cup to the kitchen table (2.5 m) — Küche, キッチン, مطبخ"
    assert terminal_safe(text) == text


def test_newlines_are_kept_only_for_a_block() -> None:
    assert terminal_safe("one\ntwo\ttab") == "one\\x0atwo\\x09tab"
    assert terminal_safe("one\ntwo\r\x1b[1A", multiline=True) == "one\ntwo\\x0d\\x1b[1A"


def test_nothing_unsafe_survives_any_character() -> None:
    every = "".join(chr(code) for code in range(0x2100))
    shown = terminal_safe(every)
    unsafe = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0x200E, 0x200F, 0x061C]}
    unsafe |= {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
    assert not unsafe & set(shown)


def test_task_event_lines_are_printed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    # Finding: questions, notices, failure reasons and other clients' answers were printed
    # with their escape sequences, BEL, C1 controls and RTL overrides intact.
    events = [
        {
            "type": "tool_call",
            "turn": 1,
            "data": {"tool": "ask_operator", "arguments": {"question": "Which\x1b[2J cup?\x07"}},
        },
        {
            "type": "tool_call",
            "turn": 1,
            "data": {"tool": "notify_operator", "arguments": {"text": "fine\u202eenod"}},
        },
        {
            "type": "tool_result",
            "turn": 2,
            "data": {"tool": "pick", "result": {"success": False, "reason": "gripper\x9b31m"}},
        },
        {
            "type": "tool_result",
            "turn": 3,
            "data": {
                "tool": "ask_operator",
                "result": {"success": True, "answer": "red\rblue", "answered_by": "operator"},
            },
        },
        {"type": "task_rejected", "data": {"reason": "busy\x1b]0;title\x07"}},
    ]
    for event in events:
        print_event(event)
    out = capsys.readouterr().out
    assert not set(out) & {"\x1b", "\x07", "\x9b", "\u202e", "\r"}, repr(out)
    for shown in ("\\x1b[2J", "\\x07", "\\u202e", "\\x9b31m", "\\x1b]0;title"):
        assert shown in out
    assert "operator answered: red blue" in out  # a CR is whitespace to the line: one space


def test_memory_show_prints_a_block_with_no_acting_control(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness_ros.cli import main

    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n## General Lessons\n- Wipe the table\x1b[2K first.\u202e\n", encoding="utf-8"
    )
    assert main(["memory", "show", "--memory", str(memory), "--no-model"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert "Wipe the table\\x1b[2K first.\\u202e" in out
    assert "\n## General Lessons\n" in out  # the block keeps its lines
