"""Exceptions raised by harness_ros.

Every error a user can cause names the file, key, topic or tool it is about.

    HarnessError
     ├── ConfigError             bad YAML / ROS parameters (names file and key)
     ├── ProfileParseError       Embodiment Profile missing a section or item
     ├── SkillError              a SKILL.md breaking the Agent Skills rules
     ├── MemoryStoreError        memory folder unreadable, consolidation output invalid
     ├── LLMError                provider failure, timeout, unparseable reply
     ├── ToolError               a tool binding that cannot be built (bad type string, ...)
     ├── ServerUnavailableError  an action or service server that did not appear in time
     ├── TaskRejectedError       a second task while one is running
     └── BagError                a rosbag that is missing, corrupt or lacks what replay needs
"""

from __future__ import annotations

__all__ = [
    "BagError",
    "ConfigError",
    "HarnessError",
    "LLMError",
    "MemoryStoreError",
    "ProfileParseError",
    "ServerUnavailableError",
    "SkillError",
    "TaskRejectedError",
    "ToolError",
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
