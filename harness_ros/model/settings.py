"""Model settings checked before any task: which models a config uses and whether they can run.

``validate_model_settings`` is what ``harness-ros check`` and the node's configure run:

- no model at all is its own state (``NO_MODEL_MESSAGE``): the node starts and refuses
  tasks, ``check`` fails with that message;
- a model of a plugin provider that is not a language model (a script) is checked by
  that provider (``ModelProvider.config_problem``): the repository's demo policy, for
  one, refuses every config that binds a tool its simulator does not serve, so a script
  written for the sim never drives a real robot;
- any other string must name a provider litellm knows (its own provider resolution),
  the provider's environment variables must be set (litellm's environment validation),
  and ``model.api_key_env`` must name a variable that is set.

Errors are ``ConfigError`` naming the config key (``model.model``, ``HARNESS_MODEL``,
``evaluator.model``, ``model.api_key_env``) and the missing variable. litellm is imported
only here and in the adapter, never at module import. ``probe_model`` is the online part
of ``check --online``: one minimal completion, and one with a small image, timed.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_ros.errors import ConfigError, HarnessError, LLMError
from harness_ros.local_model.catalog import LOCAL_PREFIX
from harness_ros.model.contracts import (
    ChatModel,
    ModelKind,
    ModelProfile,
    ModelProvider,
    ModelReply,
    ProviderLookup,
)
from harness_ros.model.endpoints import resolve_profile, served_on_this_machine
from harness_ros.model.litellm_model import import_litellm

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig, ModelConfig

__all__ = [
    "NO_MODEL_MESSAGE",
    "REPLAY_PREFIX",
    "ModelSetting",
    "ProbeResult",
    "UnconfiguredModel",
    "model_key",
    "model_kind",
    "model_takes_images",
    "plugin_provider",
    "probe_model",
    "provider_problem",
    "validate_model_settings",
]

_EXAMPLES = "e.g. openai/gpt-4o-mini, anthropic/..., ollama/..."
NO_MODEL_MESSAGE = f"no model configured: set model.model or HARNESS_MODEL ({_EXAMPLES})"
REPLAY_PREFIX = "replay/"
"""``replay/<path to a recording.jsonl>`` selects ``ReplayModel`` (relative paths: cwd)."""
_OLLAMA_PROVIDERS = frozenset({"ollama", "ollama_chat"})
_OLLAMA_DEFAULT_BASE = "http://localhost:11434"


@dataclass(frozen=True)
class ModelSetting:
    """One model a config uses, after validation."""

    role: str
    """'model' (decides, consolidates, summarises) or 'evaluator'."""
    key: str
    """Where the string came from: model.model, HARNESS_MODEL or evaluator.model."""
    name: str
    provider: str
    """litellm's provider, the plugin provider's prefix, 'local' or 'replay'."""
    sees_images: bool
    """The harness sends it camera images (views configured, or it is the evaluator)."""
    note: str = ""
    kind: ModelKind = "litellm"
    profile: ModelProfile | None = None
    """``model.profile`` resolved for this model (a litellm model); None: a script or a recording."""


class UnconfiguredModel:
    """Stands in for the model of a node started without one; every call fails with the reason."""

    name = "none"

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        raise LLMError(NO_MODEL_MESSAGE)


def plugin_provider(name: str, providers: ProviderLookup | None) -> ModelProvider | None:
    """The plugin provider of model string ``name`` (its part before '/'), or None."""
    prefix, slash, _ = name.strip().partition("/")
    if providers is None or not slash or not prefix:
        return None
    return providers(prefix)


def model_kind(name: str, providers: ProviderLookup | None = None) -> ModelKind:
    """What decides for model string ``name``: the one place that reads a model string's kind."""
    if name.startswith(REPLAY_PREFIX):
        return "replay"
    if name.startswith(LOCAL_PREFIX):
        return "local"
    provider = plugin_provider(name, providers)
    if provider is not None and not provider.language_model:
        return "scripted"
    return "litellm"


def provider_problem(
    config: HarnessConfig, key: str, name: str, providers: ProviderLookup | None, *, require_tools: bool
) -> str | None:
    """Why model ``name``'s plugin provider refuses this config, or None (no plugin provider,
    or one that accepts it). ``require_tools``: the node and ``check`` (a script for a robot
    has nothing to do without that robot's tools); offline consolidation binds none."""
    provider = plugin_provider(name, providers)
    if provider is None or provider.config_problem is None:
        return None
    return provider.config_problem(config, key, name, require_tools)


def model_takes_images(
    config: ModelConfig, name: str | None, providers: ProviderLookup | None = None
) -> bool:
    """Whether the harness may send images to model ``name`` (``model.vision``).

    ``auto``: a scripted provider and recordings take them (they ignore or replay them);
    an OpenAI-compatible server on this machine is text-only (its name says nothing
    about the model behind it); otherwise litellm's ``supports_vision``, and a model
    litellm does not know is text-only. Never raises."""
    if config.vision != "auto":
        return config.vision == "true"
    name = (name or "").strip()
    if not name:
        return False
    try:
        kind = model_kind(name, providers)
    except HarnessError:  # the plugins could not load: the node's start-up says so, in full
        kind = "litellm"
    if kind in ("scripted", "replay"):
        return True
    if served_on_this_machine(name, config.api_base):
        return False
    try:
        litellm = import_litellm()
        return bool(litellm.supports_vision(model=name))
    except Exception:  # noqa: BLE001 - unknown to litellm (or its data unreadable): text-only
        return False


def model_key(config: HarnessConfig) -> str:
    """The setting that chose the main model: ``HARNESS_MODEL`` wins over ``model.model``."""
    return "HARNESS_MODEL" if (os.environ.get("HARNESS_MODEL") or "").strip() else "model.model"


def _main_sees_images(config: HarnessConfig, key: str, main: str, providers: ProviderLookup | None) -> bool:
    # The node refuses a profile view without a topic, so configured views are what it sends
    # (to a model that takes images); a model evaluator on the main model judges camera images.
    judges = config.evaluator.kind == "model" and config.evaluator.model in (None, main)
    if model_kind(main, providers) == "replay" or not (judges or config.observations.views):
        return judges or bool(config.observations.views)
    takes = model_takes_images(config.model, main, providers)
    if judges and not takes:
        how = (
            "model.vision is false"
            if config.model.vision == "false"
            else "litellm does not list it as a vision model"
        )
        raise ConfigError(
            f"evaluator.kind 'model' judges camera images with {key} {main!r}, which takes no images "
            f"({how}): set evaluator.model to a vision model, another evaluator.kind, or model.vision: "
            "true if this model does take images"
        )
    return takes


def _models_in_use(
    config: HarnessConfig, providers: ProviderLookup | None
) -> list[tuple[str, str, str, bool]]:
    """(role, key, name, sees_images) of each distinct model the config uses."""
    found: list[tuple[str, str, str, bool]] = []
    main = config.effective_model()
    if main is not None:
        key = model_key(config)
        found.append(("model", key, main, _main_sees_images(config, key, main, providers)))
    evaluator = config.evaluator.model
    if config.evaluator.kind == "model" and evaluator and evaluator != main:
        found.append(("evaluator", "evaluator.model", evaluator, True))
    return found


def _api_key(config: HarnessConfig, env: Mapping[str, str]) -> str | None:
    variable = config.model.api_key_env
    if variable is None:
        return None
    value = env.get(variable)
    if not value:
        raise ConfigError(
            f"model.api_key_env names {variable!r}, but that environment variable is not set: "
            "export it in the shell (or launch environment) that starts harness_ros"
        )
    return value


def _provider(litellm: Any, key: str, name: str, api_base: str | None) -> str:
    head, slash, rest = name.partition("/")
    if not head or (slash and not rest.strip()):
        raise ConfigError(
            f"{key} {name!r} is not a model string: use provider/model, e.g. openai/gpt-4o-mini"
        )
    # litellm prints a provider list to stdout when resolution fails, unless told not to.
    quiet = litellm.suppress_debug_info
    litellm.suppress_debug_info = True
    try:
        _, provider, _, _ = litellm.get_llm_provider(model=name, api_base=api_base)
    except Exception:  # noqa: BLE001  litellm raises its BadRequestError; any failure means unknown
        raise ConfigError(
            f"{key} {name!r}: litellm knows no provider for it. The part before '/' selects the "
            "provider (openai/..., anthropic/..., ollama/..., see https://docs.litellm.ai/docs/providers); "
            "for an OpenAI-compatible server use openai/<name> with model.api_base"
        ) from None
    finally:
        litellm.suppress_debug_info = quiet
    return str(provider)


def _check_litellm_model(
    litellm: Any, config: HarnessConfig, key: str, name: str, api_key: str | None
) -> tuple[str, str]:
    """(provider, note) of a litellm model string; raises ``ConfigError`` naming what is missing."""
    api_base = config.model.api_base
    provider = _provider(litellm, key, name, api_base)
    result = litellm.validate_environment(model=name, api_key=api_key, api_base=api_base)
    missing = [str(item) for item in result.get("missing_keys") or []]
    note = ""
    if provider in _OLLAMA_PROVIDERS and missing == ["OLLAMA_API_BASE"]:
        # litellm calls a local Ollama at its default address when no base is given.
        missing = []
        note = f"api base {_OLLAMA_DEFAULT_BASE} (litellm's default; set model.api_base to change it)"
    if missing:
        variables = " and ".join(missing)
        hint = (
            "export it, or set model.api_key_env to the name of the variable that holds the key"
            if all("KEY" in item or "TOKEN" in item for item in missing)
            else "export it in the shell (or launch environment) that starts harness_ros"
        )
        raise ConfigError(
            f"{key} {name!r} (provider {provider!r}) needs the environment variable {variables}, "
            f"which is not set: {hint}"
        )
    return provider, note


def validate_model_settings(
    config: HarnessConfig,
    *,
    require_model: bool,
    env: Mapping[str, str] | None = None,
    providers: ProviderLookup | None = None,
) -> list[ModelSetting]:
    """Check every model the config uses, without calling any of them.

    ``require_model``: no model at all is an error (``check``); otherwise it is the
    node's "start, refuse tasks" state and only the models that are set are checked.
    ``providers``: the plugins' model providers (``harness_ros.plugins.model_provider``).
    """
    environ = os.environ if env is None else env
    in_use = _models_in_use(config, providers)
    if require_model and config.effective_model() is None:
        raise ConfigError(NO_MODEL_MESSAGE)
    settings: list[ModelSetting] = []
    litellm: Any = None
    api_key: str | None = None
    for role, key, name, sees_images in in_use:
        kind = model_kind(name, providers)
        if kind == "replay":
            path = Path(name.removeprefix(REPLAY_PREFIX))
            if not path.is_file():
                raise ConfigError(f"{key} {name!r}: the recording {str(path)!r} does not exist")
            settings.append(
                ModelSetting(role, key, name, "replay", sees_images, "recorded replies", "replay")
            )
            continue
        problem = provider_problem(config, key, name, providers, require_tools=True)
        if problem is not None:
            raise ConfigError(problem)
        if kind == "local":
            from harness_ros.local_model.serving import local_model_problem

            local_problem = local_model_problem(key, name)
            if local_problem is not None:
                raise ConfigError(local_problem)
            note = "served by the node with llama.cpp on 127.0.0.1 for its lifetime (text-only)"
            # The node points the model at its server on this machine: auto is small there.
            served = resolve_profile(config.model.profile, "openai/local", "http://127.0.0.1")
            settings.append(ModelSetting(role, key, name, "local", False, note, "local", served))
            continue
        plugin = plugin_provider(name, providers)
        if kind == "scripted" and plugin is not None:
            note = plugin.label
            prefix = name.partition("/")[0]
            settings.append(ModelSetting(role, key, name, prefix, sees_images, note, "scripted"))
            continue
        if litellm is None:
            api_key = _api_key(config, environ)
            litellm = import_litellm()
        provider, note = _check_litellm_model(litellm, config, key, name, api_key)
        if role == "model" and config.observations.views and not sees_images:
            text_only = "text-only (model.vision): camera views are described, never sent"
            note = f"{note}; {text_only}" if note else text_only
        profile = resolve_profile(config.model.profile, name, config.model.api_base)
        settings.append(ModelSetting(role, key, name, provider, sees_images, note, profile=profile))
    return settings


# ---------------------------------------------------------------------- online probe
@dataclass(frozen=True)
class ProbeResult:
    what: str
    seconds: float
    reply: str


def _probe_image_url() -> str:
    """A 32x32 red JPEG as a data URL (the harness sends its views the same way)."""
    import cv2
    import numpy as np

    image = np.zeros((32, 32, 3), dtype=np.uint8)
    image[:, :] = (0, 0, 255)  # BGR red
    ok, encoded = cv2.imencode(".jpg", image)
    if not ok:
        raise LLMError("cannot encode the probe image")
    return "data:image/jpeg;base64," + base64.b64encode(encoded.tobytes()).decode("ascii")


def _short(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


def probe_model(model: ChatModel, *, image: bool) -> Sequence[ProbeResult]:
    """One minimal completion (and one with a small image), each timed; raises ``LLMError``."""
    requests: list[tuple[str, list[dict[str, Any]]]] = [
        ("text", [{"role": "user", "content": "Reply with the single word OK."}])
    ]
    if image:
        content = [
            {"type": "text", "text": "What colour is this image? Answer with one word."},
            {"type": "image_url", "image_url": {"url": _probe_image_url()}},
        ]
        requests.append(("image", [{"role": "user", "content": content}]))
    results: list[ProbeResult] = []
    for what, messages in requests:
        start = time.perf_counter()
        try:
            reply = model.complete(messages)
        except LLMError as err:
            raise LLMError(f"model {model.name!r} failed the {what} probe: {err}") from None
        results.append(ProbeResult(what, time.perf_counter() - start, _short(reply.text)))
    return results
