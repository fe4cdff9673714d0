"""What a task puts before the model: the Resident context at its start, and each turn's
observation (with the images the run log keeps)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness_ros.context import ResidentContext, observation_images, observation_summary
from harness_ros.observation.contracts import FirstFrameSource, Observation

if TYPE_CHECKING:
    from harness_ros.harness.contracts import TaskHost
    from harness_ros.harness.runlog import RunLog

__all__ = ["resident_context", "take_observation"]

logger = logging.getLogger(__name__)


def resident_context(h: TaskHost, names: Sequence[str]) -> ResidentContext:
    """The task's Resident context: system prompt, memory, profile, tools ``names``, skill catalog."""
    summaries = h.memory.tool_experience_summaries(list(names)) if h.memory is not None else {}
    return ResidentContext(
        system_prompt=h.system_prompt,
        memory=h.memory.resident_memory() if h.memory is not None else "",
        profile=h.profile.render() if h.profile is not None else "",
        tool_definitions=tuple(h.registry.definitions(summaries)),
        skill_catalog=h.skills.render_catalog() if h.skills is not None and h.skills.has_skills else "",
    )


def take_observation(
    h: TaskHost, turn: int, runlog: RunLog | None
) -> tuple[Observation | None, dict[str, Any]]:
    """The newest observation and its event data (images saved in the run log when the model
    is shown them); (None, {}) without an observation source. A sensor fault is an
    observation that says so, never an ended task."""
    source = h.observations
    if source is None:
        return None, {}
    try:
        if turn == 1 and h.first_frame_timeout_s > 0 and isinstance(source, FirstFrameSource):
            # A task sent right after start-up must not decide before the cameras started.
            source.wait_for_first_frames(h.first_frame_timeout_s)
        observation = source.observe()
    except Exception as err:  # a sensor fault must not end the task; the model is told
        logger.exception("observation failed")
        observation = Observation(
            time=time.time(), notes=(f"observation failed: {type(err).__name__}: {err}",)
        )
    data = observation_summary(observation)
    shown = h.model_vision
    if not shown:
        data["images_shown"] = False  # model.vision: the model takes no images
    if runlog is not None and shown:
        saved = [runlog.write_image(turn, name, jpeg) for name, jpeg in observation_images(observation)]
        data["images"] = [name for name in saved if name]
    return observation, data
