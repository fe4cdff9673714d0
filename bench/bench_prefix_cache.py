"""Prefix caching in practice: later decisions of one conversation with the harness's
byte-stable prefix, against the same conversation with a time stamp near the top.

    .venv/bin/python bench/bench_prefix_cache.py [--model 1.5b|0.5b] [--turns N] [--max-tokens N]

Serves the local model with llama.cpp (``LocalServer``: 2 threads, one slot, prompt
cache on, as the demo does) and sends one task's decisions of config/sim.yaml as the real
harness builds them (``build_harness``, its memory, profile, skills and evaluator gate): a
scripted plan of a fetch with one failed pick runs against tools that return the sim's
result envelopes, and each decision's request is kept: the system message, the
instruction, every call with its compact result and Task Notes snapshot, and each
observation (text only, as a text-only model gets it: kept in its history, each later one
only what changed since the last; the sample's readings change after each drive).

- stable: the requests as the harness sends them: each later request starts with the
  previous one's bytes, so llama.cpp reuses its cached prefix.
- changing: the same requests with ``Time: <now>`` as the system prompt's second line,
  so the prefix differs from the first lines on (a time stamp, or a reordered tool list).
- skill in system: the same plan with the loaded skill in the system message, where the
  harness put it for every model before (a hosted model still gets it there): the
  template renders the tool definitions after the system text, so the decision after
  ``load_skill`` reads the definitions and the history again. Only that decision differs
  from the stable arm's, so only it is sent; ``--stable-only`` leaves it out.

Each request is sent as the harness's model adapter sends it to a model served on this
machine (``LiteLLMModel._request``: the stop markers and the call prefill), and the
recording model counts as one (``stops_at_harness_text``), so after the failed pick the
harness adds its failure note at the end of the request, as in an eval run.

Per decision: wall time, prompt tokens, the tokens llama.cpp took from its cache
(``usage.prompt_tokens_details.cached_tokens``, else ``timings.cache_n``), and what the
new text of a later decision is made of (tokens of each new message's text, counted by
the model's tokenizer; the chat template's role markers not counted). The reply is
capped at --max-tokens (the decode time is the same in both arms).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import itertools
import json
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness_ros.commands._prompt_size import sample_observation
from harness_ros.config import config_from_dict
from harness_ros.local_model.server import LocalServer
from harness_ros.model.litellm_model import LiteLLMModel
from harness_ros.model.markers import NOTES_HEADER, OBSERVATION_HEADER

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 5.0
INSTRUCTION = "Fetch the red cup from the kitchen table and put it on the coffee table."
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("navigate_to", {"target": "kitchen_table"}),
    ("pick_object", {"object_id": "red_cup"}),
    ("load_skill", {"name": "recover-failed-grasp"}),
    ("navigate_to", {"target": "red_cup", "standoff_m": 0.3}),
    ("pick_object", {"object_id": "red_cup"}),
    ("navigate_to", {"target": "coffee_table"}),
    ("place_object", {"surface_id": "coffee_table"}),
]
"""The calls of a fetch with one failed pick, recovered with the skill the 1.5B loads there
(eval runs P and Q): what the sim's results look like."""


def sim_result(tool: str, arguments: dict[str, Any], attempt: int) -> dict[str, Any]:
    """An envelope shaped as the sim's action servers return it (from a 1.5B eval run)."""
    run_id = uuid.uuid4().hex
    if tool == "navigate_to":
        target = arguments["target"]
        return {
            "success": True,
            "run_id": run_id,
            "result": {
                "success": True,
                "message": f"arrived at {target} (kitchen)",
                "distance_to_target_m": 0.55,
                "distance_travelled_m": 2.79866,
                "final_x": 2.9,
                "final_y": 3.0,
                "final_yaw": 3.141593,
            },
        }
    if tool == "pick_object" and attempt == 0:
        return {
            "success": False,
            "run_id": run_id,
            "reason": "action server '/sim/pick_object' aborted the goal: "
            "object out of reach: 0.96 m > 0.75 m",
            "result": {
                "success": False,
                "message": "object out of reach: 0.96 m > 0.75 m",
                "distance_m": 0.9587,
            },
        }
    return {"success": True, "run_id": run_id, "result": {"success": True, "message": f"{tool} done"}}


class SimEvaluator:
    """A verdict worded as the sim evaluator words its ground truth."""

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Any) -> Any:
        from harness_ros.evaluation import Verdict, VerdictStatus

        evidence = f"ground truth v17: {tool} met its post-condition ({post_condition})"
        return Verdict(VerdictStatus.SUCCESS, run_id, None, evidence)


class SampleObservations:
    """The sample observation of ``harness-ros tools``, fresh at every decision; its
    clearance and depth change after each drive and only then, as the sim's do (the base
    moved; a pick or a place leaves the readings as they were: eval run K)."""

    def __init__(self, config: Any, drives: Callable[[], int]) -> None:
        self._base = sample_observation(config)
        self._drives = drives
        self._decisions = 0

    def now(self) -> float:
        return self._base.time + 5.0 * self._decisions

    def clearance(self) -> Any:
        moved = 0.17 * self._drives()
        base = self._base.clearance
        return dataclasses.replace(
            base, forward=base.forward + moved, left=abs(base.left - moved), stamp=self.now() - 0.12
        )

    def observe(self) -> Any:
        self._decisions += 1
        moved = 0.23 * self._drives()
        depth = self._base.depth
        regions = tuple(
            dataclasses.replace(r, nearest_m=r.nearest_m + moved, median_m=r.median_m + moved)
            for r in depth.regions
        )
        return dataclasses.replace(
            self._base,
            time=self.now(),
            clearance=self.clearance(),
            depth=dataclasses.replace(depth, regions=regions, stamp=self.now() - 0.18),
        )

    def observe_after(self, after: float, timeout_s: float) -> Any:
        return self.observe()


class RecordingModel:
    """Makes the plan's calls and keeps each decision's request as the harness sent it."""

    name = "bench/recorded-plan"
    stops_at_harness_text = True
    """As a model served on this machine: the harness adds its failure note for it."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], *, skill_in_history: bool = True) -> None:
        self.keeps_skill_in_history = skill_in_history
        self.calls = list(calls)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def complete(self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False) -> Any:
        from harness_ros.model.contracts import ModelReply, ToolCall

        if not str(messages[0]["content"]).startswith("# harness_ros: decide"):
            return ModelReply('{"memory": [], "tool_experience": []}')  # consolidation: nothing
        self.requests.append((copy.deepcopy(messages), copy.deepcopy(tools or [])))
        name, arguments = (
            self.calls.pop(0) if self.calls else ("finish_task", {"outcome": "succeeded", "summary": "done"})
        )
        call = ToolCall(f"call_{len(self.requests)}", name, json.dumps(arguments), arguments)
        return ModelReply(None, (call,))


def conversation(
    turns: int, *, skill_in_history: bool = True
) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The requests of one task of config/sim.yaml as the real harness builds them (first
    decision, then ``turns`` later ones): system message, instruction, each call with its
    compact result and Task Notes snapshot, the newest observation last; text only."""
    from harness_ros.harness.factory import build_harness
    from harness_ros.ros.interfaces import fit_to_installed, tool_spec
    from harness_ros.tools import FunctionTool

    attempts: dict[str, int] = {}

    def tool_for(binding: Any) -> FunctionTool:
        spec, _compiled = tool_spec(fit_to_installed(binding))

        def run(**arguments: Any) -> dict[str, Any]:
            attempt = attempts.get(spec.name, 0)
            attempts[spec.name] = attempt + 1
            return sim_result(spec.name, arguments, attempt)

        return FunctionTool(spec, run)

    with tempfile.TemporaryDirectory() as folder:
        path = REPO / "config" / "sim.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["memory"] = {**(data.get("memory") or {}), "dir": str(Path(folder) / "memory")}
        data["harness"] = {**(data.get("harness") or {}), "runs_dir": str(Path(folder) / "runs")}
        data["model"] = {**(data.get("model") or {}), "vision": "false"}  # as a text-only model gets it
        config = config_from_dict(data, base_dir=path.parent, origin=str(path))
        model = RecordingModel(PLAN[:turns], skill_in_history=skill_in_history)
        harness = build_harness(
            config,
            tools=[tool_for(binding) for binding in config.tools],
            observations=SampleObservations(config, lambda: attempts.get("navigate_to", 0)),
            evaluator=SimEvaluator(),
            model=model,
        )
        for _event in harness.run(INSTRUCTION):
            pass
    requests = [messages for messages, _tools in model.requests[: turns + 1]]
    return requests, model.requests[0][1]


def stamped(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same request with the time in the system prompt's second line."""
    changed = copy.deepcopy(messages)
    header, rest = changed[0]["content"].split("\n", 1)
    changed[0]["content"] = f"{header}\nTime: {time.time():.6f}\n{rest}"
    return changed


def decide(
    endpoint: Any, key: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int
) -> dict[str, Any]:
    # The messages, stop markers and call prefill the adapter sends a model served here.
    adapter = LiteLLMModel(endpoint.model, api_base=endpoint.api_base, temperature=0.0)
    sent = adapter._request(messages, tools, False)
    body = {
        "model": endpoint.alias,
        "messages": sent["messages"],
        "tools": tools,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        **({"stop": sent["stop"]} if "stop" in sent else {}),
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
    message = ((reply.get("choices") or [{}])[0].get("message")) or {}
    return {
        "s": seconds,
        "prompt": int(usage.get("prompt_tokens", 0)),
        "cached": int(cached or 0),
        "reply": str(message.get("content") or json.dumps(message.get("tool_calls") or "")),
    }


def part_of(message: dict[str, Any]) -> str:
    """What a message of a request is, by the header the harness writes."""
    text = message_text(message)
    if message["role"] == "assistant":
        return "call"
    if message["role"] == "tool":
        return "result"
    if text.startswith(NOTES_HEADER.split(" (")[0]):
        return "task notes"
    if text.startswith(OBSERVATION_HEADER):
        return "observation"
    if text.startswith("<loaded_skill>"):
        return "loaded skill"
    return "failure note" if text.startswith("Your last ") else "other"


def message_text(message: dict[str, Any]) -> str:
    """A message's text; a call as the chat template writes it (its name and arguments)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    calls = [
        json.dumps(
            {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])},
            ensure_ascii=False,
        )
        for call in message.get("tool_calls") or []
    ]
    return "\n".join([content or "", *calls]).strip()


def new_text(requests: list[list[dict[str, Any]]], count: Any) -> list[dict[str, int]]:
    """Per later decision, the tokens of each part of its new text: the messages after the
    longest message prefix it shares with the decision before."""
    parts: list[dict[str, int]] = []
    for before, after in itertools.pairwise(requests):
        shared = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
        tally: dict[str, int] = {}
        for message in after[shared:]:
            tally[part_of(message)] = tally.get(part_of(message), 0) + count(message_text(message))
        parts.append(tally)
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--model", default="1.5b", help="1.5b (default) or 0.5b")
    parser.add_argument("--turns", type=int, default=3, help="later decisions per arm (default 3)")
    parser.add_argument("--max-tokens", type=int, default=24, help="reply tokens per decision (default 24)")
    parser.add_argument(
        "--stable-only", action="store_true", help="only the stable arm (no ratio): to compare two revisions"
    )
    args = parser.parse_args()
    requests, tools = conversation(args.turns)
    # The decision right after load_skill, and the same one with the skill in the system message.
    after_load = next(i for i, (name, _arguments) in enumerate(PLAN) if name == "load_skill") + 1
    in_system: list[list[dict[str, Any]]] = []
    if not args.stable_only and after_load < len(requests):
        in_system = conversation(args.turns, skill_in_history=False)[0]
        assert in_system[after_load - 1] == requests[after_load - 1]  # the same until the load
    from harness_ros.local_model.tokenizer import LocalTokenizer, installed_tokenizer_model

    tokenizer_model = installed_tokenizer_model()
    if tokenizer_model is not None:
        with LocalTokenizer(tokenizer_model) as tokenizer:
            for number, tally in enumerate(new_text(requests, tokenizer.count_text), start=2):
                shown = ", ".join(f"{part} {tokens}" for part, tokens in tally.items())
                print(f"decision {number} new text, tokens: {shown} (total {sum(tally.values())})")
    with tempfile.TemporaryDirectory() as folder:
        server = LocalServer(args.model, Path(folder) / "server.log", install=False)
        endpoint = server.start()
        try:
            rows: dict[str, list[dict[str, Any]]] = {"stable": [], "changing": []}
            loads: dict[str, dict[str, Any]] = {}

            def send(arm: str, number: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
                result = decide(endpoint, server.api_key, messages, tools, args.max_tokens)
                share = result["cached"] / result["prompt"] if result["prompt"] else 0.0
                print(
                    f"{arm:8s} decision {number + 1}: {result['s']:6.1f} s, "
                    f"{result['prompt']} prompt tokens, "
                    f"{result['cached']} from the cache ({share:.0%})",
                    flush=True,
                )
                return result

            for arm in ("stable",) if args.stable_only else ("stable", "changing"):
                for number, messages in enumerate(requests):
                    rows[arm].append(send(arm, number, messages if arm == "stable" else stamped(messages)))
                if arm == "stable" and in_system:
                    loads["history"] = rows["stable"][after_load]
                    # The cache holds the stable arm's last request, which extends the one
                    # before the load: sent again, it is read from the cache.
                    send("skill in system (cache)", after_load - 1, in_system[after_load - 1])
                    loads["system"] = send("skill in system", after_load, in_system[after_load])
        finally:
            server.stop()
    later = {arm: [r["s"] for r in found[1:]] for arm, found in rows.items()}
    shares = {
        arm: sum(r["cached"] for r in found[1:]) / max(1, sum(r["prompt"] for r in found[1:]))
        for arm, found in rows.items()
    }
    stable = statistics.median(later["stable"])
    compared = ""
    if later["changing"]:
        changing = statistics.median(later["changing"])
        compared = (
            f", changing prefix {changing:.1f} s (cached {shares['changing']:.0%}); "
            f"ratio {changing / stable:.1f}x"
        )
    print(
        f"model {args.model}: first decision {rows['stable'][0]['s']:.1f} s "
        f"({rows['stable'][0]['prompt']} tokens); "
        f"later decisions, median: stable prefix {stable:.1f} s (cached {shares['stable']:.0%}){compared}"
    )
    if loads:
        history, system = loads["history"], loads["system"]
        print(
            f"decision after load_skill: skill in the history {history['s']:.1f} s "
            f"({history['cached']} of {history['prompt']} tokens cached), in the system message "
            f"{system['s']:.1f} s ({system['cached']} of {system['prompt']} cached); "
            f"ratio {system['s'] / history['s']:.1f}x"
        )
        # What the model wrote there (greedy, capped at --max-tokens): the same call both ways?
        print(f"  its reply, skill in the history: {history['reply']!r}")
        print(f"  its reply, skill in the system message: {system['reply']!r}")
    verdict = "meets" if stable <= GOAL_S else "misses"
    print(f"goal: later decisions <= {GOAL_S:g} s with the stable prefix: {verdict} ({stable:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
