"""Model subsystem: the litellm adapter, JSON parsing, record and replay."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness_ros.model.contracts import ChatModel, ModelReply, ToolCall, Usage
from harness_ros.model.json_parsing import parse_json_loose
from harness_ros.model.litellm_model import DEMO_PREFIX, LiteLLMModel, complete_json
from harness_ros.model.recording import ModelRecorder, ReplayModel, request_digest

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig

__all__ = [
    "DEMO_PREFIX",
    "REPLAY_PREFIX",
    "ChatModel",
    "LiteLLMModel",
    "ModelRecorder",
    "ModelReply",
    "ReplayModel",
    "ToolCall",
    "Usage",
    "build_model",
    "complete_json",
    "parse_json_loose",
    "request_digest",
]

REPLAY_PREFIX = "replay/"
"""``replay/<path to a recording.jsonl>`` selects ``ReplayModel`` (relative paths: cwd)."""


def build_model(config: HarnessConfig, *, model: str | None = None) -> ChatModel:
    """The configured model (``HARNESS_MODEL`` honoured), recording when ``model.record_file`` is set."""
    name = model or config.effective_model()
    if name.startswith(REPLAY_PREFIX):
        return ReplayModel(Path(name.removeprefix(REPLAY_PREFIX)))
    record_file = config.model.record_file
    recorder = ModelRecorder(record_file) if record_file is not None else None
    return LiteLLMModel.from_config(config.model, model=name, recorder=recorder)
