"""A model call that cannot connect names the URL it tried (``model.api_base``)."""

from __future__ import annotations

import socket

import pytest

from harness_ros.errors import LLMError
from harness_ros.model.litellm_model import LiteLLMModel


def test_connection_refused_names_the_api_base_it_tried() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    model = LiteLLMModel(
        "openai/loopback", api_base=url, api_key="dummy", max_retries=0, sleep=lambda _: None
    )
    with pytest.raises(LLMError) as raised:
        model.complete([{"role": "system", "content": "decide"}])
    message = str(raised.value)
    assert f"1 attempt, api_base '{url}'): " in message
    assert "Connection" in message
