"""Exceptions raised by harness_ros.

Every error a user can cause names the file, key, topic or tool it is about. Every
exception class of the package derives from ``HarnessError`` (test/test_errors.py), so a
caller can catch the package's errors apart from bugs; none derives from ``ValueError``.

    HarnessError
     ├── ConfigError             bad YAML / ROS parameters (names file and key)
     ├── ProfileParseError       Embodiment Profile missing a section or item
     ├── SkillError              a SKILL.md breaking the Agent Skills rules
     ├── MemoryStoreError        memory folder unreadable, consolidation output invalid
     │    └── LessonDataError    a ledger line's lesson data that is no lesson (names the field)
     ├── LLMError                provider failure, timeout, unparseable reply
     ├── ToolError               a tool binding that cannot be built (bad type string, ...)
     │    ├── BindingError       a binding that does not fit its interface type
     │    └── FieldError         a value that does not fit its message field
     ├── ServerUnavailableError  an action or service server that did not appear in time
     ├── TaskRejectedError       a second task while one is running
     ├── BagError                a rosbag that is missing, corrupt or lacks what replay needs
     ├── ReportError             a run folder that cannot be read, a report not written
     ├── TrajectoryFormatError   a trajectory file that is not one (names the file and field)
     ├── LocalModelError         the local model or its runtime not installed or not checking out
     ├── ClientMessageError      a client message (instruction, revise, cancel, approval) refused
     ├── FrameDecodeError        a sensor message that cannot be turned into an image
     ├── AmbiguousPublisherError more than one endpoint claiming to be the harness node
     ├── YamlTooLarge            a YAML document whose aliases expand past the budget (a yaml.YAMLError too)
     └── ConsoleRefusal          a write the operator console refuses (reason and HTTP status)
"""

from __future__ import annotations

import yaml

__all__ = [
    "AmbiguousPublisherError",
    "BagError",
    "BindingError",
    "ClientMessageError",
    "ConfigError",
    "ConsoleRefusal",
    "FieldError",
    "FrameDecodeError",
    "HarnessError",
    "LLMError",
    "LessonDataError",
    "LocalModelError",
    "MemoryStoreError",
    "ProfileParseError",
    "ReportError",
    "ServerUnavailableError",
    "SkillError",
    "TaskRejectedError",
    "ToolError",
    "TrajectoryFormatError",
    "YamlTooLarge",
]


class HarnessError(Exception):
    """Base class of every error raised on purpose by harness_ros."""


class ConfigError(HarnessError):
    """The configuration (YAML file or ROS parameters) is invalid."""


class ProfileParseError(HarnessError):
    """The Embodiment Profile is missing a required section or item, or it is empty."""


class SkillError(HarnessError):
    """A skill folder or its SKILL.md breaks a rule."""


class MemoryStoreError(HarnessError):
    """The memory folder cannot be read or written, or a consolidation result is invalid."""


class LessonDataError(MemoryStoreError):
    """A ledger line's lesson data part is not a lesson: ``field`` names where, the message what."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class LLMError(HarnessError):
    """The model provider failed, timed out or replied with something unusable."""


class ToolError(HarnessError):
    """A tool binding cannot be built."""


class ServerUnavailableError(HarnessError):
    """An action or service server did not appear within its wait timeout."""


class TaskRejectedError(HarnessError):
    """A task was started while another task is running."""


class BagError(HarnessError):
    """A rosbag is missing, corrupt, or lacks the topics replay needs."""


class BindingError(ToolError):
    """A binding that does not fit its interface type (names tool and field path)."""


class FieldError(ToolError):
    """A value does not fit the message field it was given for (names the field path)."""


class ReportError(HarnessError):
    """A run folder cannot be read, or the report cannot be written."""


class TrajectoryFormatError(HarnessError):
    """A trajectory file (or object) that is not a trajectory; names the file and field."""


class LocalModelError(HarnessError):
    """The local model or its runtime cannot be installed or does not check out."""


class ClientMessageError(HarnessError):
    """A client message that is refused; ``str()`` says what was wrong."""


class FrameDecodeError(HarnessError):
    """A sensor message cannot be turned into an image (bad encoding, size or data)."""


class AmbiguousPublisherError(HarnessError):
    """More than one endpoint on the topic claims to be the harness node."""


class YamlTooLarge(HarnessError, yaml.YAMLError):  # noqa: N818  the name callers import since 2ba9a90
    """A YAML document whose aliases expand past ``yaml_safe.MAX_NODES``, or refer to
    themselves. A ``yaml.YAMLError`` too, so each caller's handler of bad YAML names its file."""


class ConsoleRefusal(HarnessError):  # noqa: N818  a refusal the page shows, not a program error
    """A write the operator console refuses, with the reason and the HTTP status to answer with."""

    def __init__(self, reason: str, status: int = 409) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
