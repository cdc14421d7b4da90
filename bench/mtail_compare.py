"""Log tailing against mtail, side by side in one run, on the same input.

A 250 MB CRI log of a Transformers-like run (tqdm frames, Trainer log dicts, and 70 %
unrelated lines) is appended to one file while both tail it: Debian's ``mtail`` with a
program that extracts step, total and loss by regex, and the exporter with ``--log``. Both
must end with the same final step, total and loss; the CPU time of each process is read from
/proc. Freshness: after the bulk, one more progress line is appended and the time until it
shows in the exporter's /metrics is measured.

Run: ``python -m bench.mtail_compare [--megabytes 250]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from .common import free_port, proc_sample, start_exporter, stop, wait_http

MTAIL_PROGRAM = r"""
gauge training_step
gauge training_max_steps
gauge training_loss
/\d+%\|[^|]*\|\s*(?P<n>\d+)\/(?P<total>\d+) \[/ {
  training_step = $n
  training_max_steps = $total
}
/'loss': '(?P<loss>[0-9.]+)'/ {
  training_loss = $loss
}
"""


def lines(total_bytes: int, seed: int = 1) -> Any:
    """CRI lines: 70 % unrelated, the rest tqdm frames and Trainer dicts, in order."""
    rng = random.Random(seed)
    written, step, total = 0, 0, 1_000_000
    while written < total_bytes:
        r = rng.random()
        if r < 0.70:
            msg = f"INFO worker {rng.randint(0, 7)} data shard {rng.randint(0, 10**6)} loaded in {rng.random():.3f}s"
        elif r < 0.97:
            step += 1
            pct = step * 100 // total
            msg = f"{pct:3d}%|{'█' * (pct // 10):10s}| {step}/{total} [01:00<10:00,  4.00it/s]"
        else:
            msg = f"{{'loss': '{2 + rng.random():.4f}', 'grad_norm': '1.0', 'learning_rate': '5e-05', 'epoch': '0.1'}}"
        line = f"2026-11-29T18:20:54.123456789Z stdout F {msg}\n"
        written += len(line)
        yield line, step, total


def _clock(seconds: int) -> str:
    """A duration as tqdm prints it: ``mm:ss``, or ``h:mm:ss`` from an hour on."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _frame(step: int, total: int) -> str:
    """One tqdm frame at ``step`` of ``total``, drawn at 4 it/s (``\r`` first)."""
    pct = step * 100 // total
    clock = f"{_clock(step // 4)}<{_clock((total - step) // 4)}"
    return f"\r{pct:3d}%|{'█' * (pct // 10):10s}| {step}/{total} [{clock},  4.00it/s]"


def _stdout_line(rng: random.Random) -> str:
    """A stdout ``F`` line: mostly unrelated, some Trainer dicts."""
    if rng.random() < 0.93:
        msg = f"INFO worker {rng.randint(0, 7)} data shard {rng.randint(0, 10**6)} loaded in {rng.random():.3f}s"
    else:
        msg = f"{{'loss': '{2 + rng.random():.4f}', 'grad_norm': '1.0', 'learning_rate': '5e-05', 'epoch': '0.1'}}"
    return f"2026-11-29T18:20:54.123456789Z stdout F {msg}\n"


def _cri_tag(left: int, rng: random.Random, most: int) -> tuple[str, int]:
    """The CRI tag of a stream's next piece, of ``left`` pieces to its line's end: ``P``
    until the last, ``F`` for it; then the next line's count, 1 to ``most``."""
    left -= 1
    if left > 0:
        return "P", left
    return "F", rng.randint(1, most)


def pchunk_lines(total_bytes: int, seed: int = 1) -> Any:
    """CRI lines as containerd writes a run whose tqdm bar goes to stderr: a quarter of the
    lines are 16 KiB chunks of bar frames (``\r`` between them; ``P`` until the bar closes
    after 1 to 60 of them, then ``F``), the rest stdout ``F`` lines (unrelated, Trainer
    dicts)."""
    rng = random.Random(seed)
    written, step, total = 0, 0, 10_000_000
    chunks_left = rng.randint(1, 60)
    while written < total_bytes:
        if rng.random() < 0.25:
            frames = []
            size = 0
            while size < 16 * 1024 - 120:
                step += 1
                frame = _frame(step, total)
                frames.append(frame)
                size += len(frame.encode())
            tag, chunks_left = _cri_tag(chunks_left, rng, 60)
            line = f"2026-11-29T18:20:54.123456789Z stderr {tag} {''.join(frames)}\n"
        else:
            line = _stdout_line(rng)
        written += len(line.encode())
        yield line, step, total


def crio_lines(total_bytes: int, seed: int = 1) -> Any:
    """CRI lines as CRI-O's conmon writes a run whose tqdm bar goes to stderr: it writes what
    each read of the pipe returned, so every frame the bar draws (``\r`` and no newline) is
    its own short ``P`` line, the bar's last frame an ``F``; a quarter of the lines are such
    frames, bars of 1 to 2,000 frames, the rest stdout ``F`` lines (unrelated, Trainer
    dicts)."""
    rng = random.Random(seed)
    written, step, total = 0, 0, 10_000_000
    frames_left = rng.randint(1, 2000)
    while written < total_bytes:
        if rng.random() < 0.25:
            step += 1
            frame = _frame(step, total)
            tag, frames_left = _cri_tag(frames_left, rng, 2000)
            line = f"2026-11-29T18:20:54.123456789Z stderr {tag} {frame}\n"
        else:
            line = _stdout_line(rng)
        written += len(line.encode())
        yield line, step, total


SHAPES = {"lines": lines, "pchunks": pchunk_lines, "crio": crio_lines}


def mtail_values(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = {}
    for name in ("training_step", "training_max_steps", "training_loss"):
        m = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", text, re.M)
        if m:
            out[name] = float(m.group(1))
    return out


def ours(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/runs", timeout=10) as resp:
        runs = json.loads(resp.read())["runs"]
    return runs[0] if runs else {}


def run(megabytes: int = 250, shape: str = "lines") -> dict[str, Any]:
    mtail = shutil.which("mtail")
    if not mtail:
        raise SystemExit("mtail is not installed (apt-get install mtail)")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        log.write_text("")
        progs = Path(tmp) / "progs"
        progs.mkdir()
        (progs / "training.mtail").write_text(MTAIL_PROGRAM)
        mport, oport = free_port(), free_port()
        mproc = subprocess.Popen(
            [
                mtail,
                "-progs",
                str(progs),
                "-logs",
                str(log),
                "-port",
                str(mport),
                "-address",
                "127.0.0.1",
                "-poll_interval",
                "250ms",
                "-logtostderr",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        oproc = start_exporter(oport, "--log", str(log), "--poll-interval", "1s")
        try:
            wait_http(f"http://127.0.0.1:{mport}/metrics")
            m0, o0 = proc_sample(mproc.pid), proc_sample(oproc.pid)
            t0 = time.monotonic()
            last = (0, 0)
            with open(log, "a", buffering=1024 * 1024) as fh:
                for line, step, total in SHAPES[shape](megabytes * 1024 * 1024):
                    fh.write(line)
                    last = (step, total)
            final_loss = "2.5000"
            with open(log, "a") as fh:
                fh.write(
                    f"2026-11-29T18:20:55.000000000Z stdout F {{'loss': '{final_loss}', 'epoch': '1.0'}}\n"
                )
            # Wait until both have caught up with the end of the file.
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                mv, ov = mtail_values(mport), ours(oport)
                if (
                    mv.get("training_loss") == float(final_loss)
                    and ov.get("loss") == float(final_loss)
                    and mv.get("training_step") == last[0]
                    and ov.get("step") == last[0]
                ):
                    break
                time.sleep(0.5)
            caught_up = time.monotonic() - t0
            m1, o1 = proc_sample(mproc.pid), proc_sample(oproc.pid)
            # Freshness: one more progress line, timed until /metrics shows it.
            step = last[0] + 1
            with open(log, "a") as fh:
                fh.write(
                    f"2026-11-29T18:20:56.0Z stdout F  50%|█████     | {step}/{last[1]} [01:00<01:00,  4.00it/s]\n"
                )
            t_line = time.monotonic()
            fresh = None
            while time.monotonic() - t_line < 10:
                if ours(oport).get("step") == step:
                    fresh = time.monotonic() - t_line
                    break
                time.sleep(0.02)
            rss = proc_sample(oproc.pid).hwm_bytes / 2**20
        finally:
            stop(oproc)
            stop(mproc)
    return {
        "shape": shape,
        "megabytes": megabytes,
        "final_step": last[0],
        "final_total": last[1],
        "mtail": {**mtail_values_safe(mv), "cpu_seconds": m1.cpu_seconds - m0.cpu_seconds},
        "ours": {
            "step": ov.get("step"),
            "max_steps": ov.get("max_steps"),
            "loss": ov.get("loss"),
            "cpu_seconds": o1.cpu_seconds - o0.cpu_seconds,
            "peak_rss_mib": rss,
        },
        "both_caught_up_seconds": caught_up,
        "freshness_seconds": fresh,
    }


def _timed(argv: list[str]) -> tuple[float, float, bytes]:
    """Run ``argv`` to completion: (CPU seconds, peak RSS MiB, stdout)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def inspect_vs_mtail(megabytes: int = 250, shape: str = "lines") -> dict[str, Any]:
    """``inspect`` on a whole CRI log against mtail reading the same file once
    (``-one_shot``): CPU and the final values, side by side. ``shape`` "pchunks": a quarter
    of the lines are stderr ``P`` chunks of tqdm frames (:func:`pchunk_lines`); "crio": a
    quarter are one-frame ``P`` lines, as CRI-O writes them (:func:`crio_lines`)."""
    mtail = shutil.which("mtail")
    if not mtail:
        raise SystemExit("mtail is not installed (apt-get install mtail)")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        last = (0, 0)
        source = SHAPES[shape]
        with open(log, "w", buffering=1024 * 1024) as fh:
            for line, step, total in source(megabytes * 1024 * 1024):
                fh.write(line)
                last = (step, total)
        progs = Path(tmp) / "progs"
        progs.mkdir()
        (progs / "training.mtail").write_text(MTAIL_PROGRAM)
        m_cpu, m_rss, m_out = _timed(
            [mtail, "-progs", str(progs), "-logs", str(log), "-one_shot",
             "-one_shot_format", "prometheus", "-logtostderr"]
        )  # fmt: skip
        o_cpu, o_rss, o_out = _timed([sys.executable, "-m", "exporter", "inspect", str(log)])
        size = log.stat().st_size
    values = {}
    for name in ("training_step", "training_max_steps", "training_loss"):
        m = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", m_out.decode(), re.M)
        values[name] = float(m.group(1)) if m else float("nan")
    report = json.loads(o_out)["report"]
    return {
        "shape": shape,
        "megabytes": size / 1e6,
        "expected_step": last[0],
        "mtail": {**mtail_values_safe(values), "cpu_seconds": m_cpu, "peak_rss_mib": m_rss},
        "inspect": {
            "step": report.get("step"),
            "max_steps": report.get("max_steps"),
            "loss": report.get("loss"),
            "cpu_seconds": o_cpu,
            "peak_rss_mib": o_rss,
        },
    }


def mtail_values_safe(values: dict[str, float]) -> dict[str, float]:
    return {
        "step": values.get("training_step", float("nan")),
        "max_steps": values.get("training_max_steps", float("nan")),
        "loss": values.get("training_loss", float("nan")),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=250)
    parser.add_argument("--fleet-seconds", type=float, default=30.0)
    parser.add_argument("--inspect-only", action="store_true")
    parser.add_argument(
        "--live-only", action="store_true", help="only the side-by-side live tail of --shape"
    )
    parser.add_argument(
        "--shape", choices=tuple(SHAPES), default="lines",
        help="pchunks: a quarter of the lines are stderr P chunks of tqdm frames (containerd); "
        "crio: a quarter are one-frame P lines (CRI-O)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.inspect_only:
        print(json.dumps(inspect_vs_mtail(args.megabytes, args.shape), indent=2))
        return 0
    if args.live_only:
        print(json.dumps(run(args.megabytes, args.shape), indent=2))
        return 0
    print(
        json.dumps(
            {
                "inspect_vs_mtail_one_shot": inspect_vs_mtail(args.megabytes),
                "mtail_side_by_side": run(args.megabytes),
                "fleet_50_files_20MBps": fleet(seconds=args.fleet_seconds),
            },
            indent=2,
        )
    )
    return 0


def fleet(
    files: int = 50, megabytes_per_second: float = 20.0, seconds: float = 30.0
) -> dict[str, Any]:
    """Memory and CPU while tailing ``files`` logs written at ``megabytes_per_second`` in all."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / f"job{i}.log" for i in range(files)]
        for p in paths:
            p.write_text("")
        port = free_port()
        proc = start_exporter(port, "--log", str(Path(tmp) / "*.log"), "--poll-interval", "1s")
        try:
            source = lines(10**12)
            handles = [open(p, "a", buffering=1024 * 1024) for p in paths]  # noqa: SIM115 (50 files open together, closed below)
            before, t0 = proc_sample(proc.pid), time.monotonic()
            written, peak = 0, 0.0
            while time.monotonic() - t0 < seconds:
                target = (time.monotonic() - t0) * megabytes_per_second * 1024 * 1024
                while written < target:
                    line = next(source)[0]
                    handles[written % files].write(line)
                    written += len(line)
                for h in handles:
                    h.flush()
                peak = max(peak, proc_sample(proc.pid).rss_bytes / 2**20)
                time.sleep(0.05)
            after, t1 = proc_sample(proc.pid), time.monotonic()
            for h in handles:
                h.close()
            time.sleep(1.5)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/runs", timeout=10) as resp:
                runs = len(json.loads(resp.read())["runs"])
        finally:
            stop(proc)
    return {
        "files": files,
        "megabytes_written": written / 2**20,
        "seconds": t1 - t0,
        "cpu_percent_of_one_core": 100 * (after.cpu_seconds - before.cpu_seconds) / (t1 - t0),
        "peak_rss_mib": max(peak, after.hwm_bytes / 2**20),
        "runs_seen": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
