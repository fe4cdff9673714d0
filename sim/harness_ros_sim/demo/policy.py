"""The scripted demo policy: a deterministic stand-in for a model, served as a litellm provider.

It is not a language model and says so in every reply. Requests are routed on the
first line of the first system message, ``# harness_ros: <purpose>``:

    decide       the fetch policy of ``harness_ros_sim.demo.decide`` (one tool call or a report)
    consolidate  lessons derived from the trajectory (``harness_ros_sim.demo.lessons``)
    summarize    a short summary of one ledger
    evaluate     always a failure verdict: it cannot look at images (fail closed)
    compact      a checkpoint summary of the older history

``scripted_reply`` is pure: it maps a chat request to a reply spec (the loopback
server's format), so tests and the loopback server use it without litellm.
``register(litellm)`` installs it as the custom provider ``harness_demo``, used with
model strings ``harness_demo/<anything>``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from harness_ros_sim.demo.decide import POLICY_LABEL, decide, instruction_of, steps_of
from harness_ros_sim.demo.lessons import consolidate, summarize
from harness_ros_sim.names import DEMO_PROVIDER

__all__ = ["POLICY_LABEL", "PROVIDER", "purpose_of", "register", "scripted_reply"]

PROVIDER = DEMO_PROVIDER
_PURPOSE_PREFIX = "# harness_ros:"
_REGISTER_LOCK = threading.Lock()


def purpose_of(messages: Sequence[dict[str, Any]]) -> str:
    """The ``<purpose>`` of the first system message's first line, or ''."""
    for message in messages:
        if message.get("role") == "system":
            content = message.get("content")
            first = content.split("\n", 1)[0].strip() if isinstance(content, str) else ""
            return first.removeprefix(_PURPOSE_PREFIX).strip() if first.startswith(_PURPOSE_PREFIX) else ""
    return ""


def _payload(messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON object in the last user message (consolidate and summarize send one)."""
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            try:
                value = json.loads(message["content"])
            except json.JSONDecodeError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _labelled(data: dict[str, Any]) -> dict[str, Any]:
    # Readers take only the keys they know; the label travels with every JSON reply.
    return {**data, "produced_by": POLICY_LABEL}


def _compact(messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    transcript = ""
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            transcript = message["content"]
            break
    results = [line.strip() for line in transcript.splitlines() if line.strip().startswith("{")]
    kept = " | ".join(results[-10:])[:2000]
    return {"summary": f"Checkpoint by the {POLICY_LABEL}. Earlier tool results: {kept or 'none'}"}


def scripted_reply(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The policy's reply to one chat request: ``{"content": str | None, "tool_calls": [...]}``."""
    purpose = purpose_of(messages)
    if purpose == "decide":
        decision = decide(instruction_of(messages), steps_of(messages), tools)
        if decision.tool is None:
            return {"content": decision.text, "tool_calls": []}
        return {
            "content": decision.text,
            "tool_calls": [{"name": decision.tool, "arguments": decision.arguments}],
        }
    if purpose == "consolidate":
        data = consolidate(_payload(messages))
    elif purpose == "summarize":
        data = summarize(_payload(messages))
    elif purpose == "evaluate":
        data = {
            "status": "failure",
            "failure_reason": f"the {POLICY_LABEL} cannot judge camera images; "
            "use evaluator kind 'sim' or a vision model",
            "evidence": "",
        }
        # Exactly the verdict's three keys: the evaluator reads no other (a label here would
        # make the verdict malformed); the failure reason names the policy.
        return {"content": json.dumps(data, ensure_ascii=False), "tool_calls": []}
    elif purpose == "compact":
        data = _compact(messages)
    else:
        text = f"The {POLICY_LABEL} only answers harness_ros requests (got purpose {purpose!r})."
        return {"content": text, "tool_calls": []}
    return {"content": json.dumps(_labelled(data), ensure_ascii=False), "tool_calls": []}


def _model_response(litellm: Any, reply: dict[str, Any], model: str) -> Any:
    tool_calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
        }
        for call in reply["tool_calls"]
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply["content"]}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return litellm.ModelResponse(
        id=f"scripted-{uuid.uuid4().hex[:12]}",
        created=int(time.time()),
        model=f"{PROVIDER}/{model}",
        choices=[{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    )


def register(litellm: Any) -> None:
    """Install the policy as litellm provider ``harness_demo`` (idempotent, thread-safe)."""
    with _REGISTER_LOCK:
        providers = litellm.custom_provider_map or []
        if any(item.get("provider") == PROVIDER for item in providers):
            return

        class ScriptedDemoPolicy(litellm.CustomLLM):  # type: ignore[misc]
            """litellm glue only: every decision comes from ``scripted_reply``."""

            def completion(
                self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
            ) -> Any:
                params = kwargs.get("optional_params") or {}
                reply = scripted_reply(messages, params.get("tools"))
                return _model_response(litellm, reply, model)

            async def acompletion(
                self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
            ) -> Any:
                return self.completion(model, messages, *args, **kwargs)

        litellm.custom_provider_map = [
            *providers,
            {"provider": PROVIDER, "custom_handler": ScriptedDemoPolicy()},
        ]
        setup: Any = getattr(litellm, "custom_llm_setup", None)
        if setup is None:
            from litellm.utils import custom_llm_setup as setup
        setup()
