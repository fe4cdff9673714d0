"""The physics robot's scripted fetch: decisions for a loopback model server (no language model).

The scripted demo policy (``harness_ros_sim.demo``) drives the kinematic sim by place
names (``navigate_to``); Stretch 3's config drives by poses (``navigate_to_pose``). So the
eval's scripted smoke run on the physics robot answers the harness node's model requests
with this fixed fetch instead: drive beside the cup on the dining table, pick it, drive
along the kitchen counter, place it, ``finish_task``; a failed step ends the task as
failed. Evaluator requests get a scripted ``success`` (navigation is judged by the pose
check on /amcl_pose, without a model). It checks the machinery end to end and measures
nothing about learning. Pure Python: no ROS.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PHYSICS_FETCH", "PHYSICS_INSTRUCTION", "PHYSICS_PLACES", "scripted_physics_reply"]

PHYSICS_INSTRUCTION = "Bring the red cup from the dining table to the kitchen counter."
PHYSICS_PLACES: dict[str, tuple[float, float, int]] = {
    "dining_table": (0.2, 0.0, 0),
    "kitchen_counter": (1.6, 0.0, 0),
}
"""Where the robot stops to work at each surface of the fetch: x, y (m) and yaw (degrees)
in ``map``, the surface to its right within the arm's reach. The scripted fetch drives to
them, and the learning eval gives them to both arms as the operator's map (WORLD.md)."""


def _drive(place: str) -> tuple[str, dict[str, Any]]:
    x, y, yaw = PHYSICS_PLACES[place]
    return "navigate_to_pose", {"x": x, "y": y, "yaw": yaw}


PHYSICS_FETCH: tuple[tuple[str, dict[str, Any]], ...] = (
    _drive("dining_table"),
    ("pick_object", {"object_id": "red_cup"}),
    _drive("kitchen_counter"),
    ("place_object", {"surface_id": "kitchen_counter"}),
)
"""The robot starts at the origin facing +x, the cup at (0.0, -0.72) on the dining table on
its right; the counter spans x 0.7-2.5 at y < -0.6 (test/test_physics_harness.py)."""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _purpose(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    first = _text(messages[0]).splitlines()
    return first[0].removeprefix("# harness_ros:").strip() if first else ""


def _finish(summary: str, outcome: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "finish_task", "arguments": {"outcome": outcome, "summary": summary}}]}


def scripted_physics_reply(body: dict[str, Any]) -> Any:
    """The reply to one chat-completion request body (the loopback server's callable)."""
    purpose = _purpose(body)
    if purpose.startswith("evaluate"):
        return json.dumps({"status": "success", "failure_reason": None, "evidence": "scripted verdict"})
    if purpose == "consolidate":
        return json.dumps({"memory_entries": [], "tool_experience_entries": []})
    if purpose == "summarize":
        return json.dumps({"summary": "scripted"})
    done = [m for m in body.get("messages") or [] if m.get("role") == "tool"]
    if done:
        try:
            last = json.loads(_text(done[-1]))
        except json.JSONDecodeError:
            last = {"success": False}
        if not (isinstance(last, dict) and last.get("success") is True):
            return _finish(f"scripted physics fetch: stopped at a failed step: {last}", "failed")
    if len(done) >= len(PHYSICS_FETCH):
        return _finish("scripted physics fetch: the red cup is on the kitchen counter", "succeeded")
    name, arguments = PHYSICS_FETCH[len(done)]
    return {"tool_calls": [{"name": name, "arguments": arguments}]}
