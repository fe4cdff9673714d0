"""Run reports: one self-contained HTML page per task's run folder.

``render_report(run_dir)`` returns the page; ``write_report(run_dir, output)`` writes it
(default ``<run_dir>/report.html``) and returns the path. Both raise ``ReportError``
(a ``HarnessError``) naming the folder or the missing file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness_ros.model.contracts import ProviderLookup
from harness_ros.report.html import model_label, render_html
from harness_ros.report.run import ReportError, RunRecord, load_run

__all__ = [
    "REPORT_FILE",
    "ReportError",
    "RunRecord",
    "load_run",
    "model_label",
    "render_report",
    "write_report",
]

REPORT_FILE = "report.html"


def render_report(run_dir: Path, providers: ProviderLookup | None = None) -> str:
    """The HTML report of the run folder ``run_dir`` (``providers``: see ``render_html``)."""
    return render_html(load_run(Path(run_dir)), providers)


def write_report(
    run_dir: Path, output: Path | None = None, *, providers: ProviderLookup | None = None
) -> Path:
    """Write the report (atomically) to ``output``, default ``<run_dir>/report.html``."""
    page = render_report(run_dir, providers)
    target = Path(output) if output is not None else Path(run_dir) / REPORT_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(page)
            Path(tmp).replace(target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        msg = f"cannot write the report {str(target)!r}: {err.strerror or err}"
        raise ReportError(msg) from None
    return target
