"""Client-message parsing without ROS: any text is a request or a ClientMessageError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_ros.task_api import (
    ClientMessageError,
    MessageLimits,
    parse_cancel,
    parse_instruction,
    parse_json_object,
    parse_revision,
)

PARSERS = (parse_instruction, parse_revision, parse_cancel)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
_FIELDS = st.dictionaries(
    st.sampled_from(["instruction", "task_id", "text", "reason", "session_id", "new_session"]),
    _JSON,
    max_size=5,
)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(max_size=300), _FIELDS.map(json.dumps)), parser=st.sampled_from(PARSERS))
def test_any_text_is_a_request_or_a_clear_refusal(text: str, parser: object) -> None:
    try:
        request = parser(text)  # type: ignore[operator]
    except ClientMessageError as err:
        assert str(err)
    else:
        assert getattr(request, "task_id", None) != ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 20_000 + "]" * 20_000, "more than task_api.max_message_bytes"),
        ('{"instruction": ' + "[" * 5_000 + "]" * 5_000 + "}", "nests too deeply"),
        ('{"instruction": [[[[[[[[["x"]]]]]]]]]}', "more than task_api.max_json_depth"),
        ('{"instruction": "go", "task_id": "t\\n"}', "must match"),
        ('{"instruction": "go", "new_session": "yes"}', "'new_session' must be true or false"),
        ('{"instruction": 7}', "'instruction' must be a string"),
    ],
)
def test_hostile_instructions_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ClientMessageError, match=message):
        parse_instruction(text, MessageLimits())


def test_revise_and_cancel_must_name_their_task_in_json() -> None:
    with pytest.raises(ClientMessageError, match="no 'task_id'"):
        parse_revision('{"instruction": "go left"}')
    with pytest.raises(ClientMessageError, match="no 'task_id'"):
        parse_cancel('{"reason": "stop"}')
    assert parse_revision("go left").task_id is None  # bare text: only the running task
    assert parse_cancel("task-1").task_id == "task-1"
    with pytest.raises(ClientMessageError, match="must be a JSON object"):
        parse_json_object("[1]")
