"""``training-progress-exporter inspect PATH...``: what the exporter would read from a log or
status file, as JSON, with the parsers that matched. The tool to run when a job shows nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from ..api import json_number
from ..model import KUBEFLOW_MAX_BODY_BYTES, VALUE_FIELDS, ProgressReport, ReportError, parse_bytes
from .accumulate import LogAccumulator
from .cri import CriJoiner
from .parse import MAX_MESSAGE, parse_line


def report_dict(r: ProgressReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: json_number(getattr(r, k)) for k in VALUE_FIELDS if getattr(r, k) is not None
    }
    if r.metrics:
        out["metrics"] = {k: json_number(v) for k, v in r.metrics}
    if r.final:
        out["final"] = True
    return out


def _lines(fh: BinaryIO, limit: int) -> Iterator[str]:
    """Physical lines, each cut at ``limit`` bytes (the rest of an overlong line is skipped)."""
    while True:
        raw = fh.readline(limit)
        if not raw:
            return
        if not raw.endswith(b"\n"):
            while (rest := fh.readline(limit)) and not rest.endswith(b"\n"):
                pass  # drain an overlong line without keeping it
        yield raw.decode("utf-8", "replace")


def messages(fh: BinaryIO, now: float) -> Iterator[tuple[str, float | None]]:
    """Log messages with their CRI time, joined exactly as the log source joins them
    (:class:`~exporter.logs.cri.CriJoiner`), pending partial lines at the end included."""
    joiner = CriJoiner()
    for line in _lines(fh, MAX_MESSAGE * 4):
        message = joiner.push(line, now)
        if message is not None:
            yield message.text, message.time
    for message in joiner.pending():
        yield message.text, message.time


def inspect_path(path: str, now: float | None = None) -> dict[str, Any]:
    """The report ``path`` yields: as a status file if it is one, else as a log."""
    now = time.time() if now is None else now
    with open(path, "rb") as fh:
        head = fh.read(KUBEFLOW_MAX_BODY_BYTES + 1)
        if head.lstrip().startswith(b"{") and len(head) <= KUBEFLOW_MAX_BODY_BYTES:
            try:
                parsed = parse_bytes(head, now)
            except ReportError:
                parsed = None
            if parsed is not None and (
                parsed.report.format != "native" or b"\n" not in head.strip()
            ):
                return {
                    "path": path,
                    "kind": "status-file",
                    "format": parsed.report.format,
                    "dropped": list(parsed.problems),
                    "report": report_dict(parsed.report),
                }
        fh.seek(0)
        acc = LogAccumulator()
        count = 0
        for i, (msg, at) in enumerate(messages(fh, now)):
            count += 1
            found = parse_line(msg, now)
            if found is not None:
                acc.feed(found, at if at is not None else float(i))
    chosen = acc.training_bar()
    bar = None
    if chosen is not None and chosen[1].last is not None:
        b = chosen[1].last
        bar = {
            "prefix": b.prefix,
            "n": b.n,
            "total": b.total,
            "rate": b.rate,
            "advances": chosen[1].advances,
        }
    return {
        "path": path,
        "kind": "log",
        "lines": count,
        "matched": dict(sorted(acc.counts.items())),
        "training_bar": bar,
        "report": report_dict(acc.report()),
    }


def main(paths: list[str]) -> int:
    """Print one JSON document per path; exit 1 if any path could not be read."""
    status = 0
    for path in paths:
        try:
            doc = inspect_path(path)
        except OSError as exc:
            doc = {"path": path, "error": exc.strerror or str(exc)}
            status = 1
        print(json.dumps(doc, indent=2))
    return status
