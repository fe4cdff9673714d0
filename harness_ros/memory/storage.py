"""Crash-safe file primitives of the memory folder.

A durable file is only ever replaced whole: write a temp file in the same folder,
flush, fsync, ``os.replace``, fsync the folder. A reader (or a process killed
mid-write) therefore sees the old file or the new one, never a torn one. Appends
(the audit log) are one ``write`` on an ``O_APPEND`` descriptor. Read-modify-write
cycles are serialised across processes by ``memory_lock``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from harness_ros.errors import MemoryStoreError

__all__ = ["append_bytes", "atomic_write_bytes", "memory_lock", "read_text", "remove_stale_temp_files"]

_TEMP_SUFFIX = ".tmp"
_STALE_TEMP_AGE_S = 3600.0


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself durable; not every platform lets a folder be opened.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
    except OSError as err:
        raise MemoryStoreError(f"Cannot write {str(path)!r}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(temp_name).replace(path)
    except OSError as err:
        with contextlib.suppress(OSError):
            Path(temp_name).unlink()
        raise MemoryStoreError(f"Cannot write {str(path)!r}: {err.strerror}") from None
    _fsync_dir(folder)


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` with one write; a torn earlier line is closed off first."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as err:
        raise MemoryStoreError(f"Cannot append to {str(path)!r}: {err.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size:
            with path.open("rb") as reader:
                reader.seek(size - 1)
                if reader.read(1) != b"\n":
                    data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    except OSError as err:
        raise MemoryStoreError(f"Cannot append to {str(path)!r}: {err.strerror}") from None
    finally:
        os.close(fd)


def read_text(path: Path) -> str | None:
    """The UTF-8 text of ``path``, or None when it does not exist."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise MemoryStoreError(f"{str(path)!r} is not UTF-8 text: {err.reason} at byte {err.start}") from None
    except OSError as err:
        raise MemoryStoreError(f"Cannot read {str(path)!r}: {err.strerror}") from None


@contextlib.contextmanager
def memory_lock(root: Path, *, timeout_s: float) -> Iterator[None]:
    """Inter-process lock over one memory folder."""
    lock = FileLock(str(root / ".lock"), timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        msg = f"Memory folder {str(root)!r} is locked by another process for more than {timeout_s:g}s"
        raise MemoryStoreError(msg) from None
    try:
        yield
    finally:
        lock.release()


def remove_stale_temp_files(folder: Path) -> None:
    """Delete temp files left by writers killed mid-write (old enough to be abandoned)."""
    now = time.time()
    for temp in folder.glob(f".*{_TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            if now - temp.stat().st_mtime > _STALE_TEMP_AGE_S:
                temp.unlink()
