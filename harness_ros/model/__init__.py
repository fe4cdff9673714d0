"""Model subsystem: the litellm adapter, JSON parsing, record and replay."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness_ros.errors import ConfigError
from harness_ros.model.contracts import (
    ChatModel,
    ModelKind,
    ModelProvider,
    ModelReply,
    ProviderLookup,
    ToolCall,
    Usage,
)
from harness_ros.model.json_parsing import parse_json_loose
from harness_ros.model.litellm_model import LiteLLMModel, complete_json
from harness_ros.model.recording import ModelRecorder, ReplayModel, request_digest
from harness_ros.model.settings import (
    NO_MODEL_MESSAGE,
    REPLAY_PREFIX,
    ModelSetting,
    UnconfiguredModel,
    model_key,
    model_kind,
    model_takes_images,
    probe_model,
    provider_problem,
    validate_model_settings,
)

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig

__all__ = [
    "NO_MODEL_MESSAGE",
    "REPLAY_PREFIX",
    "ChatModel",
    "LiteLLMModel",
    "ModelKind",
    "ModelProvider",
    "ModelRecorder",
    "ModelReply",
    "ModelSetting",
    "ProviderLookup",
    "ReplayModel",
    "ToolCall",
    "UnconfiguredModel",
    "Usage",
    "build_model",
    "complete_json",
    "model_kind",
    "model_takes_images",
    "parse_json_loose",
    "probe_model",
    "request_digest",
    "validate_model_settings",
]


def build_model(
    config: HarnessConfig,
    *,
    model: str | None = None,
    allow_unset: bool = False,
    providers: ProviderLookup | None = None,
) -> ChatModel:
    """The configured model (``HARNESS_MODEL`` honoured), recording when ``model.record_file`` is set.

    ``providers`` finds the plugin of a custom provider prefix: the caller passes
    ``harness_ros.plugins.model_provider``, as the model layer is below the plugins.

    No model configured raises ``ConfigError`` (``NO_MODEL_MESSAGE``); with ``allow_unset``
    (the node, which then refuses tasks) it returns an ``UnconfiguredModel`` instead. A
    plugin provider that refuses the config (``ModelProvider.config_problem``) is refused.
    """
    name = (model or "").strip() or config.effective_model()
    if name is None:
        if allow_unset:
            return UnconfiguredModel()
        raise ConfigError(NO_MODEL_MESSAGE)
    if model_kind(name, providers) == "replay":
        return ReplayModel(Path(name.removeprefix(REPLAY_PREFIX)))
    key = model_key(config) if model is None else "the model"
    problem = provider_problem(config, key, name, providers, require_tools=False)
    if problem is not None:
        raise ConfigError(problem)
    record_file = config.model.record_file
    recorder = ModelRecorder(record_file) if record_file is not None else None
    return LiteLLMModel.from_config(config.model, model=name, recorder=recorder, providers=providers)
