"""Where a model is served: an OpenAI-compatible server on this machine, or elsewhere.

A server on this machine (llama.cpp, vLLM, LM Studio behind ``openai/...`` and
``api_base: http://127.0.0.1:...``) says nothing about the model behind it, so the harness
treats it conservatively: text-only (``model.vision``), and no JSON mode
(``model.json_mode``). ``model.profile: auto`` takes it for a small model
(``resolve_profile``); ``small`` and ``hosted`` say what the URL cannot.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from harness_ros.model.contracts import ModelProfile

__all__ = [
    "OPENAI_COMPATIBLE",
    "ProfileSetting",
    "is_local_api_base",
    "resolve_profile",
    "served_on_this_machine",
]

ProfileSetting = Literal["auto", "small", "hosted"]

OPENAI_COMPATIBLE = frozenset({"openai", "hosted_vllm", "llamafile", "lm_studio", "openai_like"})
"""litellm providers that speak the OpenAI API to whatever server ``api_base`` names."""

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})  # noqa: S104 - names, no binding


def is_local_api_base(api_base: str | None) -> bool:
    """Whether ``api_base`` names this machine."""
    if not api_base:
        return False
    host = (urlsplit(api_base).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.")


def served_on_this_machine(model: str, api_base: str | None) -> bool:
    """Whether litellm model ``model`` goes to an OpenAI-compatible server on this machine."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    return provider in OPENAI_COMPATIBLE and is_local_api_base(api_base)


def resolve_profile(setting: ProfileSetting, model: str, api_base: str | None) -> ModelProfile:
    """The profile of litellm model ``model`` at ``api_base`` for ``model.profile``: ``small`` and
    ``hosted`` as set; ``auto`` small for an OpenAI-compatible server on this machine (its URL
    says nothing about the model behind it, and the one the project serves is the 1.5B),
    hosted otherwise."""
    if setting == "small":
        return ModelProfile.small("model.profile: small")
    if setting == "hosted":
        return ModelProfile.hosted("model.profile: hosted")
    if setting != "auto":
        raise ValueError(f"model.profile must be 'auto', 'small' or 'hosted', got {setting!r}")
    if served_on_this_machine(model, api_base):
        return ModelProfile.small(f"auto: served on this machine at {_shown(api_base)}")
    where = f"at {_shown(api_base)}" if api_base else "at the provider's own address"
    return ModelProfile.hosted(f"auto: {model} {where} is not served on this machine")


def _shown(api_base: str | None) -> str:
    """``api_base`` for a log line: scheme, host, port and path; no credentials, no query."""
    parts = urlsplit(api_base or "")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:  # not a port: left out
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else host + port + parts.path
