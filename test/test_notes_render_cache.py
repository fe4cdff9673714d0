"""Task Notes are rendered whole after every call; each step's timeline line is made once
(bench/bench_turn_overhead.py, BENCHMARKS.md section 3)."""

from __future__ import annotations

from typing import Any

import pytest

from harness_ros.trajectory import Trajectory, contracts


def _trajectory(steps: int) -> Trajectory:
    trajectory = Trajectory.start("tidy the kitchen", task_id="t-1")
    for n in range(steps):
        trajectory = trajectory.with_step(
            f"tool_{n:02d}", {"target": f"cup {n}", "speed": 0.5}, {"success": True, "echo": n}, None
        )
    return trajectory


def test_a_step_line_is_rendered_once_however_often_the_notes_are(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[Any] = []
    outcome = contracts.note_outcome

    def counting(result: Any) -> str:
        rendered.append(result)
        return outcome(result)

    monkeypatch.setattr(contracts, "note_outcome", counting)
    trajectory = _trajectory(10)
    trajectory.render()
    assert len(rendered) == 10
    trajectory = trajectory.with_step(
        "tool_10", {"target": "plate"}, {"success": False, "reason": "wet"}, None
    )
    text = trajectory.render()
    trajectory.render_for_model()
    assert len(rendered) == 11  # only the new step's line was made
    assert "11. tool_10" in text and "failed" in text


def test_cached_lines_read_as_freshly_rendered_ones() -> None:
    trajectory = _trajectory(12)
    first = trajectory.render()
    # The same steps as new objects (a trajectory read back from JSON): rendered afresh.
    copy = Trajectory.from_json(trajectory.to_json())
    assert all(a is not b for a, b in zip(copy.steps, trajectory.steps, strict=True))
    assert copy.render() == first == trajectory.render()
