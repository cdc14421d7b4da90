"""Status-directory polling cost: the exporter process reading a directory
of N status files every second, with the files unchanged (the common case: most runs report
every few seconds to minutes, the directory is polled every second).

Measures the exporter's CPU per second over 20 s, after the first pass has parsed every
file, for N = 1,000 and 10,000 (the default ``max_files``). Before the fix the pass compared
names against a list, so 10,000 unchanged files cost 1.7 s of CPU per 1 s poll.

Run: ``python -m bench.status_dir [--files 1000 10000] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from .common import free_port, proc_sample, start_exporter, stop


def write_files(directory: Path, count: int) -> None:
    for i in range(count):
        body = {"step": 100 + i, "max_steps": 10_000, "loss": 1.5, "metrics": {"mfu": 0.4}}
        (directory / f"run-{i:05d}.json").write_text(json.dumps(body))


def measure(files: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_files(directory, files)
        port = free_port()
        proc = start_exporter(
            port,
            "--status-dir",
            str(directory),
            "--poll-interval",
            "1s",
            env_extra={"TPE_MAX_RUNS": str(max(files, 2000))},
        )
        try:
            time.sleep(5)  # the first pass parses every file
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/runs") as resp:
                tracked = len(json.load(resp)["runs"])
            before = proc_sample(proc.pid)
            time.sleep(seconds)
            after = proc_sample(proc.pid)
        finally:
            stop(proc)
    cpu = after.cpu_seconds - before.cpu_seconds
    return {
        "files": files,
        "runs_tracked": tracked,
        "cpu_seconds_per_second": cpu / seconds,
        "rss_mib": after.rss_bytes / 2**20,
    }


def run(sizes: list[int], seconds: float = 20.0) -> list[dict[str, Any]]:
    return [measure(n, seconds) for n in sizes]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    for result in run(args.files, args.seconds):
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
