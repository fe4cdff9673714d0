"""memory.world (issue 48, item 2): the config switch, honoured by the factory (and so
by the node, which builds its harness there): off, no WORLD.md is read, briefed, offered
or written; on (the default), all of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import HarnessConfig, MemoryConfig, load_config
from harness_ros.errors import ConfigError
from harness_ros.harness import build_harness
from harness_ros.model.contracts import ModelReply, ToolCall

REPO = Path(__file__).resolve().parents[1]
WORLD = "# World\n\n## Objects\n- red_cup | kind: cup | where: kitchen_table | state: confirmed\n"


class Model:
    name = "scripted/world-config"

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(messages)
        finish = {"outcome": "succeeded", "summary": "done"}
        return ModelReply(
            text=None, tool_calls=(ToolCall("c_end", "finish_task", json.dumps(finish), finish),)
        )


def test_memory_world_defaults_to_true_and_a_bad_value_names_the_key(tmp_path: Path) -> None:
    assert MemoryConfig().world is True
    path = tmp_path / "harness.yaml"
    path.write_text("memory:\n  world: false\n", encoding="utf-8")
    assert load_config(path).memory.world is False
    path.write_text("memory:\n  world: sometimes\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memory\.world") as info:
        load_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("world", [True, False])
def test_the_factory_honours_memory_world(tmp_path: Path, world: bool) -> None:
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    (memory_dir / "WORLD.md").write_text(WORLD, encoding="utf-8")
    config = HarnessConfig(
        embodiment_profile_file=REPO / "profiles" / "mobile_manipulator.md",
        memory=MemoryConfig(dir=memory_dir, consolidator="none", world=world),
    )
    config = config.model_copy(
        update={"harness": config.harness.model_copy(update={"runs_dir": tmp_path / "runs"})}
    )
    model = Model()
    harness = build_harness(config, model=model)
    assert harness.memory is not None and harness.memory.world is world
    assert ("recall_object" in harness.registry.names()) is world
    list(harness.run("Fetch the red cup.", task_id="w1"))
    prompt = json.dumps(model.requests[0])
    assert ("red_cup (cup) on kitchen_table" in prompt) is world
