"""Token counts by an installed local model's own tokenizer and chat template (llama.cpp).

``LocalTokenizer`` loads the GGUF into an in-process llama.cpp server (xllamacpp) on
127.0.0.1 with a tiny context, and asks it two things over HTTP: ``/apply-template``
renders a request (messages and tools) exactly as the served chat template does, and
``/tokenize`` counts the tokens. So a request's count is what llama.cpp reads for it
(its ``usage.prompt_tokens``), without computing a single token of the model.

Loading takes a few seconds (the weights are memory-mapped, not read); llama.cpp's
load log is kept off the terminal and shown only when loading fails.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_ros.local_model.catalog import LOCAL_MODELS
from harness_ros.local_model.install import LocalModelError, runtime_installed
from harness_ros.local_model.server import chat_template_for

__all__ = ["LocalTokenizer", "installed_tokenizer_model"]

_TOKENIZER_PREFERENCE = ("0.5b", "1.5b")
"""The 0.5B loads fastest; the Qwen2.5-Coder 0.5B and 1.5B share one tokenizer and template."""
_HTTP_TIMEOUT_S = 60.0


def installed_tokenizer_model() -> Path | None:
    """The first installed catalog model (0.5B first) when xllamacpp is installed, else None."""
    if not runtime_installed():
        return None
    for name in _TOKENIZER_PREFERENCE:
        path = LOCAL_MODELS[name].path
        if path.is_file():
            return path
    return None


class LocalTokenizer:
    """Counts tokens with one GGUF's tokenizer and the chat template it is served with."""

    def __init__(self, model_path: Path) -> None:
        import xllamacpp

        self.model_path = model_path
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        params.n_ctx = 256  # nothing is computed: the smallest context keeps the load cheap
        params.n_parallel = 1
        params.cpuparams.n_threads = 1
        params.cpuparams_batch.n_threads = 1
        params.use_jinja = True
        params.ui = False
        params.verbosity = 0
        params.warmup = False
        template = chat_template_for(model_path)
        if template is not None:
            params.chat_template = template
        self._server = _quietly(lambda: xllamacpp.Server(params), model_path)
        self._address = str(self._server.listening_address).rstrip("/")

    @property
    def label(self) -> str:
        return f"tokenizer of {self.model_path.name.removesuffix('.gguf')}, llama.cpp"

    def _post(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(  # noqa: S310  our own http://127.0.0.1 server
            self._address + endpoint,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:  # noqa: S310
            result: dict[str, Any] = json.loads(response.read())
        return result

    def count_text(self, text: str) -> int:
        """Tokens of plain text (no special tokens parsed, none added)."""
        if not text:
            return 0
        tokens = self._post("/tokenize", {"content": text, "add_special": False, "parse_special": False})
        return len(tokens["tokens"])

    def render_request(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> str:
        """The prompt text the served chat template makes of a request (generation prompt included)."""
        body: dict[str, Any] = {"messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        return str(self._post("/apply-template", body)["prompt"])

    def count_request(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> int:
        """Prompt tokens of a chat request as llama.cpp reads it."""
        prompt = self.render_request(messages, tools)
        tokens = self._post("/tokenize", {"content": prompt, "add_special": True, "parse_special": True})
        return len(tokens["tokens"])

    def close(self) -> None:
        server, self._server = getattr(self, "_server", None), None
        del server  # stops the HTTP server and frees the model

    def __enter__(self) -> LocalTokenizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quietly(load: Any, model_path: Path) -> Any:
    """Run ``load`` with this process's stderr (llama.cpp's load log) sent to a temporary file;
    a failure raises ``LocalModelError`` with the log's last lines."""
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            return load()
        except Exception as err:  # noqa: BLE001  llama.cpp reports a bad file as RuntimeError
            os.dup2(saved, 2)
            log.seek(0)
            tail = "\n".join(log.read().decode("utf-8", "replace").splitlines()[-10:])
            raise LocalModelError(f"llama.cpp could not load {str(model_path)!r}: {err}\n{tail}") from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
