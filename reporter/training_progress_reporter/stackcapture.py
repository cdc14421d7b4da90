"""Where a stuck run is: every thread's stack of this process (file, line, function and
source line; never a value), and the PyTorch Flight Recorder's settings, captured when the
exporter asks with the ``stacks`` directive (docs/report-format.md#stacks). Standard
library only."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Collection, Mapping
from typing import Any

STACK_THREADS = 16
STACK_FRAMES = 48
STACK_TEXT = 200
STACK_BYTES = 60 * 1024  # under the exporter's 64 KiB body limit
# PyTorch's Flight Recorder is on when one of these sets its buffer size (entries kept).
FLIGHT_RECORDER_ENV = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")


def capture(
    rank: int,
    exclude: Collection[int] = (),
    max_threads: int = STACK_THREADS,
    max_frames: int = STACK_FRAMES,
    max_bytes: int = STACK_BYTES,
) -> bytes:
    """The stacks body (docs/report-format.md#stacks) of this process as JSON: every
    thread but those whose ident is in ``exclude`` (the reporter's own).

    Taken by the background thread, which still runs while the training thread is blocked
    (in a collective, a DataLoader, a lock). Only where each frame is (file, line, function
    and its source line) is sent, never a local value; bounded to ``max_threads`` threads
    (the main thread first), the innermost ``max_frames`` frames of each, and ``max_bytes``
    of JSON, shedding source lines, then threads, then outer frames to fit."""
    names = {t.ident: t.name for t in threading.enumerate()}
    main = threading.main_thread().ident
    threads: list[dict[str, Any]] = []
    for ident, frame in sys._current_frames().items():
        if ident in exclude:
            continue
        summary = traceback.extract_stack(frame)[-max_frames:]
        threads.append(
            {
                "name": names.get(ident, "")[:STACK_TEXT],
                "frames": [
                    {
                        "file": f.filename[-STACK_TEXT:],
                        "line": f.lineno or 0,
                        "function": f.name[:STACK_TEXT],
                        "code": (f.line or "").strip()[:STACK_TEXT],
                    }
                    for f in summary
                ],
                "_main": ident == main,
            }
        )
    # The main thread first (it trains, almost always), then the deepest stacks.
    threads.sort(key=lambda t: (not t["_main"], -len(t["frames"])))
    for t in threads:
        del t["_main"]
    doc: dict[str, Any] = {"rank": rank, "time": time.time(), "threads": threads[:max_threads]}
    recorded = flight_recorder()
    if recorded:
        doc["collective"] = recorded
    body = json.dumps(doc).encode()
    if len(body) > max_bytes:
        for t in doc["threads"]:
            for f in t["frames"]:
                f["code"] = ""
        body = json.dumps(doc).encode()
    while len(body) > max_bytes and len(doc["threads"]) > 1:
        doc["threads"].pop()
        body = json.dumps(doc).encode()
    while len(body) > max_bytes and doc["threads"] and doc["threads"][0]["frames"]:
        doc["threads"][0]["frames"].pop(0)  # the outermost frames go last
        body = json.dumps(doc).encode()
    return body


def flight_recorder(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """What PyTorch's Flight Recorder says of this rank's default process group: the
    collective in flight (``op``, ``seq``) and the last it finished (``completed``). None
    where torch is not imported, torch.distributed is not initialized, or the recorder is off
    (it records nothing unless ``TORCH_FR_BUFFER_SIZE`` is set). Never imports torch, never
    raises."""
    env = os.environ if environ is None else environ
    torch = sys.modules.get("torch")
    if torch is None or not any(
        env.get(name, "0") not in ("", "0") for name in FLIGHT_RECORDER_ENV
    ):
        return None
    try:
        dist = torch.distributed
        if not dist.is_available() or not dist.is_initialized():
            return None
        doc = json.loads(torch._C._distributed_c10d._dump_fr_trace_json(True, False))
        entries = [
            e
            for e in doc.get("entries") or []
            if isinstance(e, dict) and not e.get("is_p2p") and str(e.get("pg_id", 0)) == "0"
        ]
        out: dict[str, Any] = {}
        status = (doc.get("pg_status") or {}).get("0") or {}
        completed = int(status.get("last_completed_collective", -1))
        if completed >= 0:
            out["completed"] = completed
        flying = [e for e in entries if not e.get("retired")]
        if flying:
            last = flying[-1]
            out["op"] = str(last.get("profiling_name", "")).rsplit(":", 1)[-1][:32]
            seq = int(last.get("collective_seq_id", -1))
            if seq >= 0:
                out["seq"] = seq
        return out or None
    except Exception:  # a recorder we cannot read says nothing
        return None
