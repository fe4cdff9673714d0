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
import sys
from pathlib import Path
from typing import Any

from harness_ros_sim.demo.model_stats import decision_stats


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
    """The figures of one task from its events (a line that is not JSON is skipped).

    Decisions, their times, calls, recoveries, refusals, reminders and tokens are the
    demo's own tally (``harness_ros_sim.demo.model_stats``); this adds the task's end, its
    empty replies and the cached share of the later prompts."""
    events = []
    for line in (folder / "events.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    stats = decision_stats(events)
    replies = [e.get("data") or {} for e in events if e.get("type") == "model_response"]
    started = next((e.get("data") or {} for e in events if e.get("type") == "task_started"), {})
    done = next((e.get("data") or {} for e in events if e.get("type") == "done"), {})
    empty = sum(1 for r in replies if not r.get("tool_calls") and not str(r.get("text") or "").strip())
    first_cached = int(((replies[0].get("usage") or {}) if replies else {}).get("cached_prompt_tokens") or 0)
    later_prompt = stats.prompt_tokens - stats.first_prompt_tokens
    later = stats.seconds[1:]
    verdict = done.get("goal_verdict") or {}
    return {
        "task": folder.name,
        "instruction": str(started.get("instruction") or ""),
        "model": next((r.get("model") for r in replies if r.get("model")), None),
        "decisions": stats.decisions,
        "calls": stats.calls,
        "recovered_from_text": stats.recovered,
        "refused": stats.refused,
        "empty_replies": empty,
        "reminders": stats.reminders,
        "status": done.get("status"),
        "outcome": done.get("outcome"),
        "finished_by": done.get("finished_by"),
        "reason": done.get("reason") or "",
        "ground_truth": verdict.get("status"),
        "first_decision_s": round(stats.first_s, 1) if stats.first_s is not None else None,
        "later_decision_median_s": round(stats.later_median_s, 1)
        if stats.later_median_s is not None
        else None,
        "later_decision_range_s": [round(min(later), 1), round(max(later), 1)] if later else None,
        "first_prompt_tokens": stats.first_prompt_tokens if stats.decisions else None,
        "later_cached_share": (
            round((stats.cached_prompt_tokens - first_cached) / later_prompt, 2) if later_prompt > 0 else None
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
