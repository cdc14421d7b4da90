"""``training-progress-exporter inspect PATH...``: what the exporter would read from a log or
status file, as JSON, with the parsers that matched. The tool to run when a job shows nothing.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from ..core.model import (
    KUBEFLOW_MAX_BODY_BYTES,
    VALUE_FIELDS,
    ProgressReport,
    ReportError,
    json_number,
    json_safe,
    non_finite_fields,
)
from ..core.wire import parse_bytes
from .accumulate import LogAccumulator
from .cri import CriJoiner, Message, cannot_be_partial, cri_head
from .formats.table import ROW_BYTES
from .lines import NO_EXTRA, Extra, Format
from .parse import QuickScan, parse_message
from .tail import FileTail


def report_dict(r: ProgressReport) -> dict[str, Any]:
    """What ``r`` says, as JSON can hold it: a non-finite value (a diverged loss) is null
    there and named in ``non_finite`` (``{"loss": "NaN"}``), as the runs API does."""
    raw = {
        k: getattr(r, k)
        for k in (*VALUE_FIELDS, "checkpoint_step", "checkpoint_timestamp", "checkpoint_seconds")
        if getattr(r, k) is not None
    }
    out: dict[str, Any] = {k: json_number(v) for k, v in raw.items()}
    if r.metrics:
        out["metrics"] = {k: json_number(v) for k, v in r.metrics}
    if r.final:
        out["final"] = True
    if r.failure:
        out["failure"] = r.failure  # the exception a traceback ending the log names
    non_finite = non_finite_fields({**raw, **{f"metrics.{k}": v for k, v in r.metrics}})
    if non_finite:
        out["non_finite"] = non_finite
    return out


def messages(
    path: str, now: float, skipped: list[int] | None = None, rows: list[bool] | None = None
) -> Iterator[Message]:
    """Log messages with their CRI time, read and joined exactly as the log source reads
    them (one :class:`~exporter.logs.tail.FileTail` from the start of the file, one
    :class:`~exporter.logs.cri.CriJoiner`, the same trimming of overlong lines), then what
    is still pending at the end: partial CRI lines and a last line without a newline.

    With ``skipped`` (a one-item counter), whole lines in which no parser could find
    anything (none of :data:`~exporter.logs.parse.HINTS` in their bytes) are counted there
    instead of being decoded and yielded: most of a log, and most of the time it takes.
    Once ``rows`` (a one-item flag) is set, a training table's header was read, and lines
    that may be its rows of bare numbers (:data:`~exporter.logs.formats.table.ROW_BYTES`)
    are yielded too."""
    tail = FileTail(path, backfill=1 << 62, budget=4 << 20)  # the whole file, 4 MiB at a time
    joiner = CriJoiner()
    # Bound once: this loop runs for every line of the file, most of them passed over.
    hinted, waits_on_stream, push_head = (
        QuickScan().hinted,
        joiner.waits_on_stream,
        joiner.push_head,
    )
    try:
        while True:
            lines = tail.read()
            if not lines and tail.at_end:
                break
            for raw in lines:
                start, stream, partial = cri_head(raw)
                if (
                    skipped is not None
                    and (
                        # A whole CRI line of a stream with no partial line waiting, or a
                        # line of another shape that can be neither (a partial chunk is
                        # joined whatever it holds: no need to look into it).
                        not partial and not waits_on_stream(stream)
                        if stream
                        else cannot_be_partial(raw) and not joiner.waits_on(raw)
                    )
                    and not hinted(raw, start)
                    and not (rows and rows[0] and ROW_BYTES.search(raw))
                ):
                    skipped[0] += 1
                    continue
                message = (
                    push_head(raw, start, stream, partial, now)
                    if stream
                    else joiner.push(raw.decode("utf-8", "replace"), now)
                )
                if message is not None:
                    yield message
        yield from joiner.pending()
        if tail.unterminated:
            yield Message(tail.unterminated.decode("utf-8", "replace"))
    finally:
        tail.close()


def read_log(path: str, now: float, extra: Extra = NO_EXTRA) -> tuple[LogAccumulator, int, int]:
    """``path`` read as a log, the way the log source reads it: the accumulator that took
    its lines, how many messages were parsed, and how many lines were passed over unread
    (none of the formats' hints in them; with formats users configured, which have no
    hints, every line is read)."""
    acc = LogAccumulator()
    count = 0
    skipped = [0]
    rows = [False]
    quick = extra == NO_EXTRA
    for i, message in enumerate(messages(path, now, skipped if quick else None, rows)):
        count += 1
        found = parse_message(message.text, now, extra)
        if found:
            # Bars are told apart by how recently each advanced: in the file's time.
            at = message.time
            for report in found:
                acc.feed(report, at if at is not None else float(i))
            rows[0] = bool(acc.tables.header)
    return acc, count, skipped[0]


def inspect_path(path: str, now: float | None = None, extra: Extra = NO_EXTRA) -> dict[str, Any]:
    """The report ``path`` yields: as a status file if it is one, else as a log (with the
    formats users configured, ``extra``)."""
    now = time.time() if now is None else now
    logged: tuple[LogAccumulator, int, int] | None = None
    with open(path, "rb") as fh:
        head = fh.read(KUBEFLOW_MAX_BODY_BYTES + 1)
        if head.lstrip().startswith(b"{") and len(head) <= KUBEFLOW_MAX_BODY_BYTES:
            try:
                parsed = parse_bytes(head, now)
            except ReportError:
                parsed = None
            status = parsed is not None and (
                parsed.report.format != "native" or b"\n" not in head.strip()
            )
            # One JSON line is a status file, unless read as a log it gives the step the
            # report format's own keys did not (fairseq's --log-format json:
            # "num_updates": "33700"): then it is a log, read once.
            native = parsed is not None and parsed.report.format == "native"
            if status and native and parsed is not None and parsed.report.step is None:
                logged = read_log(path, now, extra)
                status = logged[0].report().step is None
            if status and parsed is not None:
                return {
                    "path": path,
                    "kind": "status-file",
                    "format": parsed.report.format,
                    "dropped": list(parsed.problems),
                    "report": report_dict(parsed.report),
                }
    acc, count, skipped = logged if logged is not None else read_log(path, now, extra)
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
        "lines": count + skipped,
        "matched": dict(sorted(acc.counts.items())),
        "training_bar": bar,
        "report": report_dict(acc.report()),
    }


SUBDOCS = ("metrics", "non_finite")  # a report's keys that are no value of their own


def as_text(doc: dict[str, Any]) -> str:
    """One path's findings for a person: where, what kind, what matched, and the values
    read (the JSON's content, on a few lines)."""
    head = f"{doc['path']}: "
    if "error" in doc:
        return head + f"cannot read: {doc['error']}"
    if doc["kind"] == "status-file":
        lines = [head + f"status file, {doc['format']} format"]
        if doc["dropped"]:
            lines.append("  dropped: " + ", ".join(map(str, doc["dropped"])))
    else:
        matched = ", ".join(f"{k} {v}" for k, v in doc["matched"].items()) or "nothing"
        lines = [head + f"log, {doc['lines']} lines, matched: {matched}"]
        bar = doc["training_bar"]
        if bar:
            lines.append(f"  training bar: {bar['prefix']!r} {bar['n']}/{bar['total']}")
    report = doc["report"]
    named = report.get("non_finite", {})
    values = [f"{k} {named.get(k, v)}" for k, v in report.items() if k not in SUBDOCS]
    lines.append("  read: " + (", ".join(values) if values else "no progress"))
    if report.get("metrics"):
        metrics = report["metrics"].items()
        lines.append(
            "  metrics: " + ", ".join(f"{k} {named.get(f'metrics.{k}', v)}" for k, v in metrics)
        )
    return "\n".join(lines)


def main(
    paths: list[str],
    formats: tuple[Format, ...] = (),
    first: str | None = None,
    output: str = "json",
) -> int:
    """Print what each path yields: one JSON value (the path's object, or an array of them
    for several paths, so the output is always one document a JSON reader takes), or with
    ``output="text"`` a few lines per path. Exit 1 if any path could not be read, 2 if
    ``first`` names no format in ``formats``."""
    extra = Extra(after=formats) if formats else NO_EXTRA
    if first is not None:
        chosen = [f for f in formats if f.name == first]
        if not chosen:
            names = ", ".join(f.name for f in formats) or "none configured"
            print(f"inspect: no log format {first!r} in log_formats ({names})", file=sys.stderr)
            return 2
        extra = Extra(first=(chosen[0],), after=formats)
    status = 0
    docs = []
    for path in paths:
        try:
            doc = inspect_path(path, extra=extra)
        except OSError as exc:
            doc = {"path": path, "error": exc.strerror or str(exc)}
            status = 1
        except ReportError as exc:
            # A symlink is not followed (the log source's rule for host files): name its
            # target instead.
            doc = {"path": path, "error": exc.message}
            status = 1
        if output == "text":
            print(as_text(json_safe(doc)), flush=True)  # each path as soon as it is read
        docs.append(json_safe(doc))
    if output == "json":
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2, allow_nan=False))
    return status
