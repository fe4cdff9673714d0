"""Where a model is served: an OpenAI-compatible server on this machine, or elsewhere.

A server on this machine (llama.cpp, vLLM, LM Studio behind ``openai/...`` and
``api_base: http://127.0.0.1:...``) says nothing about the model behind it, so the harness
treats it conservatively: text-only (``model.vision``), and no JSON mode
(``model.json_mode``).
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["OPENAI_COMPATIBLE", "is_local_api_base", "served_on_this_machine"]

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
