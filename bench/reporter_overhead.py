"""Reporter overhead: what ``ProgressReporter.update()`` costs a training loop.

1. ``update()`` per call (median of 50 batches of 10,000 calls), measured in the same run as
   a no-op function taking the same arguments.
2. With the endpoint unreachable, the 99th percentile of single ``update()`` calls over
   100,000 calls (the background thread failing and backing off meanwhile).
3. A real training loop: the tiny Transformers GPT-2 of the tests, 200 steps on CPU, with our
   callback reporting to a live exporter against without it, alternating runs; the ratio of
   ``train_steps_per_second`` (median of the rounds).

Run: ``python -m bench.reporter_overhead [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from statistics import median
from typing import Any

from training_progress_reporter import ProgressReporter

from .common import free_port, start_exporter, stop


def _noop(
    step: int | None = None, *, loss: Any = None, learning_rate: Any = None, **metrics: Any
) -> None:
    return None


def per_call(fn: Any, batches: int = 50, calls: int = 10_000) -> float:
    """Median seconds per call of ``fn(step=i, loss=0.5, learning_rate=1e-4)``."""
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for i in range(calls):
            fn(step=i, loss=0.5, learning_rate=1e-4)
        samples.append((time.perf_counter() - start) / calls)
    return median(samples)


def update_cost() -> dict[str, float]:
    with open(os.devnull, "w") as devnull:
        reporter = ProgressReporter(
            total_steps=10**9, environ={}, channels=["stdout"], interval=3600, stdout=devnull
        )
        update = per_call(reporter.update)
        noop = per_call(_noop)
        reporter.close(timeout=1)
    return {
        "update_median_us": update * 1e6,
        "noop_median_us": noop * 1e6,
        "overhead_us": (update - noop) * 1e6,
    }


def unreachable_p99(calls: int = 100_000) -> dict[str, float]:
    reporter = ProgressReporter(
        total_steps=10**9,
        environ={"TPE_REPORT_URL": "http://127.0.0.1:9/x"},
        interval=0.001,
        timeout=0.5,
    )
    times = []
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        reporter.update(step=i, loss=0.5, learning_rate=1e-4)
        times.append(clock() - t0)
    reporter.close(timeout=1)
    times.sort()
    return {
        "calls": float(calls),
        "p50_us": times[calls // 2] / 1000,
        "p99_us": times[int(calls * 0.99)] / 1000,
        "max_us": times[-1] / 1000,
        "send_errors": float(reporter.errors),
    }


def training_ratio(rounds: int) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from training_progress_reporter.transformers import ProgressCallback
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __init__(self) -> None:
            self.x = torch.randint(0, 1000, (1600, 64))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.x[i], "labels": self.x[i]}

    port = free_port()
    exporter = start_exporter(port)
    os.environ["TPE_REPORT_URL"] = (
        f"http://127.0.0.1:{port}/api/v1/namespaces/bench/runs/gpt2/report"
    )
    results: dict[str, list[float]] = {"with": [], "without": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(rounds):
                for mode in ("without", "with"):
                    torch.manual_seed(0)
                    model = GPT2LMHeadModel(
                        GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=1000, n_positions=64)
                    )
                    args = TrainingArguments(
                        output_dir=tmp,
                        max_steps=200,
                        per_device_train_batch_size=8,
                        logging_steps=10,
                        report_to="none",
                        save_strategy="no",
                        use_cpu=True,
                        disable_tqdm=True,
                    )
                    callbacks: list[Any] = [ProgressCallback()] if mode == "with" else []
                    out = Trainer(
                        model=model, args=args, train_dataset=Tokens(), callbacks=callbacks
                    ).train()
                    results[mode].append(out.metrics["train_steps_per_second"])
    finally:
        os.environ.pop("TPE_REPORT_URL", None)
        stop(exporter)
    with_, without = median(results["with"]), median(results["without"])
    return {
        "steps_per_second_with": with_,
        "steps_per_second_without": without,
        "ratio": with_ / without,
        "rounds": results,
    }


def run(rounds: int = 3) -> dict[str, Any]:
    return {
        "update": update_cost(),
        "unreachable": unreachable_p99(),
        "training": training_ratio(rounds),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
