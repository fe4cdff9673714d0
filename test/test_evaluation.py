"""ModelEvaluator (what the model is sent, how replies are parsed) and EvaluationGate (fail closed)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness_ros.errors import LLMError
from harness_ros.evaluation import (
    EvaluationGate,
    ModelEvaluator,
    Verdict,
    VerdictStatus,
    read_verdict_object,
)
from harness_ros.model.contracts import ModelReply
from harness_ros.observation.contracts import Clearance, DepthRegion, DepthSummary, Observation, ViewImage
from harness_ros.tools import ToolSpec

POST = "The red mug is inside the gripper."
PICK = ToolSpec(name="pick_object", description="Pick.", physical=True, evaluated=True, post_condition=POST)
DRIVE = ToolSpec(
    name="drive_segment",
    description="Drive.",
    physical=True,
    evaluated=True,
    post_condition="The base is at the doorway.",
    segment=True,
)


@dataclass
class FakeModel:
    """A ChatModel that records every request and answers from a script."""

    replies: list[str | Exception]
    name: str = "fake/vision"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        self.calls.append({"messages": messages, "tools": tools, "json_mode": json_mode})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ModelReply(text=reply, model=self.name)


def view(name: str, jpeg: bytes, *, stale: bool = False, missing: bool = False) -> ViewImage:
    return ViewImage(
        name=name, jpeg=jpeg, width=320, height=240, stamp=1.0, age_s=0.2, stale=stale, missing=missing
    )


def observation() -> Observation:
    return Observation(
        time=12.5,
        views=(
            view("front", b"\xff\xd8front"),
            view("wrist", b"\xff\xd8wrist", stale=True),
            ViewImage(
                name="torso", jpeg=b"", width=0, height=0, stamp=None, age_s=None, stale=False, missing=True
            ),
        ),
        depth=DepthSummary(
            regions=(DepthRegion("center", 0.42, 0.9),),
            stamp=12.4,
            age_s=0.1,
            stale=False,
            preview_jpeg=b"depth",
        ),
        clearance=Clearance(1.0, 0.5, None, 2.0, stamp=12.4, age_s=0.1, stale=False),
        notes=("camera torso has no frames",),
    )


def evaluate(replies: list[str | Exception], **kwargs: Any) -> tuple[Verdict, FakeModel]:
    model = FakeModel(list(replies))
    verdict = ModelEvaluator(model, **kwargs).evaluate(
        tool="pick_object", run_id="run-7", post_condition=POST, observation=observation()
    )
    return verdict, model


def reply(status: str, reason: str | None = None, evidence: str = "mug visible between the fingers") -> str:
    return json.dumps({"status": status, "failure_reason": reason, "evidence": evidence})


# --- the request -------------------------------------------------------------------


def test_request_holds_only_the_post_condition_and_the_observation() -> None:
    _, model = evaluate([reply("success")])
    (call,) = model.calls
    assert call["tools"] is None
    assert call["json_mode"] is True
    system, user = call["messages"]
    assert system["role"] == "system"
    assert system["content"].splitlines()[0] == "# harness_ros: evaluate"
    assert user["role"] == "user"
    text_parts = [p["text"] for p in user["content"] if p["type"] == "text"]
    (text,) = text_parts
    assert POST in text
    assert "forward 1.00 m, left 0.50 m, backward unknown, right 2.00 m" in text
    assert "center: nearest 0.42 m, median 0.90 m" in text
    assert "'wrist': 320x240, STALE (age 0.20 s)" in text
    assert "'torso': no image, not started (no frame received yet)" in text
    assert "camera torso has no frames" in text
    # Nothing about the acting side: not the tool, its run, or its arguments.
    whole = json.dumps(call["messages"])
    assert "pick_object" not in whole and "run-7" not in whole


def test_images_are_data_urls_in_the_user_message() -> None:
    _, model = evaluate([reply("success")])
    system, user = model.calls[0]["messages"]
    assert isinstance(system["content"], str)
    urls = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    expected = [b"\xff\xd8front", b"\xff\xd8wrist", b"depth"]
    assert urls == ["data:image/jpeg;base64," + base64.b64encode(data).decode() for data in expected]


def test_max_images_bounds_the_attachments() -> None:
    _, model = evaluate([reply("success")], max_images=1)
    user = model.calls[0]["messages"][1]
    urls = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    assert urls == ["data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8front").decode()]
    assert "'wrist': 320x240, STALE (age 0.20 s), not attached" in user["content"][0]["text"]
    with pytest.raises(ValueError, match="max_images"):
        ModelEvaluator(FakeModel([]), max_images=-1)


# --- parsing -----------------------------------------------------------------------


def test_success_verdict() -> None:
    verdict, _ = evaluate([reply("success")])
    assert verdict == Verdict(VerdictStatus.SUCCESS, "run-7", None, "mug visible between the fingers")


def test_fenced_reply_is_parsed() -> None:
    verdict, _ = evaluate(["```json\n" + reply("failure", "gripper empty") + "\n```"])
    assert verdict.status is VerdictStatus.FAILURE
    assert verdict.failure_reason == "gripper empty"
    # Prose around the fence: the object may be a quote, so it is not read (fail closed).
    verdict, _ = evaluate(["Here you go:\n```json\n" + reply("success") + "\n```"])
    assert verdict.failure_reason == "malformed verdict: the reply has text besides its JSON object"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("the mug is held", "malformed verdict: the reply is not a JSON object"),
        ("", "malformed verdict: the reply is empty"),
        ('{"status": "success"', "malformed verdict: the reply is not a JSON object"),
        ("[1, 2]", "malformed verdict: not an object"),
        (reply("done"), "malformed verdict: status 'done'"),
        (reply("failure", None), "malformed verdict: failure without a reason"),
        (reply("failure", "  "), "malformed verdict: failure without a reason"),
    ],
)
def test_malformed_replies_fail_closed(text: str, reason: str) -> None:
    verdict, _ = evaluate([text])
    assert verdict.status is VerdictStatus.FAILURE
    assert verdict.failure_reason == reason
    assert verdict.run_id == "run-7"


def test_llm_error_becomes_a_failure_verdict() -> None:
    verdict, _ = evaluate([LLMError("provider 'openai' timed out after 60 s")])
    assert verdict.status is VerdictStatus.FAILURE
    assert verdict.failure_reason == "evaluator model failed: provider 'openai' timed out after 60 s"


def test_read_verdict_object() -> None:
    statuses = ("success", "failure")
    assert read_verdict_object('```\n{"status": "success"}\n```', statuses=statuses) == {"status": "success"}
    assert read_verdict_object(' {"status": "FAILURE", "failure_reason": "x"} ', statuses=statuses) == {
        "status": "FAILURE",
        "failure_reason": "x",
    }
    # The span from the first { to the last } used to be read: a quoted object was the verdict.
    quoted = 'verdict: {"status": "success"} done'
    assert read_verdict_object(quoted, statuses=statuses) == "the reply has text besides its JSON object"
    assert read_verdict_object(None, statuses=statuses) == "the reply is empty"
    assert read_verdict_object("no json", statuses=statuses) == "the reply is not a JSON object"
    assert read_verdict_object('{"status": "process"}', statuses=statuses) == "status 'process'"
    long = '{"status": "success", "evidence": "' + "x" * 60_000 + '"}'
    assert (
        read_verdict_object(long, statuses=statuses)
        == "the reply is 60037 characters long (at most 50000 are read)"
    )


# --- the gate ----------------------------------------------------------------------


@dataclass
class ScriptedEvaluator:
    answers: list[Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        self.calls.append({"tool": tool, "run_id": run_id, "post_condition": post_condition})
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, Verdict | dict):
            return answer  # type: ignore[return-value]  # a non-conforming evaluator
        return Verdict(VerdictStatus(answer), run_id, "blocked by chair" if answer == "failure" else None)


def judge(gate: EvaluationGate, spec: ToolSpec, run_id: str = "run-1") -> Verdict:
    return gate.judge(spec, run_id, Observation(time=0.0))


def test_gate_passes_the_post_condition_and_run_id() -> None:
    evaluator = ScriptedEvaluator(["success"])
    verdict = judge(EvaluationGate(evaluator, max_segments=3), PICK)
    assert verdict.status is VerdictStatus.SUCCESS
    assert evaluator.calls == [{"tool": "pick_object", "run_id": "run-1", "post_condition": POST}]


def test_process_for_a_non_segment_tool_fails_closed() -> None:
    verdict = judge(EvaluationGate(ScriptedEvaluator(["process"]), max_segments=3), PICK)
    assert verdict.status is VerdictStatus.FAILURE
    assert verdict.failure_reason == "malformed verdict: 'process' for a non-segment tool"


def test_model_evaluator_process_for_a_non_segment_tool_fails_at_the_gate() -> None:
    gate = EvaluationGate(ModelEvaluator(FakeModel([reply("process")])), max_segments=3)
    assert judge(gate, PICK).status is VerdictStatus.FAILURE


def test_segments_are_bounded_per_run() -> None:
    evaluator = ScriptedEvaluator(["process"] * 3 + ["process", "success", "process"])
    gate = EvaluationGate(evaluator, max_segments=2)
    assert judge(gate, DRIVE, "a").status is VerdictStatus.PROCESS
    assert judge(gate, DRIVE, "b").status is VerdictStatus.PROCESS  # another run counts apart
    assert judge(gate, DRIVE, "a").status is VerdictStatus.PROCESS
    limited = judge(gate, DRIVE, "a")
    assert limited.status is VerdictStatus.FAILURE
    assert limited.failure_reason == "segment limit reached (2 'process' verdicts in a row)"
    assert judge(gate, DRIVE, "b").status is VerdictStatus.SUCCESS
    assert judge(gate, DRIVE, "b").status is VerdictStatus.PROCESS  # a terminal verdict resets the count


def test_empty_run_id_is_a_failure_without_asking() -> None:
    evaluator = ScriptedEvaluator(["success"])
    gate = EvaluationGate(evaluator, max_segments=3)
    for run_id in ("", "   "):
        verdict = judge(gate, PICK, run_id)
        assert verdict.status is VerdictStatus.FAILURE
        assert verdict.failure_reason == "tool 'pick_object' returned no run_id, so it cannot be evaluated"
    assert evaluator.calls == []


def test_gate_revalidates_and_survives_evaluator_faults() -> None:
    bad = Verdict(VerdictStatus.FAILURE, "other-run", None, "")
    evaluator = ScriptedEvaluator([bad, RuntimeError("camera gone"), {"status": "success"}])
    gate = EvaluationGate(evaluator, max_segments=3)
    verdict = judge(gate, PICK)
    assert (verdict.status, verdict.run_id) == (VerdictStatus.FAILURE, "run-1")
    assert verdict.failure_reason == "malformed verdict: failure without a reason"
    verdict = judge(gate, PICK)
    assert verdict.failure_reason == "evaluator raised RuntimeError"
    assert judge(gate, PICK).status is VerdictStatus.SUCCESS  # a raw dict is parsed too


def test_tool_without_post_condition_fails_closed() -> None:
    spec = ToolSpec(name="wave", description="Wave.", evaluated=True)
    evaluator = ScriptedEvaluator(["success"])
    verdict = judge(EvaluationGate(evaluator, max_segments=3), spec)
    assert verdict.status is VerdictStatus.FAILURE
    assert "no post-condition" in (verdict.failure_reason or "")
    assert evaluator.calls == []
    with pytest.raises(ValueError, match="max_segments"):
        EvaluationGate(evaluator, max_segments=0)


def test_model_evaluator_over_litellm_and_the_loopback_server() -> None:
    """The real request path: litellm serialises the image parts and the reply is parsed."""
    from harness_ros.model import LiteLLMModel
    from harness_ros.testing.loopback_llm import LoopbackLLMServer

    answer = "```json\n" + reply("success", evidence="mug in gripper") + "\n```"
    with LoopbackLLMServer([answer, {"status": 500}]) as server:
        model = LiteLLMModel(
            "openai/loopback", api_base=server.url, api_key="test", max_retries=0, timeout_s=10.0
        )
        evaluator = ModelEvaluator(model)
        verdict = evaluator.evaluate(
            tool="pick_object", run_id="r9", post_condition=POST, observation=observation()
        )
        failed = evaluator.evaluate(
            tool="pick_object", run_id="r10", post_condition=POST, observation=observation()
        )
    assert verdict == Verdict(VerdictStatus.SUCCESS, "r9", None, "mug in gripper")
    assert failed.status is VerdictStatus.FAILURE
    assert (failed.failure_reason or "").startswith("evaluator model failed:")
    body = server.requests[0]
    assert body["messages"][0]["content"].startswith("# harness_ros: evaluate\n")
    parts = body["messages"][1]["content"]
    assert parts[0]["type"] == "text" and POST in parts[0]["text"]
    assert parts[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
