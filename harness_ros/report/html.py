"""Render a run as one self-contained HTML page.

No external resources: images are inlined as ``data:`` URIs, the CSS is inline, and
a Content-Security-Policy forbids scripts and every fetch except ``data:`` images.
Every text from the run (model text, tool results, evidence, memory entries) is
escaped with ``html.escape``: the page shows what a model or a tool wrote, it never
runs it. The same run folder always gives the same bytes (no clock, no absolute path).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any

from harness_ros.model.contracts import ProviderLookup
from harness_ros.model.settings import plugin_provider
from harness_ros.report.run import RunEvent, RunRecord, TurnRecord
from harness_ros.trajectory import ToolResult

__all__ = ["model_label", "render_html"]

_DIRECTIONS = ("forward", "left", "backward", "right")
_STATUS_CLASSES = frozenset({"completed", "failed", "aborted", "cancelled", "unfinished"})
# Mirrors RunLog.write_image's file naming, to pair each view with its saved image.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# Only plain image names inside the run folder are read: an events.jsonl naming
# "../elsewhere" must not pull other files into a page that may be shared.
_IMAGE_NAME = re.compile(r"^turn_\d+_[A-Za-z0-9_.-]+\.jpg$")
_CONTEXT_EVENTS = ("revision", "notes", "compaction")
_KNOWN_TURN_EVENTS = frozenset(
    {
        "turn",
        "observation",
        "model_response",
        "tool_call",
        "safety",
        "tool_feedback",
        "tool_result",
        "verdict",
        *_CONTEXT_EVENTS,
    }
)

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 1.5em;color:#1d1d1f}
h1{font-size:1.5em}h2{font-size:1.2em;margin:0 0 .4em}h3{font-size:1em;margin:.8em 0 .3em}
dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{font-weight:600}dd{margin:0}
section{border:1px solid #d0d0d7;border-radius:6px;padding:.8em 1em;margin:1em 0}
.views{display:flex;flex-wrap:wrap;gap:.8em;align-items:flex-start}figure{margin:0;max-width:100%}
figure img{display:block;max-width:100%;height:auto;border:1px solid #aaa}
figcaption{font-size:.85em;color:#444}.placeholder{padding:2em 1em;background:#eee;color:#666;width:10em}
.view-stale img{border:2px solid #c33}
pre{background:#f5f5f7;padding:.5em;overflow-x:auto;white-space:pre-wrap;margin:.3em 0}
.text{white-space:pre-wrap}.muted{color:#666}.badge{padding:0 .4em;border-radius:4px;font-size:.85em}
.ok,.status-completed,.safety-pass,.fresh{background:#dff3e3}
.bad,.status-failed,.status-aborted,.safety-block,.stale{background:#fbe0e0}
.safety-rewrite,.status-unfinished,.missing{background:#fff1cc}.status-cancelled,.status-other{background:#e6e6ea}
.outcome-succeeded{background:#dff3e3}.outcome-failed{background:#fbe0e0}.outcome-unverified{background:#fff1cc}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #d0d0d7;padding:.25em .5em;text-align:left;
vertical-align:top}blockquote{margin:.3em 0;padding-left:.8em;border-left:3px solid #bbb}
"""


# ---------------------------------------------------------------------- small helpers
def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _pre(value: Any) -> str:
    return f"<pre>{_e(value if isinstance(value, str) else _json(value))}</pre>"


_MAX_NUMBER = 1e15
"""Larger magnitudes (and NaN, Infinity) in an events file are shown as unknown: no
real duration, distance or age is that large, and formatting them must not crash."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) and abs(number) <= _MAX_NUMBER else None


def _metres(value: Any) -> str:
    number = _number(value)
    return "unknown" if number is None else f"{number:.2f} m"


def _seconds(value: Any) -> str:
    number = _number(value)
    if number is None:
        return "unknown"
    if number >= 60:
        minutes, rest = divmod(number, 60)
        return f"{int(minutes)} min {rest:.1f} s"
    return f"{number:.1f} s"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in _list(value) if isinstance(item, dict)]


def _badge(text: str, css: str) -> str:
    return f'<span class="badge {_e(css)}">{_e(text)}</span>'


def model_label(model: str, providers: ProviderLookup | None = None) -> str:
    """How the report names the model; a plugin's scripted provider is never passed off as a
    language model: its label comes first."""
    if not model:
        return "not recorded"
    provider = plugin_provider(model, providers)
    if provider is not None and not provider.language_model:
        return f"{provider.label} ({model})"
    return model


def _status_class(status: str) -> str:
    return f"status-{status}" if status in _STATUS_CLASSES else "status-other"


def _utc(timestamp: float | None) -> str:
    number = _number(timestamp)
    if number is None:
        return "unknown"
    try:
        return datetime.fromtimestamp(number, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):  # beyond the platform's calendar
        return "unknown"


_MAX_IMAGE_BYTES = 16 * 1024 * 1024


def _image_src(path: Path) -> str | None:
    """A data: URI for a saved image, or None when it is not a regular file or unreadable.

    A symlink (or FIFO, device, folder) named like an image is refused: the page may be
    shared, and must only ever carry the run's own images, not a file a link points at.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_IMAGE_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(_MAX_IMAGE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > _MAX_IMAGE_BYTES:
        return None
    mime = "image/png" if data.startswith(b"\x89PNG") else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


# ---------------------------------------------------------------------- observation
@dataclass(frozen=True)
class _Shot:
    """One image the model was sent, with what its caption says."""

    name: str
    filename: str | None
    freshness: str
    state: str
    """fresh, stale or missing (also the CSS class)."""
    width: Any = None
    height: Any = None


def _figure(folder: Path, shot: _Shot, turn: int) -> str:
    state = shot.state
    caption = (
        f"<figcaption><strong>{_e(shot.name)}</strong> · {_e(shot.freshness)} {_badge(state, state)}"
        "</figcaption>"
    )
    src = _image_src(folder / shot.filename) if shot.filename else None
    if src is None:
        why = f"image file {shot.filename} is missing" if shot.filename else "no image was sent"
        return f'<figure class="view view-{state}"><div class="placeholder">{_e(why)}</div>{caption}</figure>'
    dims = ""
    if isinstance(shot.width, int) and isinstance(shot.height, int) and shot.width > 0 and shot.height > 0:
        dims = f' width="{shot.width}" height="{shot.height}"'
    alt = f"{shot.name} view at turn {turn} ({shot.freshness})"
    return f'<figure class="view view-{state}"><img src="{src}" alt="{_e(alt)}"{dims}>{caption}</figure>'


def _view_state(view: dict[str, Any]) -> str:
    if view.get("missing") or view.get("age_s") is None:
        return "missing"
    return "stale" if view.get("stale") else "fresh"


def _views(folder: Path, turn: int, data: dict[str, Any]) -> str:
    if "images" in data:
        images = [name for name in _list(data["images"]) if isinstance(name, str) and _IMAGE_NAME.match(name)]
    else:  # an older or foreign run log: fall back to the files of this turn
        images = sorted(path.name for path in folder.glob(f"turn_{turn}_*.jpg"))
    unused = list(images)
    figures: list[str] = []
    for view in _dicts(data.get("views")):
        name = str(view.get("name") or "view")
        filename = f"turn_{turn}_{_UNSAFE.sub('_', name) or 'view'}.jpg"
        matched = filename if filename in unused else None
        if matched is not None:
            unused.remove(matched)
        freshness = str(view.get("freshness") or "freshness unknown")
        shot = _Shot(name, matched, freshness, _view_state(view), view.get("width"), view.get("height"))
        figures.append(_figure(folder, shot, turn))
    depth = raw if isinstance(raw := data.get("depth"), dict) else {}
    for filename in unused:  # images without a view: the depth preview
        name = filename.removeprefix(f"turn_{turn}_").removesuffix(".jpg")
        age = _number(depth.get("age_s"))
        freshness = "freshness unknown" if age is None else f"age {age:.2f} s"
        state = "stale" if depth.get("stale") else ("fresh" if age is not None else "missing")
        figures.append(_figure(folder, _Shot(name, filename, freshness, state), turn))
    if not figures:
        return '<p class="muted">No camera views were sent to the model at this turn.</p>'
    return f'<div class="views">{"".join(figures)}</div>'


def _clearance(data: dict[str, Any]) -> str:
    clearance = data.get("clearance")
    if not isinstance(clearance, dict):
        return "<p><strong>Clearance:</strong> not available (base motion is blocked without it)</p>"
    values = " · ".join(f"{direction} {_metres(clearance.get(direction))}" for direction in _DIRECTIONS)
    age = _number(clearance.get("age_s"))
    if age is None:
        freshness = _badge("missing", "missing")
    elif clearance.get("stale"):
        freshness = f"age {age:.2f} s {_badge('stale', 'stale')}"
    else:
        freshness = f"age {age:.2f} s {_badge('fresh', 'fresh')}"
    return f"<p><strong>Clearance from the footprint edge:</strong> {_e(values)} ({freshness})</p>"


def _depth(data: dict[str, Any]) -> str:
    depth = data.get("depth")
    if not isinstance(depth, dict):
        return ""
    rows = "".join(
        f"<tr><td>{_e(region.get('name'))}</td><td>{_metres(region.get('nearest_m'))}</td>"
        f"<td>{_metres(region.get('median_m'))}</td></tr>"
        for region in _dicts(depth.get("regions"))
    )
    age = _number(depth.get("age_s"))
    label = "missing" if age is None else f"age {age:.2f} s" + (" STALE" if depth.get("stale") else "")
    return (
        f"<details><summary>Depth by region ({_e(label)})</summary><table>"
        f"<tr><th>Region</th><th>Nearest</th><th>Median</th></tr>{rows}</table></details>"
    )


def _observation(folder: Path, turn: TurnRecord) -> str:
    events = turn.of("observation")
    if not events:
        return '<h3>Observation</h3><p class="muted">No observation was recorded at this turn.</p>'
    parts = ["<h3>What the model saw</h3>"]
    for event in events:
        data = event.data
        parts += [_views(folder, turn.number, data), _clearance(data), _depth(data)]
        notes = [str(note) for note in _list(data.get("notes")) if note]
        if notes:
            parts.append("<ul>" + "".join(f"<li>{_e(note)}</li>" for note in notes) + "</ul>")
    return "".join(parts)


# ---------------------------------------------------------------------- decision and call
def _decision(turn: TurnRecord) -> str:
    events = turn.of("model_response")
    if not events:
        return ""
    parts = ["<h3>Decision</h3>"]
    for event in events:
        text = str(event.data.get("text") or "").strip()
        calls = _dicts(event.data.get("tool_calls"))
        if text:
            label = "Model text" if calls else "Model text (no tool call)"
            parts.append(f'<p><strong>{label}:</strong></p><p class="text">{_e(text)}</p>')
        for call in calls:
            # A call the model wrote as JSON in its text, recovered by the adapter: never native.
            how = " (recovered from text)" if call.get("recovered_from_text") else ""
            parts.append(f"<p>Tool call <code>{_e(call.get('name'))}</code>{how} with arguments:</p>")
            parts.append(_pre(call.get("arguments", {})))
        if not text and not calls:
            parts.append('<p class="muted">The model replied with neither text nor a tool call.</p>')
        parts.append(_usage_line(event.data.get("usage")))
    return "".join(parts)


def _usage_line(usage: Any) -> str:
    """Tokens of one decision: prompt (of which cached), completion, images sent."""
    if not isinstance(usage, dict):
        return ""
    count = {key: int(value) if _number(value) is not None else 0 for key, value in usage.items()}
    if not any(count.values()):
        return ""
    prompt, cached = count.get("prompt_tokens", 0), count.get("cached_prompt_tokens", 0)
    text = f"Tokens: {prompt:,} prompt"
    if cached:
        share = f" ({100 * cached / prompt:.0f}%)" if prompt else ""
        text += f", {cached:,} of them cached{share}"
    if count.get("cache_write_tokens"):
        text += f", {count['cache_write_tokens']:,} written to the cache"
    text += f"; {count.get('completion_tokens', 0):,} completion; {count.get('images', 0)} images sent"
    return f'<p class="muted tokens">{_e(text)}</p>'


def _safety(turn: TurnRecord) -> str:
    events = turn.of("safety")
    if not events:
        return ""
    items: list[str] = []
    for event in events:
        data = event.data
        action = str(data.get("action") or "unknown")
        css = f"safety-{action}" if action in {"pass", "rewrite", "block"} else "status-other"
        reason = str(data.get("reason") or "")
        item = (
            f"<li>{_badge(action, css)} <code>{_e(data.get('hook') or 'hook')}</code> on "
            f"<code>{_e(data.get('tool'))}</code>" + (f": {_e(reason)}" if reason else "")
        )
        if action == "rewrite" and "arguments" in data:
            item += "<br>rewritten arguments:" + _pre(data["arguments"])
        items.append(item + "</li>")
    return "<h3>Safety decisions</h3><ul>" + "".join(items) + "</ul>"


def _feedback(turn: TurnRecord) -> str:
    events = turn.of("tool_feedback")
    if not events:
        return ""
    by_tool: dict[str, list[Any]] = {}
    for event in events:
        by_tool.setdefault(str(event.data.get("tool") or "tool"), []).append(event.data.get("feedback"))
    items = []
    for tool, updates in by_tool.items():
        last = json.dumps(updates[-1], sort_keys=True, ensure_ascii=False, default=str)
        count = f"{len(updates)} update" + ("s" if len(updates) != 1 else "")
        items.append(f"<li><code>{_e(tool)}</code>: {count}; last: <code>{_e(last)}</code></li>")
    return "<h3>Tool feedback</h3><ul>" + "".join(items) + "</ul>"


def _result(data: dict[str, Any]) -> str:
    result = ToolResult.from_json(data.get("result"))
    tool = _e(data.get("tool") or "tool")
    ok = result.succeeded
    head = f"<p><code>{tool}</code> {_badge('success' if ok else 'failure', 'ok' if ok else 'bad')}"
    blocked_by = result.data.get("blocked_by")
    if data.get("refused"):
        head += " refused: only one tool call runs per turn"
    elif data.get("malformed"):
        head += " malformed call, not executed"
    elif blocked_by:
        head += f" blocked by <code>{_e(blocked_by)}</code>"
    elapsed = _number(data.get("elapsed_s"))
    if elapsed is not None:
        head += f' <span class="muted">({elapsed:.2f} s)</span>'
    head += "</p>"
    if not ok:
        head += f'<p class="text"><strong>Reason:</strong> {_e(result.reason or "none given")}</p>'
    # The verdict has its own block below; the rest of the envelope is shown as sent to the model.
    rest = {k: v for k, v in result.data.items() if k != "verdict"}
    return head + (_pre(rest) if rest else "")


def _results(turn: TurnRecord) -> str:
    events = turn.of("tool_result")
    if not events:
        return ""
    return "<h3>Tool result</h3>" + "".join(_result(event.data) for event in events)


def _verdict(data: dict[str, Any]) -> str:
    verdict = raw if isinstance(raw := data.get("verdict"), dict) else {}
    status = str(verdict.get("status") or "unknown")
    css = {"success": "ok", "failure": "bad"}.get(status, "missing")
    run_id = verdict.get("run_id") or data.get("run_id") or "?"
    parts = [
        f"<p><code>{_e(data.get('tool') or 'tool')}</code> run <code>{_e(run_id)}</code>: "
        f"{_badge(status, css)}</p>"
    ]
    if verdict.get("failure_reason"):
        parts.append(f'<p class="text"><strong>Failure reason:</strong> {_e(verdict["failure_reason"])}</p>')
    evidence = str(verdict.get("evidence") or "").strip()
    parts.append(
        f'<blockquote class="text"><strong>Evidence:</strong> {_e(evidence)}</blockquote>'
        if evidence
        else '<p class="muted">No evidence given.</p>'
    )
    return "".join(parts)


def _verdicts(turn: TurnRecord) -> str:
    events = turn.of("verdict")
    if not events:
        return ""
    return "<h3>Evaluator verdict</h3>" + "".join(_verdict(event.data) for event in events)


def _context(turn: TurnRecord) -> str:
    items: list[str] = []
    for event in turn.of(*_CONTEXT_EVENTS):
        data = event.data
        if event.type == "revision":
            items.append(
                f"<li>Instruction revised: <span class='text'>{_e(data.get('instruction'))}</span></li>"
            )
        elif event.type == "notes":
            sent = "Task notes sent, what changed" if data.get("update") is True else "Task notes sent"
            items.append(
                f"<li><details><summary>{sent} ({_e(data.get('chars', '?'))} characters)</summary>"
                f"{_pre(str(data.get('task_notes') or ''))}</details></li>"
            )
        else:
            items.append(f"<li><details><summary>Context compacted</summary>{_pre(data)}</details></li>")
    return "<h3>Context</h3><ul>" + "".join(items) + "</ul>" if items else ""


def _other(events: Iterable[RunEvent]) -> str:
    items = [f"<li><code>{_e(event.type)}</code>{_pre(event.data)}</li>" for event in events]
    return "<h3>Other events</h3><ul>" + "".join(items) + "</ul>" if items else ""


def _turn(folder: Path, turn: TurnRecord) -> str:
    started = turn.of("turn")
    elapsed = _number(started[0].data.get("elapsed_s")) if started else None
    when = f' <span class="muted">(+{elapsed:.1f} s)</span>' if elapsed is not None else ""
    body = [
        _context(turn),
        _observation(folder, turn),
        _decision(turn),
        _safety(turn),
        _feedback(turn),
        _results(turn),
        _verdicts(turn),
        _other(event for event in turn.events if event.type not in _KNOWN_TURN_EVENTS),
    ]
    heading = f"<h2>Turn {turn.number}{when}</h2>"
    return f'<section class="turn" id="turn-{turn.number}">{heading}{"".join(body)}</section>'


# ---------------------------------------------------------------------- header, end, memory
def _header(record: RunRecord, providers: ProviderLookup | None) -> str:
    status = record.status
    started = record.started or {}
    turns = str(record.turn_count)
    if isinstance(started.get("max_turns"), int):
        turns += f" (limit {started['max_turns']})"
    tools = ", ".join(str(tool) for tool in _list(started.get("tools"))) or "not recorded"
    rows: Sequence[tuple[str, str]] = (
        ("Instruction", f'<span class="text">{_e(record.instruction or "not recorded")}</span>'),
        ("Outcome", _outcome_badge(record.outcome)),
        ("Status", _badge(status, _status_class(status))),
        ("Model", _e(model_label(record.model, providers))),
        ("Duration", _e(_seconds(record.duration_s))),
        ("Turns", _e(turns)),
        ("Started", _e(_utc(record.first_time))),
        ("Tools", _e(tools)),
    )
    items = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
    return (
        f"<header><h1>Task <code>{_e(record.task_id)}</code>: {_e(_title_state(record))}</h1>"
        f'<dl class="summary">{items}</dl></header>'
    )


def _outcome_badge(outcome: str | None) -> str:
    if outcome is None:
        return _badge("not recorded", "missing")
    return _badge(outcome, f"outcome-{outcome}")


def _title_state(record: RunRecord) -> str:
    # The outcome leads: "completed" alone reads as success for a failed fetch.
    outcome, status = record.outcome, record.status
    return f"{outcome} ({status})" if outcome is not None and outcome != status else status


def _outcome_basis(done: dict[str, Any]) -> str:
    claim = done.get("claim")
    said = f"the model claimed {claim}" if isinstance(claim, str) and claim else "the model made no claim"
    verdict = done.get("goal_verdict")
    if not isinstance(verdict, dict):
        return f"({said}; no evaluator judged the goal)"
    why = verdict.get("failure_reason") or verdict.get("evidence") or ""
    judged = f"the evaluator's goal check: {verdict.get('status')}" + (f", {why}" if why else "")
    return f"({said}; {judged})"


def _final(record: RunRecord) -> str:
    parts = ['<section id="final"><h2>Final report</h2>']
    done = record.done
    if done is not None:
        status = str(done.get("status") or "unknown")
        parts.append(f"<p>Outcome: {_outcome_badge(record.outcome)} {_e(_outcome_basis(done))}</p>")
        parts.append(f"<p>Status: {_badge(status, _status_class(status))}</p>")
        if done.get("reason"):
            parts.append(f'<p class="text"><strong>Reason:</strong> {_e(done["reason"])}</p>')
        report = str(done.get("report") or "").strip()
        parts.append(f'<p class="text">{_e(report)}</p>' if report else '<p class="muted">No report.</p>')
    elif record.report_md is not None:
        parts.append(_pre(record.report_md))
    else:
        parts.append(
            '<p class="muted">The task did not finish: no <code>done</code> event and no report.md '
            "(the run may have been interrupted).</p>"
        )
    return "".join(parts) + "</section>"


def _where(decision: dict[str, Any]) -> str:
    if decision.get("kind") == "memory":
        return f"MEMORY.md · {decision.get('section') or '?'}"
    return f"ledger {decision.get('tool') or '?'} · {decision.get('outcome') or '?'}"


def _why_accepted(decision: dict[str, Any]) -> str:
    """FileMemory's acceptance rules in words (an accepted entry records only ``accepted``)."""
    tool = decision.get("tool") or "the tool"
    if decision.get("kind") == "memory":
        if decision.get("section") in {"Preferences", "Conventions"}:
            source = decision.get("source")
            quoted = f" (source: \u201c{source}\u201d)" if source else ""
            return (
                "passed the confidence, transient and poisoning checks, and came from the operator's "
                f"instruction or a revision{quoted}"
            )
        return "passed the confidence, transient and poisoning checks"
    if decision.get("outcome") == "failure":
        return f"a failure of {tool} was followed by an evaluator-confirmed success of {tool}"
    return f"an evaluator confirmed a success of {tool}"


def _rule_cell(decision: dict[str, Any]) -> str:
    rule = str(decision.get("rule") or "")
    cell = f"<code>{_e(rule)}</code>"
    if decision.get("accepted") is True and rule == "accepted":
        cell += f": {_e(_why_accepted(decision))}"
    return cell


def _decision_table(decisions: list[dict[str, Any]], rule_header: str) -> str:
    rows = "".join(
        f"<tr><td>{_e(_where(d))}</td><td class='text'>{_e(d.get('text') or '')}</td>"
        f"<td>{_e(d.get('confidence', ''))}</td><td>{_rule_cell(d)}</td></tr>"
        for d in decisions
    )
    return (
        f"<table><tr><th>Where</th><th>Entry</th><th>Confidence</th><th>{rule_header}</th></tr>{rows}</table>"
    )


def _memory(record: RunRecord) -> str:
    parts = ['<section id="memory"><h2>Memory changes</h2>']
    data = record.consolidation
    if data is None:
        parts.append('<p class="muted">No memory consolidation was recorded.</p>')
        return "".join(parts) + "</section>"
    if data.get("skipped"):
        parts.append(f"<p>Consolidation skipped: {_e(data.get('reason') or 'no reason given')}</p>")
    if data.get("error"):
        parts.append(
            f'<p class="text">{_badge("error", "bad")} Consolidation failed, nothing written: '
            f"{_e(data['error'])}</p>"
        )
    decisions = _dicts(data.get("decisions"))
    accepted = [d for d in decisions if d.get("accepted") is True]
    held = [d for d in decisions if d.get("accepted") is not True and d.get("held") is True]
    rejected = [d for d in decisions if d.get("accepted") is not True and d.get("held") is not True]
    if decisions:
        parts.append(f"<h3>Accepted ({len(accepted)})</h3>")
        parts.append(
            _decision_table(accepted, "Accepted by rule") if accepted else '<p class="muted">None.</p>'
        )
        if held:
            parts.append(f"<h3>Held for review ({len(held)})</h3>")
            parts.append(
                "<p>The memory guard could not read these with confidence: they wait for the "
                "operator (<code>harness-ros memory pending</code>).</p>"
            )
            parts.append(_decision_table(held, "Held because"))
        parts.append(f"<h3>Rejected ({len(rejected)})</h3>")
        parts.append(
            _decision_table(rejected, "Rejected by rule") if rejected else '<p class="muted">None.</p>'
        )
    elif not data.get("skipped") and not data.get("error"):
        parts.append('<p class="muted">No entries were proposed.</p>')
    if _number(data.get("pending")):
        parts.append(f"<p>Trajectories waiting for a consolidation retry: {_e(data['pending'])}</p>")
    parts.append(_world_changes(data.get("world")))
    return "".join(parts) + "</section>"


def _world_changes(world: Any) -> str:
    """What the task's evidence changed in WORLD.md (issue 48), one row per change."""
    if not isinstance(world, dict):
        return ""
    if world.get("error"):
        return f'<h3>World memory</h3><p class="text">{_badge("error", "bad")} {_e(world["error"])}</p>'
    changes = _dicts(world.get("changes"))
    if not changes:
        return '<h3>World memory</h3><p class="muted">No change.</p>'
    rows = "".join(
        f"<tr><td>{_e(c.get('name'))}</td><td>{_e(c.get('change'))}</td><td>{_e(c.get('where'))}</td>"
        f"<td>{_e(c.get('state'))}</td><td>{_e(c.get('evidence'))}</td></tr>"
        for c in changes
    )
    return (
        f"<h3>World memory ({len(changes)} change(s))</h3>"
        "<table><tr><th>Name</th><th>Change</th><th>Where</th><th>State</th><th>Evidence</th></tr>"
        f"{rows}</table>"
    )


def _memory_notices(events: Sequence[RunEvent]) -> str:
    """What memory could not give the model in full at task start (memory_notice events)."""
    items = "".join(
        f"<li>{_badge(str(event.data.get('notice') or 'notice'), 'missing')} "
        f"<span class='text'>{_e(event.data.get('message') or _json(event.data))}</span></li>"
        for event in events
    )
    return f'<section id="memory-notices"><h2>Memory warnings at task start</h2><ul>{items}</ul></section>'


def render_html(record: RunRecord, providers: ProviderLookup | None = None) -> str:
    """The report page for ``record``; ``providers`` (``harness_ros.plugins.model_provider``)
    names a plugin's scripted model for what it is."""
    title = f"Task {record.task_id}: {_title_state(record)}"
    body = [_header(record, providers)]
    notices = [event for event in record.loose if event.type == "memory_notice"]
    if notices:
        body.append(_memory_notices(notices))
    others = [event for event in record.loose if event.type != "memory_notice"]
    if others:
        body.append(f"<section>{_other(others)}</section>")
    body.extend(_turn(record.folder, turn) for turn in record.turns)
    if not record.turns:
        body.append('<section><p class="muted">The task ended before its first turn.</p></section>')
    body += [_final(record), _memory(record)]
    footer = (
        f"Generated by <code>harness-ros report</code> from run folder <code>{_e(record.folder.name)}</code>."
    )
    if record.skipped_lines:
        footer += f" {record.skipped_lines} unreadable line(s) of events.jsonl were skipped."
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + f'\n<footer class="muted">{footer}</footer>\n</body>\n</html>\n'
    )
