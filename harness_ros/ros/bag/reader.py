"""Open a rosbag2 (MCAP or sqlite3) for replay, with errors that say what is wrong.

Pure ``rosbags``: no rclpy here, so ``harness-ros replay --mode consolidate`` runs
without a ROS installation. Every problem with the bag is a ``BagError`` naming the bag
and what is missing (no metadata.yaml, a truncated file, an unsupported serialization
format, no messages, no events topic), never a traceback; one bad message is skipped
and reported (``SkippedMessage``: topic, index, stamp, why), never the end of the replay.

Messages are read per storage file rather than through rosbags' directory reader:
that reader drops every message whose recorded QoS differs from metadata.yaml's
(bags written by some rosbag2 versions, e.g. the ``talker`` samples), which would
make a full bag look empty.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rosbags.rosbag2 import Reader, ReaderError
from rosbags.typesys import Stores, get_typestore

from harness_ros.errors import BagError
from harness_ros.yaml_safe import safe_load

__all__ = [
    "EVENTS_TYPE",
    "BagContents",
    "BagMessage",
    "SkippedMessage",
    "TopicInfo",
    "find_events_topic",
    "iter_events",
    "iter_messages",
    "open_bag",
]

logger = logging.getLogger(__name__)

EVENTS_TYPE = "std_msgs/msg/String"
"""Type of ``~/events`` and ``~/instruction`` (one JSON event / one instruction per message)."""

_STORAGE_SUFFIXES = (".mcap", ".db3")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    msgtype: str
    count: int


@dataclass(frozen=True)
class BagMessage:
    topic: str
    msgtype: str
    timestamp_ns: int
    data: bytes


@dataclass(frozen=True)
class BagContents:
    """What a bag holds; messages are read lazily with ``iter_messages``."""

    path: Path
    storage: str
    topics: dict[str, TopicInfo]
    message_count: int
    start_ns: int
    end_ns: int
    compressed: bool
    files: tuple[Path, ...]
    """Storage files in recording order (the bag itself when it is a bare file)."""

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9

    def describe_topics(self) -> str:
        return ", ".join(f"{t.name} ({t.msgtype})" for t in self.topics.values()) or "none"


def _fail(path: Path, what: str) -> BagError:
    return BagError(f"{str(path)!r}: {what}")


def _storage_files(path: Path) -> tuple[list[Path], str]:
    """Storage files of a directory bag from metadata.yaml, checked to exist."""
    meta_path = path / "metadata.yaml"
    try:
        raw = safe_load(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise _fail(path, f"metadata.yaml cannot be read: {err}") from None
    info = raw.get("rosbag2_bagfile_information") if isinstance(raw, dict) else None
    if not isinstance(info, dict):
        raise _fail(path, "metadata.yaml has no 'rosbag2_bagfile_information' mapping")
    names = info.get("relative_file_paths") or []
    storage = str(info.get("storage_identifier", ""))
    files = [path / Path(str(name)).name for name in names]
    if missing := [f.name for f in files if not f.is_file()]:
        raise _fail(path, f"storage file(s) listed in metadata.yaml are missing: {', '.join(missing)}")
    return files, storage


def _describe_reader_error(err: Exception) -> str:
    text = str(err).strip().rstrip(".")
    if "Serialization format" in text:
        return f"unsupported serialization format ({text}); only 'cdr' can be replayed"
    if "magic" in text.lower() or isinstance(err, sqlite3.DatabaseError):
        return f"corrupt or truncated storage file ({text})"
    return f"cannot be read ({text})"


def open_bag(path: str | Path) -> BagContents:
    """Validate a bag (directory with metadata.yaml, or a bare .mcap/.db3 file)."""
    path = Path(path)
    if not path.exists():
        raise _fail(path, "no such file or directory")
    if path.is_dir():
        if not (path / "metadata.yaml").is_file():
            bare = sorted(p for p in path.iterdir() if p.suffix in _STORAGE_SUFFIXES)
            if len(bare) != 1:
                raise _fail(path, "not a rosbag2: no metadata.yaml (and not exactly one .mcap/.db3 file)")
            # A bag folder whose metadata.yaml was lost: the MCAP/sqlite file alone is readable.
            return open_bag(bare[0])
        files, storage = _storage_files(path)
    elif path.suffix in _STORAGE_SUFFIXES:
        files, storage = [path], "mcap" if path.suffix == ".mcap" else "sqlite3"
    else:
        raise _fail(path, f"not a rosbag2: expected a bag folder, .mcap or .db3, got {path.suffix!r}")
    try:
        with Reader(path) as reader:
            topics = {
                name: TopicInfo(name, info.msgtype or "?", info.msgcount)
                for name, info in reader.topics.items()
            }
            count, start, end = reader.message_count, reader.start_time, reader.end_time
            compressed = bool(reader.compression_mode)
    except (ReaderError, sqlite3.DatabaseError, ValueError, KeyError, EOFError) as err:
        raise _fail(path, _describe_reader_error(err)) from None
    if count == 0:
        names = ", ".join(topics) or "none"
        raise _fail(path, f"the bag is empty: 0 messages recorded (topics: {names})")
    return BagContents(
        path=path,
        storage=storage,
        topics=topics,
        message_count=count,
        start_ns=start,
        end_ns=end,
        compressed=compressed,
        files=tuple(files),
    )


def iter_messages(bag: BagContents, topics: Iterable[str] | None = None) -> Iterator[BagMessage]:
    """Raw CDR messages of ``topics`` (all when None), in recording order."""
    wanted = set(topics) if topics is not None else None
    # Compressed bags need rosbags' directory reader (it decompresses); otherwise read
    # each storage file on its own (see the module docstring).
    sources = [bag.path] if bag.compressed else list(bag.files)
    try:
        for source in sources:
            with Reader(source) as reader:
                connections = [c for c in reader.connections if wanted is None or c.topic in wanted]
                if not connections:
                    continue
                for connection, timestamp, data in reader.messages(connections):
                    yield BagMessage(connection.topic, connection.msgtype, timestamp, bytes(data))
    except (ReaderError, sqlite3.DatabaseError, ValueError, KeyError, EOFError) as err:
        raise _fail(bag.path, _describe_reader_error(err)) from None


def find_events_topic(bag: BagContents, events_topic: str | None = None) -> str:
    """The harness events topic: ``events_topic``, or the one std_msgs/String topic ending in /events."""
    if events_topic is not None:
        info = bag.topics.get(events_topic)
        if info is None:
            raise _fail(bag.path, f"no topic {events_topic!r}; topics: {bag.describe_topics()}")
        if info.msgtype != EVENTS_TYPE:
            raise _fail(bag.path, f"topic {events_topic!r} is {info.msgtype}, expected {EVENTS_TYPE}")
        return events_topic
    found = [t.name for t in bag.topics.values() if t.name.endswith("/events") and t.msgtype == EVENTS_TYPE]
    if not found:
        raise _fail(
            bag.path,
            f"no harness events topic (a {EVENTS_TYPE} topic ending in '/events'); "
            f"topics: {bag.describe_topics()}",
        )
    if len(found) > 1:
        raise _fail(bag.path, f"several events topics {found!r}: choose one with --events-topic")
    return found[0]


MAX_EVENT_DEPTH = 100
"""Deepest nesting of lists and objects an event may have. The harness writes far less,
so a deeper one is no event it wrote; the JSON decoder itself gives up near Python's
recursion limit (about 1000 levels, a ``RecursionError``)."""


@dataclass(frozen=True)
class SkippedMessage:
    """A recorded message the replay could not use, and why."""

    topic: str
    index: int
    """Position among the topic's messages (0 = the first recorded)."""
    timestamp_ns: int
    reason: str

    def describe(self) -> str:
        seconds, nanoseconds = divmod(self.timestamp_ns, 1_000_000_000)
        when = f"{seconds}.{nanoseconds:09d}"
        return f"skipped {self.topic} message {self.index} (recorded at {when}): {self.reason}"


def _nesting_depth(value: Any) -> int:
    """Deepest nesting of lists and dicts in ``value``, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_EVENT_DEPTH:
                stack.extend(
                    (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def _decode_event(typestore: Any, data: bytes) -> tuple[dict[str, Any] | None, str]:
    """The harness event in one recorded message, or None and why not."""
    try:
        text = typestore.deserialize_cdr(data, EVENTS_TYPE).data
    except Exception as err:  # noqa: BLE001 - recorded bytes are untrusted: any decode failure is corruption
        return None, f"not a CDR {EVENTS_TYPE} ({type(err).__name__}: {err})"
    try:
        event = json.loads(text)
    except RecursionError:
        return None, "JSON nested too deeply to decode"
    except ValueError as err:
        return None, f"not JSON ({err})"
    if not isinstance(event, dict) or "type" not in event or "task_id" not in event:
        return None, "not a harness event (a JSON object with 'type' and 'task_id')"
    if _nesting_depth(event) > MAX_EVENT_DEPTH:
        return None, f"nested deeper than {MAX_EVENT_DEPTH} levels"
    return event, ""


def iter_events(
    bag: BagContents,
    events_topic: str | None = None,
    *,
    on_skip: Callable[[SkippedMessage], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Harness event dicts from the events topic, in recording order.

    A message that cannot be used (corrupt CDR, not JSON, JSON nested too deeply, not a
    harness event) is skipped and reported to ``on_skip`` (logged as a warning without
    one): one bad message must not hide the rest of a recording.
    """
    topic = find_events_topic(bag, events_topic)
    typestore = get_typestore(Stores.ROS2_KILTED)
    for index, message in enumerate(iter_messages(bag, [topic])):
        event, why = _decode_event(typestore, message.data)
        if event is None:
            skipped = SkippedMessage(topic, index, message.timestamp_ns, why)
            if on_skip is not None:
                on_skip(skipped)
            else:
                logger.warning("%s: %s", bag.path, skipped.describe())
            continue
        yield event
