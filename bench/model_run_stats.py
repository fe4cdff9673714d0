"""What a model did in recorded tasks: calls, recoveries, reminders, outcome, decision times.

Reads the ``events.jsonl`` of each task's run folder (a demo or eval work folder, a
``runs/`` folder, or task folders) and prints one row per task:

    .venv/bin/python bench/model_run_stats.py ~/.ros/harness_ros/demo/<timestamp>
    .venv/bin/python bench/model_run_stats.py runs/task-1 runs/task-2 --json

A decision's time is from the observation the harness sent with the request to the
model's reply (``model_response``); the first decision reads the whole prompt, later
ones mostly what is new after the prompt cache. Nothing here calls a model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def task_folders(paths: list[Path]) -> list[Path]:
    """Every folder under ``paths`` holding an ``events.jsonl``, in name order."""
    found: list[Path] = []
    for path in paths:
        if (path / "events.jsonl").is_file():
            found.append(path)
        else:
            found.extend(sorted(events.parent for events in path.rglob("events.jsonl")))
    return found


def task_stats(folder: Path) -> dict[str, Any]:
    """The figures of one task from its events (a line that is not JSON is skipped)."""
    events = []
    for line in (folder / "events.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    decisions: list[float] = []
    prompt_tokens: list[int] = []
    cached_tokens: list[int] = []
    calls = recovered = empty = 0
    asked_at: float | None = None
    model = None
    done: dict[str, Any] = {}
    reminders = 0
    instruction = ""
    for event in events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "task_started":
            instruction = str(data.get("instruction") or "")
        elif kind == "observation":
            asked_at = event.get("time")
        elif kind == "model_response":
            model = data.get("model") or model
            if asked_at is not None and event.get("time") is not None:
                decisions.append(float(event["time"]) - float(asked_at))
            asked_at = None
            usage = data.get("usage") or {}
            prompt_tokens.append(int(usage.get("prompt_tokens") or 0))
            cached_tokens.append(int(usage.get("cached_prompt_tokens") or 0))
            tool_calls = data.get("tool_calls") or []
            calls += len(tool_calls)
            recovered += sum(1 for call in tool_calls if call.get("recovered_from_text"))
            if not tool_calls and not str(data.get("text") or "").strip():
                empty += 1
        elif kind == "reminder":
            reminders += 1
        elif kind == "done":
            done = data
    later = decisions[1:]
    verdict = done.get("goal_verdict") or {}
    return {
        "task": folder.name,
        "instruction": instruction,
        "model": model,
        "decisions": len(decisions),
        "calls": calls,
        "recovered_from_text": recovered,
        "empty_replies": empty,
        "reminders": reminders,
        "status": done.get("status"),
        "outcome": done.get("outcome"),
        "finished_by": done.get("finished_by"),
        "reason": done.get("reason") or "",
        "ground_truth": verdict.get("status"),
        "first_decision_s": round(decisions[0], 1) if decisions else None,
        "later_decision_median_s": round(statistics.median(later), 1) if later else None,
        "later_decision_range_s": [round(min(later), 1), round(max(later), 1)] if later else None,
        "first_prompt_tokens": prompt_tokens[0] if prompt_tokens else None,
        "later_cached_share": (
            round(sum(cached_tokens[1:]) / sum(prompt_tokens[1:]), 2) if sum(prompt_tokens[1:]) else None
        ),
        "elapsed_s": done.get("elapsed_s"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="work, runs or task folders")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    args = parser.parse_args(argv)
    folders = task_folders(args.paths)
    if not folders:
        print(f"error: no events.jsonl under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    rows = [task_stats(folder) for folder in folders]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        later = row["later_decision_range_s"]
        print(f"{row['task']}  ({row['model']})  {row['instruction'][:70]}")
        print(
            f"  calls {row['calls']} (recovered from text {row['recovered_from_text']}), "
            f"empty replies {row['empty_replies']}, reminders {row['reminders']}, "
            f"decisions {row['decisions']}"
        )
        print(
            f"  ended {row['status']} / outcome {row['outcome']} by {row['finished_by']}"
            f"{': ' + row['reason'][:120] if row['reason'] else ''}; ground truth: {row['ground_truth']}"
        )
        print(
            f"  first decision {row['first_decision_s']} s ({row['first_prompt_tokens']} prompt tokens); "
            f"later median {row['later_decision_median_s']} s"
            f"{f' (range {later[0]}-{later[1]} s)' if later else ''}, "
            f"cached share of later prompts {row['later_cached_share']}; task {row['elapsed_s']} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
