"""A ``local/<name>`` model string in a node config: check it, and point the config at the server.

The node (harness_ros.ros.node) starts a ``LocalServer`` child for ``local/1.5b``,
``local/0.5b`` or ``local/<file>.gguf`` when it configures and stops it when it cleans up
or shuts down; this module holds the parts without ROS: whether the model can be served
here (``local_model_problem``, also what ``harness-ros check`` reports) and the config the
node runs with once the server answers (``served_config``). The node never installs
(a 0.5-1.1 GB download inside a lifecycle transition): a missing model is an error
naming the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_ros.errors import ConfigError
from harness_ros.local_model.catalog import LOCAL_PREFIX

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig
    from harness_ros.local_model.server import Endpoint

__all__ = ["LOCAL_MODEL_DEFAULTS", "local_model_problem", "local_request", "served_config"]

LOCAL_MODEL_DEFAULTS: dict[str, float] = {
    # A 2-core CPU reads ~30-60 prompt tokens/s: the first decision (~2,000-3,000 tokens)
    # takes one to two minutes, more under load; later ones reuse the prompt cache.
    "timeout_s": 900.0,
    # The served context (16,384 tokens) minus room for the reply: compaction starts in time.
    "context_window_tokens": 14_000,
    # Greedy decoding: a small model's calls are most often well-formed this way, and runs repeat.
    "temperature": 0.0,
    # A bound on each reply: without one the 1.5B once wrote past ten minutes after a call
    # (llama.cpp generates until the context is full), where a call takes under 100 tokens
    # and a consolidation's JSON well under 1,000.
    "max_tokens": 1024,
    # A decision's reply: a call takes under 100 tokens. The 1.5B, lost after a failed
    # call, wrote 300-1,000 tokens of prose a decision (minutes each on 2 cores).
    "decision_max_tokens": 256,
}
"""What replaces a model setting left at its hosted-model default (60 s, 128,000 tokens, none)."""
_HOSTED_DEFAULTS: dict[str, float | None] = {
    "timeout_s": 60.0,
    "context_window_tokens": 128_000,
    "temperature": None,
    "max_tokens": None,
    "decision_max_tokens": None,
}


def local_request(config: HarnessConfig) -> str | None:
    """``1.5b``/``0.5b``/a .gguf path when the config's model is ``local/...``, else None."""
    name = config.effective_model()
    if name is None or not name.startswith(LOCAL_PREFIX):
        return None
    return name.removeprefix(LOCAL_PREFIX).strip()


def local_model_problem(key: str, name: str) -> str | None:
    """Why ``name`` (``local/...``) cannot be served on this machine, or None.

    Checks only what is on disk (the runtime importable, the model file present): no
    download, no hashing, no server."""
    from harness_ros.local_model.install import runtime_installed
    from harness_ros.local_model.server import spec_or_path

    served = name.removeprefix(LOCAL_PREFIX).strip()
    try:
        spec, path = spec_or_path(served)
    except ConfigError as err:
        return f"{key} {name!r}: {err}"
    if spec is None:  # a path to a GGUF file of the user's own
        install = "`make local-model` or `harness-ros model install --runtime-only`"
        if not path.is_file():
            return f"{key} {name!r}: the model file {str(path)!r} does not exist"
    else:
        install = (
            f"`make local-model LOCAL_MODEL={spec.name}` or `harness-ros model install --model {spec.name}`"
        )
        if not path.is_file():
            return f"{key} {name!r}: the local model {spec.name} is not installed ({path}): run {install}"
    if not runtime_installed():
        runtime = "xllamacpp (llama.cpp's server) is not installed in this environment"
        return f"{key} {name!r}: {runtime}: run {install}"
    return None


def served_config(config: HarnessConfig, endpoint: Endpoint) -> tuple[HarnessConfig, list[str]]:
    """The config pointed at a running local server, and what was changed (for the log).

    ``model.model`` becomes the server's ``openai/<alias>``, ``model.api_base`` its address and
    ``model.api_key_env`` the variable with its key; settings left at the hosted-model
    defaults get ``LOCAL_MODEL_DEFAULTS``. An ``evaluator.model`` naming the same local model
    is pointed at the same server; a different local model there is refused (one server)."""
    requested = config.effective_model()
    changes: dict[str, object] = {
        "model": endpoint.model,
        "api_base": endpoint.api_base,
        "api_key_env": endpoint.api_key_env or None,
    }
    adjusted: list[str] = []
    for field, local_value in LOCAL_MODEL_DEFAULTS.items():
        if getattr(config.model, field) == _HOSTED_DEFAULTS[field]:
            changes[field] = local_value
            adjusted.append(f"model.{field} {local_value:g}")
    update: dict[str, object] = {"model": config.model.model_copy(update=changes)}
    evaluator = config.evaluator.model
    if config.evaluator.kind == "model" and evaluator and evaluator.startswith(LOCAL_PREFIX):
        if evaluator != requested:
            raise ConfigError(
                f"evaluator.model {evaluator!r}: the node serves one local model ({requested!r}); "
                "use the same one, or an openai/... model with its own server"
            )
        update["evaluator"] = config.evaluator.model_copy(update={"model": endpoint.model})
    return config.model_copy(update=update), adjusted
