"""``RevisionBudget`` and its settings (issue 47, item 10): per task, a count and a total."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.config import TaskApiConfig, load_config
from harness_ros.errors import ConfigError
from harness_ros.harness.revision_budget import RevisionBudget


def test_the_count_is_capped_per_task_and_a_new_task_starts_afresh() -> None:
    budget = RevisionBudget(max_revisions=3, max_chars=1_000)
    assert [budget.admit("t1", f"careful {n}") for n in range(3)] == [None, None, None]
    refused = budget.admit("t1", "one more")
    assert refused is not None and "task_api.max_revisions_per_task" in refused and "'t1'" in refused
    assert budget.admit("t2", "a new task") is None


def test_the_characters_are_capped_per_task() -> None:
    budget = RevisionBudget(max_revisions=100, max_chars=50)
    assert budget.admit("t", "x" * 30) is None
    refused = budget.admit("t", "y" * 30)
    assert refused is not None and "task_api.max_revision_chars_per_task" in refused
    assert "20 of its 50 characters" in refused
    assert budget.admit("t", "z" * 20) is None  # what fits is still taken


def test_the_defaults_keep_revisions_far_inside_a_small_window() -> None:
    defaults = TaskApiConfig()
    assert defaults.max_revisions_per_task == 16
    assert defaults.max_revision_chars_per_task == 8_000  # about 2,000 tokens of a 14,000-token window


@pytest.mark.parametrize("key", ["max_revisions_per_task", "max_revision_chars_per_task"])
def test_a_bad_setting_is_named(tmp_path: Path, key: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"task_api:\n  {key}: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"task_api\.{key}"):
        load_config(config)
