"""The cost of reading every frame of a progress bar: a 16 KiB chunk, and a line still
being written.

containerd writes a tqdm line 16 KiB at a time (about 200 frames); every second of the
bar's clock in it is a rate sample (docs/logs.md). This measures, in process:

* ``parse_message`` and ``newest_bar`` on one such chunk (the frames' count and clock read
  for all of them, the whole frame for the newest);
* the log source polling a plain file whose tqdm line has no newline yet and grows by a
  second of frames each poll, once the line is some 90 KiB long: each poll reads the frames
  drawn since the last one, against ``newest_bar`` re-reading the whole line.

Run: ``python -m bench.log_frames``. It measures; it asserts nothing.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

from exporter.core.tracker import Tracker
from exporter.logs.parse import newest_bar, parse_message
from exporter.logs.source import LogSource, standalone_targets
from exporter.plumbing.ingest import Ingestor
from exporter.plumbing.stats import ExporterStats

T0 = 1.8e9


def _frames(first: int, count: int, per_second: int = 10) -> str:
    """``count`` tqdm frames from step ``first``, ``per_second`` of them per clock second."""
    out = []
    for k in range(count):
        n = first + k
        second = n // per_second
        out.append(
            f"\rtrain: {n * 100 // 10**6:3d}%|#  | {n}/1000000 "
            f"[{second // 60:02d}:{second % 60:02d}<99:00,  9.00it/s, loss=6.9]"
        )
    return "".join(out)


def _median_ms(fn: Callable[[], object], repeat: int = 50) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times) * 1e3


def chunk() -> dict[str, float]:
    """Milliseconds to read one 16 KiB chunk of frames."""
    text = _frames(1, 16 * 1024 // 60)[: 16 * 1024]  # cut as containerd cuts it
    return {
        "chunk_bytes": len(text),
        "parse_message_ms": _median_ms(lambda: parse_message(text, T0)),
        "newest_bar_ms": _median_ms(lambda: newest_bar(text, T0)),
    }


def growing_line(polls: int = 50) -> dict[str, float]:
    """Milliseconds per poll of a file whose unterminated tqdm line is long and grows."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        first = 1
        line = _frames(first, 1000)  # some 90 KiB
        first += line.count("\r")
        log.write_text(line)
        now = [T0]
        source = LogSource(
            standalone_targets([str(log)], "bench"),
            Ingestor(Tracker(), ExporterStats(), lambda: now[0]),
            files_are_runs=True,
        )
        source.poll()
        per_poll, whole = [], []
        for _ in range(polls):
            more = _frames(first, 10)
            first += 10
            line += more
            with log.open("a") as f:
                f.write(more)
            now[0] += 1.0
            start = time.perf_counter()
            source.poll()
            per_poll.append(time.perf_counter() - start)
            start = time.perf_counter()
            newest_bar(line, now[0])
            whole.append(time.perf_counter() - start)
    return {
        "line_bytes": len(line),
        "poll_ms": median(per_poll) * 1e3,
        "newest_bar_whole_line_ms": median(whole) * 1e3,
    }


def main() -> int:
    results = {"chunk": chunk(), "growing_line": growing_line()}
    c, g = results["chunk"], results["growing_line"]
    print(
        f"16 KiB chunk ({c['chunk_bytes']:.0f} B): parse_message {c['parse_message_ms']:.2f} ms, "
        f"newest_bar {c['newest_bar_ms']:.2f} ms"
    )
    print(
        f"unterminated line of {g['line_bytes'] / 1024:.0f} KiB growing 10 frames a poll: "
        f"poll {g['poll_ms']:.2f} ms "
        f"(re-reading the whole line: {g['newest_bar_whole_line_ms']:.2f} ms)"
    )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
