"""Prefix caching in practice: later decisions of one conversation with the harness's
byte-stable prefix, against the same conversation with a time stamp near the top.

    .venv/bin/python bench/bench_prefix_cache.py [--model 1.5b|0.5b] [--turns N] [--max-tokens N]

Serves the local model with llama.cpp (``LocalServer``: 2 threads, one slot, prompt
cache on, as the demo does) and replays a recorded-style conversation of config/sim.yaml:
the first decision's request (``harness-ros tools`` builds the same one), then per turn
the model's navigate/pick/place call, its compact tool result and a new observation.

- stable: the requests as the harness sends them: each later request starts with the
  previous one's bytes, so llama.cpp reuses its cached prefix.
- changing: the same requests with ``Time: <now>`` as the system prompt's second line,
  so the prefix differs from the first lines on (a time stamp, or a reordered tool list).

Per decision: wall time, prompt tokens, the tokens llama.cpp took from its cache
(``usage.prompt_tokens_details.cached_tokens``, else ``timings.cache_n``). The reply is
capped at --max-tokens (the decode time is the same in both arms).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from harness_ros.commands._prompt_size import first_decision, sample_observation
from harness_ros.commands.tools import model_tool_definitions
from harness_ros.config import load_config
from harness_ros.context.observation import observation_message
from harness_ros.local_model.server import LocalServer

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 5.0
CALLS = [
    ("navigate_to", {"target": "kitchen_table"}, '{"success": true, "verdict": "success"}'),
    ("pick_object", {"object_id": "red_cup"}, '{"success": true, "verdict": "success"}'),
    ("navigate_to", {"target": "coffee_table"}, '{"success": true, "verdict": "success"}'),
    ("place_object", {"surface_id": "coffee_table"}, '{"success": true, "verdict": "success"}'),
]


def conversation(turns: int) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The request of each decision (first + ``turns`` later ones) and the tools."""
    config = load_config(REPO / "config" / "sim.yaml")
    request = first_decision(config, [row["definition"] for row in model_tool_definitions(config)])
    history = request.messages[:-1]  # system, instruction; the observation goes last, never kept
    observation = request.messages[-1]
    requests = [[*history, observation]]
    base = sample_observation(config)
    for turn in range(turns):
        name, arguments, result = CALLS[turn % len(CALLS)]
        call_id = f"call_{turn + 1}"
        history = [
            *history,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ]
        fresh = observation_message(dataclasses.replace(base, time=base.time + 5.0 * (turn + 1)))
        fresh = {**fresh, "content": fresh["content"][:1]}  # text only, as a text-only model gets it
        requests.append([*history, fresh])
    return requests, request.tools


def stamped(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same request with the time in the system prompt's second line."""
    changed = copy.deepcopy(messages)
    header, rest = changed[0]["content"].split("\n", 1)
    changed[0]["content"] = f"{header}\nTime: {time.time():.6f}\n{rest}"
    return changed


def decide(
    endpoint: Any, key: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int
) -> dict[str, Any]:
    body = {
        "model": endpoint.alias,
        "messages": messages,
        "tools": tools,
        "max_tokens": max_tokens,
        "temperature": 0.0,
    }
    request = urllib.request.Request(  # the local server on 127.0.0.1
        endpoint.api_base + "/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=1800) as response:
        reply = json.loads(response.read())
    seconds = time.perf_counter() - started
    usage = reply.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None:
        cached = (reply.get("timings") or {}).get("cache_n", 0)
    return {"s": seconds, "prompt": int(usage.get("prompt_tokens", 0)), "cached": int(cached or 0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--model", default="1.5b", help="1.5b (default) or 0.5b")
    parser.add_argument("--turns", type=int, default=3, help="later decisions per arm (default 3)")
    parser.add_argument("--max-tokens", type=int, default=24, help="reply tokens per decision (default 24)")
    args = parser.parse_args()
    requests, tools = conversation(args.turns)
    with tempfile.TemporaryDirectory() as folder:
        server = LocalServer(args.model, Path(folder) / "server.log", install=False)
        endpoint = server.start()
        try:
            rows: dict[str, list[dict[str, Any]]] = {"stable": [], "changing": []}
            for arm in ("stable", "changing"):
                for number, messages in enumerate(requests):
                    sent = messages if arm == "stable" else stamped(messages)
                    result = decide(endpoint, server.api_key, sent, tools, args.max_tokens)
                    rows[arm].append(result)
                    share = result["cached"] / result["prompt"] if result["prompt"] else 0.0
                    print(
                        f"{arm:8s} decision {number + 1}: {result['s']:6.1f} s, "
                        f"{result['prompt']} prompt tokens, "
                        f"{result['cached']} from the cache ({share:.0%})",
                        flush=True,
                    )
        finally:
            server.stop()
    later = {arm: [r["s"] for r in found[1:]] for arm, found in rows.items()}
    shares = {
        arm: sum(r["cached"] for r in found[1:]) / max(1, sum(r["prompt"] for r in found[1:]))
        for arm, found in rows.items()
    }
    stable, changing = statistics.median(later["stable"]), statistics.median(later["changing"])
    print(
        f"model {args.model}: first decision {rows['stable'][0]['s']:.1f} s "
        f"({rows['stable'][0]['prompt']} tokens); "
        f"later decisions, median: stable prefix {stable:.1f} s (cached {shares['stable']:.0%}), "
        f"changing prefix {changing:.1f} s (cached {shares['changing']:.0%}); ratio {changing / stable:.1f}x"
    )
    verdict = "meets" if stable <= GOAL_S else "misses"
    print(f"goal: later decisions <= {GOAL_S:g} s with the stable prefix: {verdict} ({stable:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
