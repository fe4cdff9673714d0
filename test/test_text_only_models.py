"""Text-only models get no images: the observation says the views are not shown and keeps the numbers."""

from __future__ import annotations

import json
from pathlib import Path

from test_harness import FakeObservations, Robot, ScriptedModel, call, done, final, of, plain, reply, run_all

from harness_ros.config import HarnessConfig
from harness_ros.context import OBSERVATION_HEADER, OBSERVATION_UNCHANGED, observation_update
from harness_ros.events import EventType
from harness_ros.harness import Harness, build_harness
from harness_ros.model.contracts import count_images
from harness_ros.observation.contracts import Clearance


def _observation_text(request: list[dict]) -> str:
    content = request[-1]["content"]
    if isinstance(content, str):  # a text-only model's observation, kept in its history
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def _observations(request: list[dict]) -> list[str]:
    return [
        m["content"]
        for m in request
        if isinstance(m["content"], str) and m["content"].startswith(OBSERVATION_HEADER)
    ]


def test_a_text_only_model_gets_no_image_and_the_numbers_in_metres(tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), final("ok")])
    runs = tmp_path / "runs"
    harness = Harness(
        model=model, tools=Robot().tools, observations=FakeObservations(), runs_dir=runs, model_vision=False
    )
    events = run_all(harness, task_id="t1")
    assert done(events).payload.get("status") == "completed"
    assert all(count_images(request) == 0 for request in model.requests)
    assert "image_url" not in json.dumps(model.requests)
    text = _observation_text(model.requests[0])
    # one line naming the views, without the sizes and ages of frames nobody sees
    assert "Views not shown (text-only model): front\n" in text
    assert "320x240" not in text and "age 0.10 s" not in text
    assert "Base clearance m from the footprint edge: forward 1.50, left 0.60" in text
    observation = of(events, EventType.OBSERVATION)[0].payload.to_data()
    assert observation["images_shown"] is False and "images" not in observation
    assert not list((runs / "t1").glob("*.jpg"))  # nothing was sent, so nothing is kept as sent
    assert all(e.payload.get("usage")["images"] == 0 for e in of(events, EventType.MODEL_RESPONSE))


def test_a_vision_model_still_gets_the_views(tmp_path: Path) -> None:
    model = ScriptedModel([final("ok")])
    run_all(Harness(model=model, tools=Robot().tools, observations=FakeObservations()))
    assert count_images(model.requests[0]) == 1
    assert "Views:\n- front" in _observation_text(model.requests[0])


def _config(tmp_path: Path, **model: object) -> HarnessConfig:
    (tmp_path / "skills").mkdir(exist_ok=True)
    return HarnessConfig.model_validate(
        {
            "memory": {"dir": str(tmp_path / "memory")},
            "skills": {"dir": str(tmp_path / "skills")},
            "model": model,
        }
    )


def test_build_harness_asks_the_configuration_whether_the_model_sees(tmp_path: Path) -> None:
    model = ScriptedModel([])
    local = _config(tmp_path, model="openai/qwen2.5-coder-1.5b-instruct", api_base="http://127.0.0.1:8080/v1")
    assert build_harness(local, model=model).model_vision is False
    told = _config(
        tmp_path,
        model="openai/qwen2.5-coder-1.5b-instruct",
        api_base="http://127.0.0.1:8080/v1",
        vision="true",
    )
    assert build_harness(told, model=model).model_vision is True
    hosted = _config(tmp_path, model="openai/gpt-4o-mini")
    assert build_harness(hosted, model=model).model_vision is True


class MovingObservations(FakeObservations):
    """Forward clearance per decision, in turn: the readings change only after a drive, as
    the sim's do (eval run K)."""

    def __init__(self, forward: list[float]) -> None:
        super().__init__()
        self.forward = forward

    def clearance(self) -> Clearance | None:
        forward = self.forward[min(self.observe_calls, len(self.forward)) - 1]
        return Clearance(forward, 0.6, 0.8, 0.6, self.now(), self.clearance_age, self.stale)


def test_a_text_only_model_keeps_its_observations_and_reads_only_what_changed(tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), reply(call("look")), final("ok")])
    observations = MovingObservations([1.5, 1.5, 0.25])
    harness = Harness(model=model, tools=Robot().tools, observations=observations, model_vision=False)
    events = run_all(harness)
    first, second, third = (_observations(request) for request in model.requests)
    assert len(first) == 1 and "Base clearance m from the footprint edge: forward 1.50" in first[0]
    # the same readings: one line, after the first observation and the call it led to
    assert second[0] == first[0] and second[1] == f"{OBSERVATION_HEADER}\n{OBSERVATION_UNCHANGED}"
    assert model.requests[1][-1]["content"] == second[1]  # still the last words of the request
    # after the drive: only the changed line, and the request before it is the cached prefix
    assert third[:2] == second and "forward 0.25" in third[2] and "Views not shown" not in third[2]
    assert model.requests[2][: len(model.requests[1])] == model.requests[1]
    # the run log keeps every reading whole
    assert [e.payload.get("clearance")["forward"] for e in of(events, EventType.OBSERVATION)] == [
        1.5,
        1.5,
        0.25,
    ]


def test_a_reading_that_turns_stale_shows_the_whole_observation_again() -> None:
    views = "Views not shown (text-only model): front"
    fresh = f"{OBSERVATION_HEADER}\n{views}\nBase clearance m from the footprint edge: forward 1.50"
    stale = fresh.replace("edge:", "edge (STALE, age 0.90 s: base motion will be blocked):")
    noted = f"{fresh}\nNote: observation failed: OSError: camera gone"
    assert observation_update(None, fresh) == fresh
    assert observation_update(fresh, stale) == stale
    assert observation_update(stale, fresh) == fresh
    assert observation_update(fresh, noted) == noted and observation_update(noted, fresh) == fresh
    moved = observation_update(fresh, fresh.replace("1.50", "0.25"))
    assert moved.splitlines() == [
        OBSERVATION_HEADER,
        "Base clearance m from the footprint edge: forward 0.25",
        "(Other readings unchanged, fresh.)",
    ]


def test_an_image_model_is_sent_only_the_newest_observation() -> None:
    model = ScriptedModel([reply(call("look")), reply(call("look")), final("ok")])
    run_all(Harness(model=model, tools=Robot().tools, observations=FakeObservations()))
    for request in model.requests:
        shown = [
            m for m in request if isinstance(m["content"], list) and "image_url" in json.dumps(m["content"])
        ]
        assert shown == [request[-1]]


def test_after_compaction_the_observation_is_whole_again_and_none_is_summarised() -> None:
    steps = [reply(call("look", f"c{i}")) for i in range(6)] + [final("done")]
    model = ScriptedModel(steps, compact=plain('{"summary": "looked six times, saw a red cup"}'))
    harness = Harness(
        model=model,
        tools=Robot().tools,
        observations=FakeObservations(),
        model_vision=False,
        context_window_tokens=700,
    )
    events = run_all(harness)
    assert of(events, EventType.COMPACTION)[0].payload.get("compacted") is True
    assert OBSERVATION_HEADER not in model.compact_requests[0][1]["content"]  # superseded readings
    after = next(r for r in model.requests if any("looked six times" in str(m["content"]) for m in r))
    shown = _observations(after)
    assert shown and "Base clearance m from the footprint edge: forward 1.50" in shown[-1]
    assert after[-1]["content"] == shown[-1]
