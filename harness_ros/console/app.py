"""The console's web application (Starlette, served by uvicorn).

Routes:

- ``GET /``: the shell page, with no data in it (anyone who can reach the port may load
  it; it can read nothing without the token). ``GET /static/console.js`` and
  ``/static/console.css``: the page's script and style, as files (the Content-Security-
  Policy allows no inline script).
- ``GET /api/state``: everything at once (``ConsoleState.snapshot``).
- ``GET /api/stream``: server-sent events (``text/event-stream``): the snapshot, then one
  ``data:`` line per update. The page reads it with ``fetch()`` (an ``EventSource`` cannot
  send the token header).
- ``GET /api/view/<name>``: the latest JPEG the model was shown for that view.
- ``POST /api/instruction`` ``{"text"}``, ``/api/revise`` ``{"task_id", "text"}``,
  ``/api/cancel`` ``{"task_id"}``, ``/api/approval`` ``{"request_id", "hash",
  "approved"}``, ``/api/answer`` ``{"question_id", "text"}``.

Every ``/api`` request needs the token in a header, ``Authorization: Bearer <token>`` or
``X-Harness-Token: <token>``. A token in the query string is refused even with a good
header (it would end up in logs and browser history); a cookie is never read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness_ros.console.contracts import (
    MAX_TEXT_CHARS,
    ConsoleBackend,
    ConsoleRefusal,
    ConsoleState,
    token_matches,
)

__all__ = ["CONTENT_SECURITY_POLICY", "MAX_BODY_BYTES", "build_app", "presented_token"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
MAX_BODY_BYTES = 16_384
HEARTBEAT_S = 15.0
_STATIC = {"console.js": "text/javascript", "console.css": "text/css"}
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

Handler = Callable[[Request], Awaitable[Response]]


def presented_token(request: Request) -> str | None:
    """The token a request presents in a header (``Authorization: Bearer`` or ``X-Harness-Token``)."""
    direct = request.headers.get("x-harness-token")
    if direct:
        return direct.strip()
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def _static_file(name: str) -> bytes:
    return (resources.files("harness_ros.console") / "static" / name).read_bytes()


def _refused(reason: str, status: int) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status, headers=_SECURITY_HEADERS)


def build_app(state: ConsoleState, backend: ConsoleBackend, token: str) -> Starlette:
    """The console application for one node's ``state``, acting through ``backend``."""
    if not token:
        raise ValueError("the console needs a non-empty token")

    def guarded(handler: Handler) -> Handler:
        async def checked(request: Request) -> Response:
            if any(key.lower().endswith("token") for key in request.query_params):
                return _refused("a token in the query string is refused: send it in a header", 401)
            if not token_matches(presented_token(request), token):
                return _refused("this needs the console's token in a header (Authorization: Bearer ...)", 401)
            try:
                return await handler(request)
            except ConsoleRefusal as refusal:
                return _refused(refusal.reason, refusal.status)

        return checked

    async def body_of(request: Request, *fields: str) -> dict[str, Any]:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise ConsoleRefusal(f"request body over {MAX_BODY_BYTES} bytes", 413)
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, RecursionError) as err:
            raise ConsoleRefusal(f"request body is not JSON: {err}", 400) from None
        if not isinstance(body, dict):
            raise ConsoleRefusal("request body must be a JSON object", 400)
        for name in fields:
            value = body.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ConsoleRefusal(f"field {name!r} must be a non-empty string", 400)
            if len(value) > MAX_TEXT_CHARS:
                raise ConsoleRefusal(f"field {name!r} is over {MAX_TEXT_CHARS} characters", 400)
        return body

    def ok(**extra: Any) -> JSONResponse:
        return JSONResponse({"ok": True, **extra}, headers=_SECURITY_HEADERS)

    async def page(_request: Request) -> Response:
        return Response(_static_file("console.html"), media_type="text/html", headers=_SECURITY_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _refused("not found", 404)
        return Response(_static_file(name), media_type=_STATIC[name], headers=_SECURITY_HEADERS)

    async def snapshot(_request: Request) -> Response:
        return JSONResponse(state.snapshot(), headers=_SECURITY_HEADERS)

    async def stream(request: Request) -> Response:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def push(update: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, update)

        first = state.subscribe(push)

        async def lines() -> AsyncIterator[str]:
            try:
                yield f"data: {json.dumps(first, default=str)}\n\n"
                while True:
                    try:
                        update = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
                    except asyncio.TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    yield f"data: {json.dumps(update, default=str)}\n\n"
            finally:
                state.unsubscribe(push)

        headers = dict(_SECURITY_HEADERS, **{"X-Accel-Buffering": "no"})
        return StreamingResponse(lines(), media_type="text/event-stream", headers=headers)

    async def view(request: Request) -> Response:
        found = state.view(request.path_params["name"])
        if found is None:
            raise ConsoleRefusal("no such view yet", 404)
        return Response(found.jpeg, media_type="image/jpeg", headers=_SECURITY_HEADERS)

    async def instruction(request: Request) -> Response:
        body = await body_of(request, "text")
        task_id = await run_in_threadpool(backend.send_instruction, body["text"].strip())
        return ok(task_id=task_id)

    async def revise(request: Request) -> Response:
        body = await body_of(request, "task_id", "text")
        state.check_running(body["task_id"])
        await run_in_threadpool(backend.revise, body["task_id"], body["text"].strip())
        return ok()

    async def cancel(request: Request) -> Response:
        body = await body_of(request, "task_id")
        state.check_running(body["task_id"])
        await run_in_threadpool(backend.cancel, body["task_id"], "cancelled by the operator (console)")
        return ok()

    async def approval(request: Request) -> Response:
        body = await body_of(request, "request_id", "hash")
        approved = body.get("approved")
        if not isinstance(approved, bool):
            raise ConsoleRefusal("field 'approved' must be true or false", 400)
        state.check_approval(body["request_id"], body["hash"])
        await run_in_threadpool(backend.decide, body["request_id"], approved)
        return ok()

    async def answer(request: Request) -> Response:
        body = await body_of(request, "question_id", "text")
        state.check_question(body["question_id"])
        await run_in_threadpool(backend.answer, body["question_id"], body["text"].strip())
        return ok()

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/state", guarded(snapshot)),
        Route("/api/stream", guarded(stream)),
        Route("/api/view/{name}", guarded(view)),
        Route("/api/instruction", guarded(instruction), methods=["POST"]),
        Route("/api/revise", guarded(revise), methods=["POST"]),
        Route("/api/cancel", guarded(cancel), methods=["POST"]),
        Route("/api/approval", guarded(approval), methods=["POST"]),
        Route("/api/answer", guarded(answer), methods=["POST"]),
    ]
    return Starlette(routes=routes)
