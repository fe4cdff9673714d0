"""``LiteLLMModel``: the project's one way to call a chat model.

litellm is imported lazily (it takes seconds) with the local cost map, so no call
reaches the network at import. The adapter owns retries: transient provider errors
(connection errors, 429, 5xx) are retried with exponential backoff up to
``max_retries``; authentication and bad requests fail at once. A call that ran into
``timeout_s`` is not retried: the same request would take as long again (a local model on
a CPU that needs minutes for its first prompt would only double the wait), so the error
names the timeout and the setting that raises it. Everything that
escapes is an ``LLMError`` naming provider, model and cause. A reply without native
tool calls whose text holds one (``text_calls``: bare, fenced, tagged or doubled-brace
JSON naming an offered tool with valid arguments) comes back with that call, marked
``recovered_from_text``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from harness_ros.errors import HarnessError, LLMError
from harness_ros.model.contracts import (
    ChatModel,
    ModelProfile,
    ModelReply,
    ProviderLookup,
    ToolCall,
    Usage,
    count_images,
)
from harness_ros.model.endpoints import ProfileSetting, resolve_profile, served_on_this_machine
from harness_ros.model.json_parsing import parse_json_loose
from harness_ros.model.markers import HARNESS_MARKERS
from harness_ros.model.redact import redact_secrets, redact_url, url_secrets
from harness_ros.model.text_calls import recover_text_calls

if TYPE_CHECKING:
    from harness_ros.config import ModelConfig
    from harness_ros.model.recording import ModelRecorder

__all__ = [
    "CALL_PREFILL",
    "LiteLLMModel",
    "PromptCache",
    "add_cache_breakpoints",
    "complete_json",
    "import_litellm",
    "needs_cache_markers",
    "with_text_calls",
]

logger = logging.getLogger(__name__)


_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
PromptCache = Literal["auto", "on", "off"]
JsonMode = Literal["auto", "on", "off"]
CallPrefill = Literal["auto", "on", "off"]
CALL_PREFILL = '{"name": "'
"""How a decision's reply starts when ``model.call_prefill`` is on: the opening of a call."""
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""litellm's cache breakpoint marker (Anthropic ``cache_control``)."""
_CLAUDE_HOSTS = frozenset({"bedrock", "vertex_ai", "vertex_ai_beta"})
_REGISTER_LOCK = threading.Lock()


def import_litellm() -> Any:
    """litellm with its bundled cost map: importing it never reaches the network. Its
    "Give Feedback / Get Help" banner is switched off: litellm prints it to stdout on every
    failed attempt (three times in the node log for one decision with two retries), and
    the harness's own LLMError already says what failed and where."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _litellm_knows(litellm: Any, prefix: str) -> bool:
    """Whether ``prefix`` is one of litellm's own providers. Its enum, not ``provider_list``:
    litellm appends every custom provider it has registered to that list."""
    try:
        return prefix in {str(getattr(item, "value", item)) for item in litellm.LlmProviders}
    except (AttributeError, TypeError):  # another litellm: let its own call say what it knows
        return True


def _ensure_plugin_provider(litellm: Any, model: str, providers: ProviderLookup | None) -> None:
    """Register the plugin that provides ``model``'s litellm provider, once per process.

    Custom providers come from plugins, through ``providers``; standard providers need
    nothing here.
    """
    prefix = model.split("/", 1)[0]
    with _REGISTER_LOCK:
        if any(item.get("provider") == prefix for item in litellm.custom_provider_map or []):
            return
        provider = None
        if providers is not None:
            try:
                provider = providers(prefix)
            except HarnessError as err:
                raise LLMError(f"Model {model!r}: plugins could not be loaded: {err}") from None
        if provider is not None:
            try:
                provider.register(litellm)
            except Exception as err:  # noqa: BLE001 - a provider plugin that cannot register: one clear error
                detail = redact_secrets(str(err))
                raise LLMError(
                    f"Model {model!r}: its provider plugin failed: {type(err).__name__}: {detail}"
                ) from None
        elif "/" in model and not _litellm_knows(litellm, prefix):
            # litellm would say "Unmapped LLM provider" on the first call; say where it comes from.
            where = (
                "this model was built without the plugins' providers "
                "(providers=harness_ros.plugins.model_provider)"
                if providers is None
                else "no installed plugin adds it (entry points in the group harness_ros.plugins)"
            )
            raise LLMError(f"Model {model!r}: litellm has no provider {prefix!r}, and {where}")


def _status_code(err: BaseException) -> int | None:
    code = getattr(err, "status_code", None)
    return code if isinstance(code, int) else None


def _is_timeout(litellm: Any, err: BaseException) -> bool:
    """The call ran out of time (litellm's Timeout, the SDK's or httpx's timeout errors)."""
    if isinstance(err, litellm.Timeout | TimeoutError):
        return True
    return any("Timeout" in cls.__name__ for cls in type(err).__mro__)


def _is_transient(litellm: Any, err: BaseException) -> bool:
    if isinstance(err, litellm.APIConnectionError | ConnectionError):
        return True
    code = _status_code(err)
    return code is not None and (code in _TRANSIENT_STATUS or code >= 500)


def _rejects_response_format(err: BaseException) -> bool:
    """A 4xx that blames ``response_format``: retry once without JSON mode."""
    code = _status_code(err)
    return code is not None and 400 <= code < 500 and "response_format" in str(err)


def _parse_arguments(raw: Any) -> tuple[str, dict[str, Any] | None]:
    if isinstance(raw, dict):
        return json.dumps(raw, ensure_ascii=False), raw
    text = raw if isinstance(raw, str) else ""
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):  # JSONDecodeError, huge ints, absurd nesting
        return text, None
    return text, value if isinstance(value, dict) else None


def _field(obj: Any, key: str) -> Any:
    """``obj.key`` or ``obj[key]``: litellm hands usage back as objects or plain dicts."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _usage(usage: Any) -> Usage:
    # litellm normalises Anthropic's cache reads into prompt_tokens_details.cached_tokens as
    # well; the top-level Anthropic field is the fallback for versions or paths that do not.
    cached = _count(_field(_field(usage, "prompt_tokens_details"), "cached_tokens")) or _count(
        _field(usage, "cache_read_input_tokens")
    )
    return Usage(
        prompt_tokens=_count(_field(usage, "prompt_tokens")),
        completion_tokens=_count(_field(usage, "completion_tokens")),
        cached_prompt_tokens=cached,
        cache_write_tokens=_count(_field(usage, "cache_creation_input_tokens")),
    )


def needs_cache_markers(litellm: Any, model: str, api_base: str | None = None) -> bool:
    """Whether ``model`` is a Claude model behind a provider that caches only at explicit
    ``cache_control`` breakpoints (Anthropic, Bedrock, Vertex AI). Providers that cache
    prefixes on their own (OpenAI, DeepSeek, ...) need nothing. On Bedrock, litellm itself
    leaves the markers out for models its cost map lists without prompt caching."""
    try:
        # get_llm_provider prints a provider list to stdout when it cannot resolve a name.
        with contextlib.redirect_stdout(io.StringIO()):
            base_model, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm raises its BadRequestError for an unknown name: use the bare name
        base_model, provider = model, ""
    provider = str(provider or "")
    claude = "claude" in str(base_model).lower()
    if provider == "anthropic":
        return True
    return claude and (provider in _CLAUDE_HOSTS or not provider)


def _mark_message(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose last content block carries the cache breakpoint."""
    marked = dict(message)
    content = message.get("content")
    if message.get("role") == "tool":
        # litellm puts a message-level marker on the tool_result block itself.
        marked["cache_control"] = dict(EPHEMERAL)
    elif isinstance(content, str) and content:
        marked["content"] = [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        marked["content"] = [*content[:-1], {**content[-1], "cache_control": dict(EPHEMERAL)}]
    elif message.get("tool_calls"):
        # An assistant turn with only tool calls: litellm carries the marker on the tool_use block.
        calls = list(message["tool_calls"])
        calls[-1] = {**calls[-1], "cache_control": dict(EPHEMERAL)}
        marked["tool_calls"] = calls
    else:
        marked["cache_control"] = dict(EPHEMERAL)  # message level (litellm reads it on tool results)
    return marked


def add_cache_breakpoints(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Copies of ``messages`` and ``tools`` with at most three cache breakpoints (Anthropic
    allows four): the last tool definition, the system message, and the last message before
    the newest user message (the Refreshed observation or a new instruction, which changes
    every turn). The prefix up to each breakpoint is then cached and re-read next turn;
    Anthropic looks back from a breakpoint for an earlier cached prefix, so the one on the
    growing history finds the previous turn's entry. Inputs are never mutated."""
    marked = list(messages)
    if marked and marked[0].get("role") == "system":
        marked[0] = _mark_message(marked[0])
    last = len(marked) - 1
    if last >= 1 and marked[last].get("role") == "user":
        last -= 1  # the newest user message is new this turn: nothing before it to re-read
    if last >= 1:
        marked[last] = _mark_message(marked[last])
    marked_tools = None
    if tools:
        marked_tools = [*tools[:-1], {**tools[-1], "cache_control": dict(EPHEMERAL)}]
    return marked, marked_tools


def with_text_calls(reply: ModelReply, tools: list[dict[str, Any]] | None) -> ModelReply:
    """``reply`` with the tool calls its text holds (``text_calls``), when it has no native ones."""
    if reply.tool_calls or not tools or not reply.text:
        return reply
    recovery = recover_text_calls(reply.text, tools)
    if recovery.calls:
        return dataclasses.replace(
            reply,
            text=recovery.text,
            tool_calls=recovery.calls,
            original_text=reply.text,
            text_call_problems=recovery.problems,
        )
    if recovery.problems:
        return dataclasses.replace(reply, text_call_problems=recovery.problems)
    return reply


def _to_reply(response: Any, fallback_model: str) -> ModelReply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise LLMError(f"Model {fallback_model!r} returned no choices")
    message = choices[0].message
    calls: list[ToolCall] = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = call.function
        arguments_json, arguments = _parse_arguments(getattr(function, "arguments", ""))
        calls.append(
            ToolCall(
                id=str(getattr(call, "id", None) or f"call_{index}"),
                name=str(getattr(function, "name", "") or ""),
                arguments_json=arguments_json,
                arguments=arguments,
            )
        )
    return ModelReply(
        text=getattr(message, "content", None),
        tool_calls=tuple(calls),
        usage=_usage(getattr(response, "usage", None)),
        model=str(getattr(response, "model", None) or fallback_model),
    )


class LiteLLMModel:
    """A ``ChatModel`` over ``litellm.completion`` with bounded retries."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        decision_max_tokens: int | None = None,
        recorder: ModelRecorder | None = None,
        retry_backoff_s: float = 1.0,
        completion_kwargs: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        prompt_cache: PromptCache = "auto",
        providers: ProviderLookup | None = None,
        json_mode: JsonMode = "auto",
        call_prefill: CallPrefill = "auto",
        profile: ProfileSetting | ModelProfile = "auto",
    ) -> None:
        if not model or not model.strip():
            raise LLMError("Model string is empty")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        if prompt_cache not in ("auto", "on", "off"):
            raise ValueError(f"prompt_cache must be 'auto', 'on' or 'off', got {prompt_cache!r}")
        self.name = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.decision_max_tokens = decision_max_tokens
        """Cap on a reply to a request that offers tools (a decision), within ``max_tokens``."""
        self.recorder = recorder
        self.retry_backoff_s = retry_backoff_s
        self._extra = dict(completion_kwargs or {})
        self._sleep = sleep
        self.prompt_cache: PromptCache = prompt_cache
        self._markers: bool | None = None
        self._providers = providers
        """Where a custom provider prefix finds its plugin; None: nowhere."""
        if json_mode not in ("auto", "on", "off"):
            raise ValueError(f"json_mode must be 'auto', 'on' or 'off', got {json_mode!r}")
        self.json_mode: JsonMode = json_mode
        if call_prefill not in ("auto", "on", "off"):
            raise ValueError(f"call_prefill must be 'auto', 'on' or 'off', got {call_prefill!r}")
        self.call_prefill: CallPrefill = call_prefill
        if not isinstance(profile, ModelProfile):
            profile = resolve_profile(profile, model, api_base)
        self.profile: ModelProfile = profile
        """``model.profile`` resolved once: what the harness's requests and guidance read."""

    @property
    def sends_json_mode(self) -> bool:
        """Whether a JSON request carries ``response_format`` (``model.json_mode``): auto is
        yes but for an OpenAI-compatible server on this machine. llama.cpp enforces JSON mode
        with a grammar, and its server aborted on one (``llama-grammar.cpp: fatal error``)
        during the demo's consolidation with the 1.5B, gone for the rest of the demo; the
        harness reads JSON from the reply's text either way."""
        if self.json_mode != "auto":
            return self.json_mode == "on"
        return not served_on_this_machine(self.name, self.api_base)

    @property
    def stops_at_harness_text(self) -> bool:
        """Whether a decision stops generating where the harness's own blocks begin
        (``model.markers``): for a model served on this machine, which on a CPU spends a
        second per few tokens, and which (the 1.5B) followed its calls with copies of the
        Task Notes. Hosted models do not copy them, and some reject ``stop``. From the profile."""
        return self.profile.stops_at_harness_text

    @property
    def keeps_skill_in_history(self) -> bool:
        """Whether a loaded skill joins the task's history where it was loaded rather than the
        system message (``ContextBuilder(skill_in_history=True)``): for a model served on this
        machine. Its chat template (llama.cpp serving Qwen2.5) renders the tool definitions
        after the system text, so a skill in the system message made the next decision read
        the definitions and the whole history again (2,128 of 2,727 tokens, about 70 s with
        the 1.5B on two cores). Hosted providers place the tools first and price the cache,
        not the seconds: for them the Resident order stays as it is. From the profile."""
        return self.profile.skill_in_history

    @property
    def prefills_calls(self) -> bool:
        """Whether a decision's reply is started as a call (``model.call_prefill``): auto is yes
        for a model served on this machine. After each failed pick the 1.5B's most likely first
        token was the end of its turn (p 0.33, the start of a new turn next at 0.27, a call's
        opening 0.05): greedy, the reply was empty three times and the task ended as malformed.
        Started as ``{"name": "``, the same prompt got a call. Auto: from the profile."""
        if self.call_prefill != "auto":
            return self.call_prefill == "on"
        return self.profile.prefills_calls

    @classmethod
    def from_config(cls, cfg: ModelConfig, *, model: str | None = None, **kwargs: Any) -> LiteLLMModel:
        """Build from ``ModelConfig``; the API key comes from the env var it names; ``kwargs`` override."""
        api_key = None
        if cfg.api_key_env:
            api_key = os.environ.get(cfg.api_key_env)
            if not api_key:
                msg = f"model.api_key_env names {cfg.api_key_env!r}, but that environment variable is not set"
                raise LLMError(msg)
        settings: dict[str, Any] = {
            "api_base": cfg.api_base,
            "api_key": api_key,
            "timeout_s": cfg.timeout_s,
            "max_retries": cfg.max_retries,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "decision_max_tokens": cfg.decision_max_tokens,
            "prompt_cache": cfg.prompt_cache,
            "json_mode": cfg.json_mode,
            "call_prefill": cfg.call_prefill,
            "profile": cfg.profile,
        }
        # Callers may override a setting (check --online makes one attempt, no retries).
        settings.update(kwargs)
        built = cls(model or cfg.model or "", **settings)
        logger.info("%s: %s", built.name, built.profile.describe())
        return built

    @property
    def provider(self) -> str:
        return self.name.split("/", 1)[0] if "/" in self.name else "unknown"

    def cache_markers(self, litellm: Any) -> bool:
        """Whether requests carry ``cache_control`` breakpoints (resolved once per model)."""
        if self.prompt_cache != "auto":
            return self.prompt_cache == "on"
        if self._markers is None:
            self._markers = needs_cache_markers(litellm, self.name, self.api_base)
        return self._markers

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        json_mode: bool,
        *,
        cache_markers: bool = False,
    ) -> dict[str, Any]:
        if cache_markers:
            messages, tools = add_cache_breakpoints(messages, tools)
        request: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "timeout": self.timeout_s,
            # The adapter owns retries; the provider SDK must not retry underneath it.
            "max_retries": 0,
            "num_retries": 0,
        }
        if tools:
            request["tools"] = tools
            if self.stops_at_harness_text:
                request["stop"] = list(HARNESS_MARKERS)
            if self.prefills_calls:
                # A final assistant message is continued, not answered (llama.cpp, vLLM);
                # it is never stored: the reply carries the whole call (``_with_prefill``).
                request["messages"] = [*messages, {"role": "assistant", "content": CALL_PREFILL}]
        if json_mode and self.sends_json_mode:
            request["response_format"] = {"type": "json_object"}
        max_tokens = self.max_tokens
        if tools and self.decision_max_tokens is not None:
            max_tokens = min(self.decision_max_tokens, max_tokens or self.decision_max_tokens)
        for key, value in (
            ("api_base", self.api_base),
            ("api_key", self._api_key),
            ("temperature", self.temperature),
            ("max_tokens", max_tokens),
        ):
            if value is not None:
                request[key] = value
        request.update(self._extra)
        return request

    def _timeout_error(self, err: BaseException, attempts: int) -> LLMError:
        msg = (
            f"Model call timed out after {self.timeout_s:g} s (provider {self.provider!r}, model "
            f"{self.name!r}, attempt {attempts}; {type(err).__name__}) and was not sent again: the same "
            "request would take as long again. A local model on a CPU can need minutes for its first "
            "prompt: raise model.timeout_s (e.g. 'timeout_s: 600' under 'model:' in the config, or "
            "-p model.timeout_s:=600.0 for the node)"
        )
        return LLMError(msg)

    def _secrets(self) -> list[str | None]:
        """The values no error may quote: the API key and the credentials in ``api_base``."""
        return [self._api_key, *url_secrets(self.api_base)]

    def _error(self, err: BaseException, attempts: int) -> LLMError:
        # Redacted before it is cut: a provider's 401 may echo the key (``redact``).
        detail = redact_secrets(" ".join(str(err).split()), self._secrets())[:400] or type(err).__name__
        # the URL tried: a connection error is most often a wrong or unreachable api_base
        if self.api_base:
            where = f", api_base {redact_url(self.api_base)!r}"
        elif "Connection" in type(err).__name__:
            where = ", api_base not set: the provider's default URL"
        else:
            where = ""
        msg = (
            f"Model call failed (provider {self.provider!r}, model {self.name!r}, "
            f"{attempts} attempt{'s' if attempts != 1 else ''}{where}): {type(err).__name__}: {detail}"
        )
        return LLMError(msg)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        litellm = import_litellm()
        _ensure_plugin_provider(litellm, self.name, self._providers)
        request = self._request(messages, tools, json_mode, cache_markers=self.cache_markers(litellm))
        reply = self._send(litellm, request, tools)
        if tools and self._resamples_empty and not (reply.text or "").strip() and not reply.tool_calls:
            # Greedy decoding that ends at once on a prompt ends at once again on it: the
            # 1.5B gave three empty replies in a row after loading a skill, and the task
            # ended as malformed. One sampled retry; the prompt is all in llama.cpp's cache,
            # so it costs only the reply.
            logger.info("Model %s: empty decision reply; sampling once more", self.name)
            again = self._send(litellm, {**request, "temperature": _RESAMPLE_TEMPERATURE}, tools)
            reply = dataclasses.replace(again, usage=_sum_usage(reply.usage, again.usage))
        images = count_images(messages)
        if images:
            reply = dataclasses.replace(reply, usage=dataclasses.replace(reply.usage, images=images))
        # The recorder digests the unmarked request, so a recording replays whatever prompt_cache says.
        if self.recorder is not None:
            self.recorder.record(messages, tools=tools, json_mode=json_mode, reply=reply)
        return reply

    @property
    def _resamples_empty(self) -> bool:
        """An empty decision is sent once more, sampled: for a greedy model served here."""
        return self.temperature == 0.0 and self.stops_at_harness_text

    def _send(self, litellm: Any, request: dict[str, Any], tools: list[dict[str, Any]] | None) -> ModelReply:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = litellm.completion(**request)
                break
            except LLMError:
                raise
            except Exception as err:  # noqa: BLE001 - provider SDKs raise many types; all become LLMError
                if "response_format" in request and _rejects_response_format(err):
                    logger.debug("%s rejected response_format; retrying without JSON mode", self.name)
                    del request["response_format"]
                    attempt -= 1
                    continue
                if _is_timeout(litellm, err):
                    raise self._timeout_error(err, attempt) from None
                if not _is_transient(litellm, err) or attempt > self.max_retries:
                    # not chained: the provider's exception may quote the key in a traceback
                    raise self._error(err, attempt) from None
                delay = self.retry_backoff_s * (2 ** (attempt - 1))
                logger.warning(
                    "Model %s: transient error (%s), retry %d/%d in %.1fs",
                    self.name,
                    type(err).__name__,
                    attempt,
                    self.max_retries,
                    delay,
                )
                self._sleep(delay)
        reply = _to_reply(response, self.name)
        if tools and self.prefills_calls:
            return _with_prefill(reply, tools)
        return with_text_calls(reply, tools)


def _with_prefill(reply: ModelReply, tools: list[dict[str, Any]]) -> ModelReply:
    """A reply to a prefilled decision, read as the whole call: llama.cpp returns the prefill
    with its continuation, other servers (vLLM) only the continuation. A reply that added
    nothing to the prefill is empty: no call and no words of the model's."""
    text = (reply.text or "").strip()
    if reply.tool_calls or not text.removeprefix(CALL_PREFILL).strip():
        return reply if reply.tool_calls else dataclasses.replace(reply, text=None)
    whole = with_text_calls(reply, tools)
    if whole.tool_calls or text.startswith(CALL_PREFILL):
        return whole
    continued = with_text_calls(dataclasses.replace(reply, text=CALL_PREFILL + text), tools)
    return continued if continued.tool_calls else whole


_RESAMPLE_TEMPERATURE = 0.7


def _sum_usage(first: Usage, second: Usage) -> Usage:
    return Usage(
        **{f.name: getattr(first, f.name) + getattr(second, f.name) for f in dataclasses.fields(Usage)}
    )


def complete_json(model: ChatModel, messages: list[dict[str, Any]], *, what: str = "") -> dict[str, Any]:
    """One JSON-mode completion parsed into a dict (fenced or loose JSON accepted)."""
    reply = model.complete(messages, json_mode=True)
    return parse_json_loose(reply.text, what=what or f"reply of model {model.name!r}")
