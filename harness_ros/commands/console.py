"""``harness-ros console``: a live operator console in the browser for a running harness node.

    harness-ros console [--node /harness] [--port 8765] [--host 127.0.0.1 [--expose]]

Serves the console on 127.0.0.1 (loopback only) and prints its address with a fresh
token in the URL's fragment (``http://127.0.0.1:8765/#token=...``, like a notebook
server): open that link. With HARNESS_CONSOLE_TOKEN set, that token is used and not
printed. Every read and write of the console needs the token (sent by the page in a
header); the page shows the task, its events and what the model saw, and lets the
operator instruct, approve or deny, answer and cancel through the node's own topics.

On a remote robot, forward the port instead of exposing it:
``ssh -L 8765:127.0.0.1:8765 robot``, then open the printed link on your machine.
A non-loopback --host needs --expose (plain HTTP: anyone on that network who has the
token can drive the robot's tasks).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from harness_ros.errors import HarnessError

__all__ = ["TOKEN_ENV", "register"]

TOKEN_ENV = "HARNESS_CONSOLE_TOKEN"
DEFAULT_PORT = 8765


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "console",
        help="serve a live operator console for a running harness node in the browser",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--node", default="/harness", help="fully qualified harness node name")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free port)")
    parser.add_argument(
        "--expose",
        action="store_true",
        help="allow a non-loopback --host (the console then answers on that network)",
    )
    parser.set_defaults(handler=_handle)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _handle(args: argparse.Namespace) -> int:
    import uvicorn

    from harness_ros.console import ConsoleState, new_token
    from harness_ros.console.app import build_app
    from harness_ros.ros.console_client import ConsoleRosClient

    if not is_loopback(args.host) and not args.expose:
        print(
            f"error: --host {args.host} is not a loopback address: the console would answer on that "
            "network; add --expose if you mean it, or keep 127.0.0.1 and use SSH port forwarding "
            f"(ssh -L {args.port or DEFAULT_PORT}:127.0.0.1:{args.port or DEFAULT_PORT} robot)",
            file=sys.stderr,
        )
        return 2
    token = os.environ.get(TOKEN_ENV, "").strip()
    from_env = bool(token)
    if not from_env:
        token = new_token()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as err:
        sock.close()
        raise HarnessError(f"cannot listen on {args.host}:{args.port}: {err}") from None
    port = sock.getsockname()[1]
    state = ConsoleState(args.node)
    client = ConsoleRosClient(state, args.node, ros_args=args.ros_args)
    try:
        client.start()
        app = build_app(state, client, token)
        shown_host = f"[{args.host}]" if ":" in args.host else args.host
        link = f"http://{shown_host}:{port}/"
        if not is_loopback(args.host):
            print(
                f"warning: --expose: the console answers on {args.host}:{port} over plain HTTP: whoever "
                f"reaches it with the token sees {args.node}'s tasks, events and camera views and can "
                "start, revise and cancel tasks, approve or deny tool calls and answer questions",
                file=sys.stderr,
            )
        if from_env:
            print(f"console for {args.node}: {link} (token from {TOKEN_ENV})", flush=True)
        else:
            print(f"console for {args.node}: {link}#token={token}", flush=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        client.close()
        sock.close()
    return 0
