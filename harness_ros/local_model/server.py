"""llama.cpp's OpenAI-compatible server (xllamacpp) for a local model, on 127.0.0.1.

``serve`` runs the server in this process until SIGINT/SIGTERM (``harness-ros model
serve``). ``LocalServer`` starts that command as a child process for a caller's lifetime
(the demo, the tests, a ``local/...`` model string) and stops it again; the child also
exits by itself when its parent dies, so a killed node leaves no model server behind.

Settings and why: two threads (the small machines this targets have two cores, shared
with the sim and the node), one slot with llama.cpp's prompt cache (only the tokens
after the longest shared prefix are processed: a decision after the first costs seconds,
not minutes), and a context sized for the harness's prompts (a first prompt is about
3,000 tokens; a task grows it to 8,000-12,000 before compaction). For the Qwen2.5
family a corrected chat template is served (templates/qwen2.5-tools.jinja).
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any

from harness_ros.local_model.catalog import LOCAL_MODELS, LocalModelSpec
from harness_ros.local_model.install import LocalModelError

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_THREADS",
    "KEY_ENV",
    "MIN_KEY_CHARS",
    "LocalServer",
    "ServeOptions",
    "chat_template_for",
    "check_port_free",
    "is_loopback",
    "looks_like_path",
    "serve",
    "server_key",
]

DEFAULT_THREADS = 2
DEFAULT_CONTEXT_TOKENS = 16_384
_START_TIMEOUT_S = 180.0
_STOP_WAIT_S = 10.0
_QWEN_TEMPLATE = "qwen2.5-tools.jinja"
KEY_ENV = "HARNESS_LOCAL_MODEL_KEY"
"""When set, the server accepts only requests with this API key (``LocalServer`` sets a
random one and hands the same variable to the node as ``model.api_key_env``)."""
MIN_KEY_CHARS = 16
"""A key for a server other machines can reach is at least this long."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def server_key(host: str, env: Mapping[str, str]) -> tuple[str, bool]:
    """(the API key the server requires, whether it was generated here).

    On a loopback host the key is ``KEY_ENV``'s value or none. Any other host (``0.0.0.0``,
    an interface's address) lets every machine on the network use the model and, with its
    one slot, hold up the robot's decisions: it always requires a key, ``KEY_ENV``'s (at
    least ``MIN_KEY_CHARS`` characters, else ``LocalModelError``) or a generated one."""
    key = env.get(KEY_ENV, "").strip()
    if is_loopback(host):
        return key, False
    if key:
        if len(key) < MIN_KEY_CHARS:
            raise LocalModelError(
                f"--host {host} reaches this server from other machines, and ${KEY_ENV} holds a key of "
                f"{len(key)} characters: use at least {MIN_KEY_CHARS}, or unset it to have one generated"
            )
        return key, False
    return secrets.token_urlsafe(24), True


def check_port_free(host: str, port: int) -> None:
    """``LocalModelError`` naming ``port`` when something on this machine already listens there
    (before minutes of loading a model for a server that cannot start); 0 is always free."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise LocalModelError(f"--host {host!r}: not an address of this machine ({err.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no conflict
        try:
            probe.bind(address)
            probe.listen(1)
        except OSError as err:
            raise LocalModelError(
                f"port {port} on {host} is already in use ({err.strerror}): stop what listens there "
                "(another model server?) or choose another with --port (0 picks a free one)"
            ) from None


def chat_template_for(model_path: Path) -> str | None:
    """The corrected chat template for a Qwen2.5 file (by name), else None (the GGUF's own)."""
    if "qwen2.5" not in model_path.name.lower():
        return None
    # One name per step: Traversable.joinpath takes a single name before Python 3.11.
    return (resources.files("harness_ros.local_model") / "templates" / _QWEN_TEMPLATE).read_text("utf-8")


def _alias_for(model_path: Path) -> str:
    for spec in LOCAL_MODELS.values():
        if spec.file_name == model_path.name:
            return spec.alias
    return model_path.name.removesuffix(".gguf")


@dataclass(frozen=True)
class ServeOptions:
    model_path: Path
    alias: str = ""
    """The name the server answers to; default: the catalog alias or the file's stem."""
    host: str = "127.0.0.1"
    port: int = 0
    """0: a free port, chosen by the server (reported once it listens)."""
    threads: int = DEFAULT_THREADS
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    template_fix: bool = True
    """Serve the corrected Qwen2.5 template (ignored for other models)."""
    api_key: str = ""
    """Required of every request when set; empty: no key (127.0.0.1 only by default)."""

    @property
    def served_alias(self) -> str:
        return self.alias or _alias_for(self.model_path)


@dataclass(frozen=True)
class Endpoint:
    """Where a running server answers, and how litellm names its model."""

    api_base: str
    model: str
    """The litellm model string: ``openai/<alias>``."""
    alias: str
    model_path: str
    api_key_env: str = ""
    """The variable holding the key the server requires (empty: none)."""

    def as_json(self) -> str:
        return json.dumps(self.__dict__)


def _params(options: ServeOptions) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(options.model_path)
    params.model_alias = {options.served_alias}
    params.hostnames = [options.host]
    params.port = options.port
    params.n_ctx = options.context_tokens
    params.n_parallel = 1  # one slot: the whole context and its prompt cache for the one conversation
    params.cpuparams.n_threads = options.threads
    params.cpuparams_batch.n_threads = options.threads
    params.cache_prompt = True
    params.use_jinja = True
    params.ui = False
    params.verbosity = 0
    if options.api_key:
        params.api_keys = [options.api_key]
    template = chat_template_for(options.model_path) if options.template_fix else None
    if template is not None:
        params.chat_template = template
    return params


def _exit_with_parent(parent_pid: int, stop: threading.Event) -> None:
    """Set ``stop`` once the parent process is gone (this process was re-parented)."""
    while not stop.wait(1.0):
        if os.getppid() != parent_pid:
            stop.set()


def serve(
    options: ServeOptions,
    *,
    ready: Callable[[Endpoint], None],
    parent_pid: int | None = None,
) -> None:
    """Load the model, start the server, call ``ready`` and block until SIGINT/SIGTERM
    (or the parent's exit); then it ends this process, without returning."""
    if not options.model_path.is_file():
        raise LocalModelError(f"model file {str(options.model_path)!r} does not exist")
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelError(
            "xllamacpp is not installed in this environment: run `make local-model` "
            "(or `harness-ros model install`)"
        ) from None
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    if parent_pid is not None:
        threading.Thread(target=_exit_with_parent, args=(parent_pid, stop), daemon=True).start()
    try:
        try:
            server = xllamacpp.Server(_params(options))
        except Exception as err:  # noqa: BLE001  llama.cpp reports a bad file or setting as RuntimeError
            raise LocalModelError(f"llama.cpp could not serve {str(options.model_path)!r}: {err}") from None
        address = str(server.listening_address).rstrip("/")
        key_env = KEY_ENV if options.api_key else ""
        alias = options.served_alias
        ready(Endpoint(f"{address}/v1", f"openai/{alias}", alias, str(options.model_path), key_env))
        stop.wait()
        # Deleting the server would wait, holding the GIL, for the request in flight, and a
        # first prompt takes minutes on a small CPU: end the process instead (the OS frees
        # the model and the socket; there is nothing else to save).
        sys.stderr.write("model server stopped\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ---------------------------------------------------------------------- as a child process
@dataclass
class LocalServer:
    """``harness-ros model serve`` as a child process; use as a context manager.

    ``start`` blocks until the server answers (the model is loaded) and fills
    ``endpoint``; ``stop`` ends it (SIGINT, then SIGKILL).
    """

    model: str
    """``1.5b``, ``0.5b`` or a .gguf path (what ``--model`` of ``model serve`` takes)."""
    log: Path
    threads: int = DEFAULT_THREADS
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    install: bool = True
    """Install the runtime and the model first when they are missing."""
    env: Mapping[str, str] | None = None
    start_timeout_s: float = _START_TIMEOUT_S
    endpoint: Endpoint | None = None
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    """The key the child requires; hand it to clients in ``KEY_ENV``."""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    def command(self, ready_file: Path) -> list[str]:
        command = [
            sys.executable, "-m", "harness_ros.cli", "model", "serve", "--model", self.model,
            "--threads", str(self.threads), "--ctx", str(self.context_tokens),
            "--ready-file", str(ready_file), "--parent-pid", str(os.getpid()),
        ]  # fmt: skip
        if not self.install:
            command.append("--no-install")
        return command

    def start(self) -> Endpoint:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        ready_file = self.log.with_name(self.log.name + ".ready.json")
        ready_file.unlink(missing_ok=True)
        self._log_file = self.log.open("wb")
        self.process = subprocess.Popen(
            self.command(ready_file),
            env={**(self.env if self.env is not None else os.environ), KEY_ENV: self.api_key},
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout_s
        pause = threading.Event()
        # A first install downloads 0.5-1.1 GB: the deadline starts once it is done.
        while True:
            if ready_file.is_file():
                data = json.loads(ready_file.read_text(encoding="utf-8"))
                self.endpoint = Endpoint(**data)
                return self.endpoint
            if self.process.poll() is not None:
                tail = "\n".join(self.log.read_text("utf-8", errors="replace").splitlines()[-20:])
                self.stop()
                raise LocalModelError(
                    f"the local model server exited with code {self.process.returncode} before it "
                    f"was ready; last lines of {str(self.log)!r}:\n{tail}"
                )
            if _installing(self.log):
                deadline = time.monotonic() + self.start_timeout_s
            elif time.monotonic() > deadline:
                self.stop()
                raise LocalModelError(
                    f"the local model server was not ready after {self.start_timeout_s:g} s; "
                    f"see {str(self.log)!r}"
                )
            pause.wait(0.2)

    def stop(self) -> str:
        """Stop the child; says how ('stopped', 'killed', 'exited N' or 'not started')."""
        if self.process is None:
            return "not started"
        how = "stopped"
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(_STOP_WAIT_S)
                how = "killed"
            except KeyboardInterrupt:  # a second Ctrl-C: do not leave the server behind
                self.process.kill()
                self.process.wait(_STOP_WAIT_S)
                raise
        else:
            how = f"exited {self.process.returncode}"
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return how

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _installing(log: Path) -> bool:
    """Whether the child's log says it is still downloading or joining the model."""
    try:
        lines = log.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return False
    last = next((line for line in reversed(lines) if line.strip()), "")
    return last.startswith(("model: downloading", "  joined", "runtime: installing", "model: checking"))


def looks_like_path(model: str) -> bool:
    """Whether ``model`` names a file of the user's own rather than a catalog model: it holds
    a ``/`` (``./1.5b``, ``~/models/x``) or ends in ``.gguf``. Nothing on disk decides it."""
    return "/" in model or model.lower().endswith(".gguf")


def spec_or_path(model: str) -> tuple[LocalModelSpec | None, Path]:
    """(catalog entry, file) for ``1.5b``/``0.5b``, or (None, path) for a path (``looks_like_path``).

    A catalog name is always the catalog's pinned, sha256-checked file, whatever lies in the
    working folder: a file ``./1.5b`` is served only when written as a path."""
    from harness_ros.local_model.catalog import local_model_spec

    if looks_like_path(model):
        return None, Path(model).expanduser().resolve()
    spec = local_model_spec(model)
    return spec, spec.path
