"""Tool calls that a model wrote into its text instead of the API's ``tool_calls``.

Small local models (Qwen2.5 through llama.cpp, among others) often answer with the call
as JSON in the message content, in one of these forms:

- a bare JSON line: ``{"name": "navigate_to", "arguments": {"target": "table"}}``;
- a Markdown fence: a json code block holding that object;
- Hermes/Qwen tags: ``<tool_call>{...}</tool_call>`` (what llama.cpp parses, when the
  model writes them correctly);
- the doubled braces of a chat-template example it copied: ``{{"name": ..., "arguments": {{...}}}}``.

``recover_text_calls`` turns such a span into a ``ToolCall`` only when all of these hold,
so that prose, echoed tool results and invented tools stay text:

- the object stands on its own lines (or fills a tag or a fence), never inside a sentence;
- its keys are ``name`` and ``arguments`` (``parameters`` is read as an alias), nothing else;
- ``name`` is one of the tools offered in this request;
- ``arguments`` is an object (or a JSON string holding one) that validates against that
  tool's parameter schema.

Text inside ``<tool_response>`` tags (a model echoing the previous result) is never read,
nor text inside a reasoning block (``<think>``, ``<thinking>``, ``<reasoning>``,
``<reflection>`` and the like, ``REASONING_TAGS``): there a model weighs calls it may
reject ("drive to stairs_top? no, ask the operator"), so a call written there is never
run. An opening tag never closed runs to the end of the reply; a closing tag with no
opening one (chat templates that put ``<think>`` in the prompt) ends a block that began
at the start of the reply.
Every recovered call carries ``recovered_from_text=True``. The harness executes at most
the first call of a reply, as it does for native calls; the others get a refusal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from harness_ros.model.contracts import ToolCall

__all__ = [
    "REASONING_TAGS",
    "TextCallProblem",
    "TextCallProblemKind",
    "TextCallRecovery",
    "blank_reasoning",
    "not_offered_name",
    "recover_text_calls",
]

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_ECHOED_RESULT = re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*(?:json|JSON|tool_call)?[ \t]*\n(.*?)```", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters")
REASONING_TAGS = (
    "think",
    "thinking",
    "thought",
    "thoughts",
    "reason",
    "reasoning",
    "reflect",
    "reflection",
    "analysis",
    "scratchpad",
    "inner_monologue",
)
"""Tags whose content is a model's reasoning, never a call it made (matched in any case)."""
_REASONING_TAG = re.compile(r"<(/?)\s*(" + "|".join(REASONING_TAGS) + r")\b[^<>]{0,200}>", re.IGNORECASE)
_MAX_TEXT_CHARS = 200_000
"""Longer replies are not scanned (no model writes a call that long)."""


class TextCallProblemKind(str, Enum):
    """Why a call-shaped span of a reply was left as text."""

    ARGUMENTS_NOT_OBJECT = "arguments_not_object"
    NOT_OFFERED = "not_offered"
    """The name is no offered tool (a skill's name, a tool of another robot)."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments do not validate against the tool's schema (``detail`` says where)."""
    OTHER = "other"
    """A problem read back from a recording that kept only its words: no behaviour reads it."""


def _render(kind: TextCallProblemKind, tool: str, detail: str, offered: tuple[str, ...]) -> str:
    if kind is TextCallProblemKind.ARGUMENTS_NOT_OBJECT:
        return f"{tool!r}: arguments are not a JSON object"
    if kind is TextCallProblemKind.NOT_OFFERED:
        return f"{tool!r} is not an offered tool (offered: {', '.join(offered) or 'none'})"
    if kind is TextCallProblemKind.INVALID_ARGUMENTS:
        return f"{tool!r}: invalid arguments: {detail}"
    return detail


class TextCallProblem(str):
    """One text-call problem: its ``kind`` and fields, and (as the string itself) its English
    for the model, rendered from them. The harness decides from the fields, never the words."""

    kind: TextCallProblemKind
    tool: str
    detail: str
    offered: tuple[str, ...]
    render: ClassVar[Callable[[TextCallProblemKind, str, str, tuple[str, ...]], str]] = staticmethod(_render)

    def __new__(
        cls, kind: TextCallProblemKind, tool: str = "", detail: str = "", offered: Sequence[str] = ()
    ) -> TextCallProblem:
        problem = super().__new__(cls, cls.render(kind, tool, detail, tuple(offered)))
        problem.kind, problem.tool, problem.detail, problem.offered = kind, tool, detail, tuple(offered)
        return problem

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "tool": self.tool,
            "detail": self.detail,
            "offered": list(self.offered),
        }

    @classmethod
    def from_json(cls, raw: Any) -> TextCallProblem:
        """A recorded problem: its structured form, or (an older recording) its words only."""
        if isinstance(raw, dict):
            try:
                kind = TextCallProblemKind(raw.get("kind"))
            except ValueError:
                kind = TextCallProblemKind.OTHER
            offered = raw.get("offered")
            return cls(
                kind,
                str(raw.get("tool") or ""),
                str(raw.get("detail") or ""),
                [str(name) for name in offered] if isinstance(offered, list) else (),
            )
        return cls(TextCallProblemKind.OTHER, detail=str(raw))


def not_offered_name(problem: str) -> str | None:
    """The tool name of a text-call problem whose call names no offered tool, else None
    (read from its kind and fields; a problem known only by its words names none)."""
    if isinstance(problem, TextCallProblem) and problem.kind is TextCallProblemKind.NOT_OFFERED:
        return problem.tool
    return None


@dataclass(frozen=True)
class TextCallRecovery:
    """What ``recover_text_calls`` found in one reply's text."""

    calls: tuple[ToolCall, ...] = ()
    """Valid calls, in the order they were written."""
    text: str | None = None
    """The text without the recovered spans (None when nothing else is left)."""
    problems: tuple[TextCallProblem, ...] = ()
    """Why call-shaped spans were left as text (unknown tool, invalid arguments)."""


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    body: str


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the ``{...}`` object starting at ``start`` (string-literal aware)."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _line_objects(text: str, offset: int, limit: int) -> list[_Span]:
    """Objects in ``text[offset:limit]`` that start a line and end one (prose around them on
    the same line disqualifies them)."""
    spans: list[_Span] = []
    position = offset
    while position < limit:
        line_end = text.find("\n", position, limit)
        line_end = limit if line_end == -1 else line_end
        stripped_start = position + (len(text[position:line_end]) - len(text[position:line_end].lstrip()))
        if stripped_start < line_end and text[stripped_start] == "{":
            end = _balanced_end(text[:limit], stripped_start)
            if end is not None:
                after = text.find("\n", end, limit)
                after = limit if after == -1 else after
                if not text[end:after].strip():
                    spans.append(_Span(stripped_start, end, text[stripped_start:end]))
                    position = after + 1
                    continue
        position = line_end + 1
    return spans


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with every match of ``pattern`` replaced by spaces (positions kept)."""
    return pattern.sub(lambda match: " " * len(match.group(0)), text)


def blank_reasoning(text: str) -> str:
    """``text`` with every reasoning block replaced by spaces (positions kept).

    Blocks nest by depth whatever their tag names; an opening tag never closed runs to the
    end, and a closing tag at depth 0 ends a block that began where the last one ended (the
    start of the reply when there was none)."""
    spans: list[tuple[int, int]] = []
    depth = 0
    start = 0
    for match in _REASONING_TAG.finditer(text):
        if match.group(0).endswith("/>"):  # an empty block (<think/>): nothing in it
            continue
        if not match.group(1):  # an opening tag
            if depth == 0:
                start = match.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, match.end()))
                start = match.end()
        else:  # a closing tag with no opening one: all before it (since the last block) was reasoning
            spans.append((start, match.end()))
            start = match.end()
    if depth > 0:
        spans.append((start, len(text)))
    for begin, end in spans:
        text = text[:begin] + " " * (end - begin) + text[end:]
    return text


def _candidates(text: str) -> list[tuple[_Span, _Span]]:
    """(span to remove, object span) pairs in text order: tagged, fenced, then bare lines."""
    scan = _blank(blank_reasoning(text), _ECHOED_RESULT)
    found: list[tuple[_Span, _Span]] = []
    taken: list[tuple[int, int]] = []
    for pattern in (_TAGGED, _FENCED):
        for match in pattern.finditer(scan):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            taken.append((match.start(), match.end()))
            outer = _Span(match.start(), match.end(), match.group(0))
            objects = _line_objects(scan, match.start(1), match.end(1))
            found.extend((outer if len(objects) == 1 else inner, inner) for inner in objects)
    # Bare lines: everything outside tags and fences.
    bare = scan
    for start, end in taken:
        bare = bare[:start] + " " * (end - start) + bare[end:]
    found.extend((span, span) for span in _line_objects(bare, 0, len(bare)))
    found.sort(key=lambda pair: pair[1].start)
    return found


def _load(body: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        pass
    if body.startswith("{{"):
        # The chat template's example with doubled braces, copied verbatim.
        try:
            return json.loads(body.replace("{{", "{").replace("}}", "}"))
        except (ValueError, RecursionError):
            return None
    return None


def _schemas(tools: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            schemas[function["name"]] = parameters if isinstance(parameters, dict) else {"type": "object"}
    return schemas


def _schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    try:
        validator = validator_for(schema, default=Draft202012Validator)(schema)
        error = next(iter(validator.iter_errors(arguments)), None)
    except Exception as err:  # noqa: BLE001 - an unusable schema: nothing can be recovered against it
        return f"cannot be validated ({type(err).__name__})"
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path) or "<arguments>"
    return f"{where}: {error.message[:200]}"


def _as_call(
    value: Any, schemas: dict[str, dict[str, Any]]
) -> tuple[str, dict[str, Any]] | TextCallProblem | None:
    """(name, arguments) of a valid call, the problem of a call-shaped object that is not
    valid, or None for an object that is no call at all (data, an echoed result)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    present = [key for key in _ARGUMENT_KEYS if key in value]
    if set(value) - {"name", *_ARGUMENT_KEYS} or len(present) > 1:
        return None
    name = value["name"]
    arguments: Any = value[present[0]] if present else {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return TextCallProblem(TextCallProblemKind.ARGUMENTS_NOT_OBJECT, name)
    if not isinstance(arguments, dict):
        return TextCallProblem(TextCallProblemKind.ARGUMENTS_NOT_OBJECT, name)
    schema = schemas.get(name)
    if schema is None:
        return TextCallProblem(TextCallProblemKind.NOT_OFFERED, name, offered=sorted(schemas))
    problem = _schema_problem(schema, arguments)
    if problem is not None:
        return TextCallProblem(TextCallProblemKind.INVALID_ARGUMENTS, name, problem)
    return name, arguments


def recover_text_calls(text: str | None, tools: Sequence[dict[str, Any]] | None) -> TextCallRecovery:
    """The valid tool calls written in ``text`` (see the module docstring for the rules)."""
    if not text or not tools or len(text) > _MAX_TEXT_CHARS:
        return TextCallRecovery(text=text)
    schemas = _schemas(tools)
    calls: list[ToolCall] = []
    problems: list[TextCallProblem] = []
    removed: list[_Span] = []
    for outer, inner in _candidates(text):
        verdict = _as_call(_load(inner.body), schemas)
        if verdict is None:
            continue
        if isinstance(verdict, TextCallProblem):
            problems.append(verdict)
            continue
        name, arguments = verdict
        arguments_json = json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(f"text_call_{len(calls)}", name, arguments_json, arguments, True))
        removed.append(outer)
    if not calls:
        return TextCallRecovery(text=text, problems=tuple(problems))
    rest = text
    for span in sorted(removed, key=lambda span: span.start, reverse=True):
        rest = rest[: span.start] + rest[span.end :]
    remaining = "\n".join(line for line in rest.splitlines() if line.strip()).strip()
    return TextCallRecovery(calls=tuple(calls), text=remaining or None, problems=tuple(problems))
