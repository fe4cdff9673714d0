"""Text-only models get no images: the observation says the views are not shown and keeps the numbers."""

from __future__ import annotations

import json
from pathlib import Path

from test_harness import FakeObservations, Robot, ScriptedModel, call, done, final, of, reply, run_all

from harness_ros.config import HarnessConfig
from harness_ros.events import EventType
from harness_ros.harness import Harness, build_harness
from harness_ros.model.contracts import count_images


def _observation_text(request: list[dict]) -> str:
    content = request[-1]["content"]
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def test_a_text_only_model_gets_no_image_and_the_numbers_in_metres(tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), final("ok")])
    runs = tmp_path / "runs"
    harness = Harness(
        model=model, tools=Robot().tools, observations=FakeObservations(), runs_dir=runs, model_vision=False
    )
    events = run_all(harness, task_id="t1")
    assert done(events).data["status"] == "completed"
    assert all(count_images(request) == 0 for request in model.requests)
    assert "image_url" not in json.dumps(model.requests)
    text = _observation_text(model.requests[0])
    # one line naming the views, without the sizes and ages of frames nobody sees
    assert "Views not shown (text-only model): front\n" in text
    assert "320x240" not in text and "age 0.10 s" not in text
    assert "Base clearance m from the footprint edge: forward 1.50, left 0.60" in text
    observation = of(events, EventType.OBSERVATION)[0].data
    assert observation["images_shown"] is False and "images" not in observation
    assert not list((runs / "t1").glob("*.jpg"))  # nothing was sent, so nothing is kept as sent
    assert all(e.data["usage"]["images"] == 0 for e in of(events, EventType.MODEL_RESPONSE))


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
