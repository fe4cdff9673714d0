"""A model call that times out is not sent again, and the error says how to give it more time."""

from __future__ import annotations

import time

import pytest

from harness_ros.config import ModelConfig
from harness_ros.errors import LLMError
from harness_ros.model import LiteLLMModel
from harness_ros.model.litellm_model import import_litellm
from harness_ros.testing.loopback_llm import LoopbackLLMServer


def test_a_timed_out_call_is_sent_once_and_names_the_setting() -> None:
    import_litellm()  # its import takes seconds: not part of the call
    sleeps: list[float] = []
    with LoopbackLLMServer(["late", "late", "late"], delay_s=2.0) as server:
        model = LiteLLMModel(
            "openai/loopback",
            api_base=server.url,
            api_key="dummy",
            timeout_s=0.5,
            max_retries=2,
            sleep=sleeps.append,
        )
        started = time.monotonic()
        with pytest.raises(LLMError) as raised:
            model.complete([{"role": "user", "content": "hi"}])
        elapsed = time.monotonic() - started
        sent = len(server.requests)
    message = str(raised.value)
    assert sent == 1  # neither litellm, the SDK nor the adapter sent it again
    assert sleeps == []
    assert elapsed < 2.0  # gave up at the timeout, not when the reply came
    assert "timed out after 0.5 s" in message and "not sent again" in message
    assert "raise model.timeout_s" in message and "Timeout" in message


def test_the_config_explains_the_timeout() -> None:
    fields = ModelConfig.model_fields
    assert "is not retried" in (fields["timeout_s"].description or "")
    assert "never on a timeout" in (fields["max_retries"].description or "")
