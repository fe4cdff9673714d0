"""Model contracts: the harness talks to any chat model through this Protocol.

Messages and tool definitions use the OpenAI chat format (what litellm speaks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "ChatModel",
    "ConfigProblem",
    "ModelKind",
    "ModelProfile",
    "ModelProvider",
    "ModelReply",
    "ProfileName",
    "ProviderLookup",
    "ToolCall",
    "Usage",
    "count_images",
    "profile_of",
]

ModelKind = Literal["litellm", "local", "scripted", "replay"]
"""What decides: a language model through litellm, the local model the node serves, a
script a plugin provides (not a language model), or recorded replies."""

ConfigProblem = Callable[[Any, str, str, bool], "str | None"]
"""(config, the key that chose the model, the model string, whether the config must bind
tools the provider drives) -> why the provider may not run with this config, or None."""


@dataclass(frozen=True)
class ModelProvider:
    """A litellm custom provider a plugin adds: models ``<prefix>/...`` use it.

    The harness knows a provider only through this: whether it is a language model, how
    to name it when it is not, and which configs it refuses (a script written for one
    simulated robot must never drive another robot)."""

    register: Callable[[Any], None]
    """Registers the provider on the ``litellm`` module it is given."""
    language_model: bool = True
    """False: a script, not a language model; its decisions are labelled so everywhere,
    and it is given the camera images (it ignores or reads them; nothing is billed)."""
    label: str = ""
    """How ``check``, reports and the eval name a provider that is not a language model."""
    config_problem: ConfigProblem | None = None
    """Why it may not run with a config, or None (see ``ConfigProblem``)."""


ProviderLookup = Callable[[str], "ModelProvider | None"]
"""A provider prefix -> the plugin provider of that name, or None when no plugin has one.

The plugins hand it in (``harness_ros.plugins.model_provider``) where a model is built or
checked, so the model layer never imports the plugins' layer."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_json: str
    arguments: dict[str, Any] | None
    """Parsed arguments, or None when ``arguments_json`` was not a JSON object."""
    recovered_from_text: bool = False
    """The model wrote this call as JSON in its text, not as a native tool call
    (``harness_ros.model.text_calls``)."""


@dataclass(frozen=True)
class Usage:
    """Tokens of one completion as the provider reported them (0: not reported)."""

    prompt_tokens: int = 0
    """All prompt tokens, cached ones included."""
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens read from the provider's prompt cache (OpenAI ``cached_tokens``,
    Anthropic ``cache_read_input_tokens``)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the cache by this call (Anthropic ``cache_creation_input_tokens``)."""
    images: int = 0
    """Images in the request (``image_url`` parts), counted by the client."""

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "images": self.images,
        }


@dataclass(frozen=True)
class ModelReply:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    original_text: str | None = None
    """The content exactly as the model wrote it, when calls were recovered from it
    (``text`` is then what is left without them)."""
    text_call_problems: tuple[str, ...] = ()
    """Call-shaped JSON in the text that was not recovered, and why (unknown tool,
    invalid arguments)."""


class ChatModel(Protocol):
    """One completion. Raises ``LLMError`` after bounded retries."""

    name: str

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply: ...


ProfileName = Literal["small", "hosted"]
"""``small``: a small model (the 1.5B on a CPU) that the harness coaches; ``hosted``: a
model that needs none of it."""


@dataclass(frozen=True)
class ModelProfile:
    """What kind of model decides, resolved once at start-up (``model.profile``), and the
    capabilities the harness reads from it: its requests and the guidance parts
    (``harness_ros.harness.guidance``) read these fields, never the model's URL or name."""

    name: ProfileName
    why: str
    """Why this profile applies, for the start-up log: ``model.profile: small`` or
    ``auto: served on this machine at http://127.0.0.1:8080``."""
    guided: bool
    """The task's small-model guidance runs: held calls, the held finish, the focus notes."""
    stops_at_harness_text: bool
    """A decision stops where the harness's own blocks begin (``model.markers``)."""
    skill_in_history: bool
    """A loaded skill joins the history where it was loaded, not the system message."""
    prefills_calls: bool
    """``model.call_prefill: auto`` starts each decision's reply as a call."""

    @classmethod
    def small(cls, why: str) -> ModelProfile:
        return cls(
            "small", why, guided=True, stops_at_harness_text=True, skill_in_history=True, prefills_calls=True
        )

    @classmethod
    def hosted(cls, why: str) -> ModelProfile:
        return cls(
            "hosted",
            why,
            guided=False,
            stops_at_harness_text=False,
            skill_in_history=False,
            prefills_calls=False,
        )

    def describe(self) -> str:
        """The start-up log line: ``model profile: small (auto: served on this machine at ...)``."""
        return f"model profile: {self.name} ({self.why})"


@runtime_checkable
class _DeclaresProfile(Protocol):
    profile: ModelProfile


@runtime_checkable
class _DeclaresMarkers(Protocol):
    stops_at_harness_text: bool


@runtime_checkable
class _DeclaresSkillInHistory(Protocol):
    keeps_skill_in_history: bool


def profile_of(model: object) -> ModelProfile:
    """The profile ``model`` carries (``LiteLLMModel``: resolved from ``model.profile`` when it
    was built). A ``ChatModel`` that carries none (a recording, a hand-written model, a test
    double) is hosted, unless it declares the two capabilities a profile is made of
    (``stops_at_harness_text``, ``keeps_skill_in_history``): the one place they are read."""
    if isinstance(model, _DeclaresProfile) and isinstance(model.profile, ModelProfile):
        return model.profile
    stops = isinstance(model, _DeclaresMarkers) and model.stops_at_harness_text is True
    in_history = isinstance(model, _DeclaresSkillInHistory) and model.keeps_skill_in_history is True
    if not stops and not in_history:
        return ModelProfile.hosted("the model declares no profile")
    return ModelProfile(
        "small" if stops else "hosted",
        "declared by the model object",
        guided=stops,
        stops_at_harness_text=stops,
        skill_in_history=in_history,
        prefills_calls=False,
    )


def count_images(messages: list[dict[str, Any]]) -> int:
    """Number of ``image_url`` content parts in ``messages`` (what a request sends as images)."""
    count = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")
    return count
