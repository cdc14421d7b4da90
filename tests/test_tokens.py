"""Tokens per second and MFU: from the run's count, from what its log prints, and the GPU's
peak from the run or its node's label. Trainer's own count is checked against a real run in
tests/test_integrations_ml.py."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.core.gpus import PEAKS, mfu, peak_flops
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.tracker import Tracker
from exporter.sources.node import gpu_product

T0 = 1_767_225_600.0
KEY = RunKey("ml", "llm-0", "llm")


def test_the_rate_is_the_counts_own_and_zero_once_the_run_stops() -> None:
    tr = Tracker()
    for i in range(31):  # 2,048 tokens a second for 30 s
        tr.apply(KEY, ProgressReport(step=i, max_steps=10_000, tokens=2048 * i, gpus=8), T0 + i)
    (snap,) = tr.snapshot(T0 + 30)
    assert snap.tokens == 2048 * 30
    assert snap.tokens_per_second == pytest.approx(2048)
    (snap,) = tr.snapshot(T0 + 30 + 3600)  # no report for an hour: silent
    assert snap.state == "silent" and snap.tokens_per_second == 0.0


def test_a_lower_count_is_a_new_attempt_not_a_negative_rate() -> None:
    tr = Tracker()
    for i in range(11):
        tr.apply(KEY, ProgressReport(step=100 + i, tokens=10_000 + 100 * i), T0 + i)
    for i in range(11):
        tr.apply(KEY, ProgressReport(step=i, tokens=100 * i), T0 + 20 + i)
    (snap,) = tr.snapshot(T0 + 30)
    assert snap.tokens_per_second == pytest.approx(100)


def test_a_printed_rate_per_gpu_counts_for_the_run(tmp_path: Any) -> None:
    """torchtune prints tokens per second per GPU: the run's rate is that times its GPUs."""
    from exporter.logs.inspect import inspect_path

    log = tmp_path / "tune.log"
    log.write_text("Step 2 | loss:2.3000 lr:0.0002 tokens_per_second_per_gpu:1000.0\n")
    tr = Tracker()
    report = inspect_path(str(log))["report"]
    assert report["metrics"]["tokens_per_second_per_gpu"] == 1000.0
    metrics = (("tokens_per_second_per_gpu", 1000.0),)
    tr.apply(KEY, ProgressReport(step=2, metrics=metrics, gpus=4), T0)
    (snap,) = tr.snapshot(T0)
    assert snap.tokens_per_second == pytest.approx(4000)


def test_an_mfu_above_one_is_no_ratio_and_is_not_exported() -> None:
    """Ten times the GPUs' peak (a FLOPs figure or GPU count that is wrong, or a report of
    1e-300 GPUs): absent, not 1.68 or +Inf."""
    for gpus in (8, 1e-300):
        tr = Tracker()
        meta = RunMeta(node="gpu-node-1", gpus=gpus)
        tr.set_node_gpu_model("gpu-node-1", "NVIDIA-A100-SXM4-80GB")
        for i in range(11):
            report = ProgressReport(step=i, tokens=100_000 * i, flops_per_token=6 * 7e9)
            tr.apply(KEY, report, T0 + i, meta)
        (snap,) = tr.snapshot(T0 + 10)
        assert snap.gpu_peak_flops == 312e12
        assert snap.model_flops_utilization is None


def test_mfu_divides_by_the_named_gpus_peak_and_the_node_label_names_it() -> None:
    tr = Tracker()
    meta = RunMeta(node="gpu-node-1", gpus=8)
    tr.set_node_gpu_model("gpu-node-1", "NVIDIA-A100-SXM4-80GB")
    for i in range(11):
        report = ProgressReport(step=i, tokens=10_000 * i, flops_per_token=6 * 7e9)
        tr.apply(KEY, report, T0 + i, meta)
    (snap,) = tr.snapshot(T0 + 10)
    assert snap.gpu_peak_flops == 312e12
    assert snap.model_flops_utilization == pytest.approx(10_000 * 6 * 7e9 / (8 * 312e12))
    # The run's own word wins over its node's label.
    tr.apply(
        KEY,
        ProgressReport(step=11, tokens=110_000, gpu_model="NVIDIA H100 80GB HBM3"),
        T0 + 11,
        meta,
    )
    (snap,) = tr.snapshot(T0 + 11)
    assert snap.gpu_peak_flops == 989e12


@pytest.mark.parametrize(
    "name, peak",
    [
        ("NVIDIA-H100-80GB-HBM3", 989e12),  # the GPU Operator's node label
        ("NVIDIA H100 PCIe", 756e12),  # torch.cuda.get_device_name
        ("NVIDIA-H100-NVL", 835e12),
        ("NVIDIA-A100-SXM4-40GB", 312e12),
        ("NVIDIA-A10", 125e12),
        ("NVIDIA-L40S", 362e12),
        ("NVIDIA-L4", 121e12),
        ("Tesla-V100-SXM2-16GB", None),  # no BF16
        ("", None),
    ],
)
def test_the_peak_table_matches_names_as_labels_and_torch_write_them(
    name: str, peak: float | None
) -> None:
    assert peak_flops(name) == peak


def test_every_peak_says_its_source() -> None:
    assert all("datasheet" in source for _, _, source in PEAKS)
    assert mfu(None, 1.0, 1, 1.0) is None and mfu(1.0, 1.0, 0, 1.0) is None


def test_the_node_label_is_read_and_bounded() -> None:
    node = {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
    assert gpu_product(node) == "NVIDIA-H100-80GB-HBM3"
    assert gpu_product({"metadata": {"labels": {"nvidia.com/gpu.product": "x" * 500}}}) == "x" * 64
    assert gpu_product({}) is None


def test_rates_and_utilizations_no_hardware_reaches_are_dropped_with_their_reason() -> None:
    """A FLOPs per token that puts 8 H100s at 3.46x their peak, a token count that grows
    faster than any GPU trains, and a printed "mfu: 346%": none reaches /metrics, each is
    counted with its reason, and a sane run beside them keeps its values."""
    from exporter.core.run.tokens import MFU_ABOVE_PEAK, MFU_OUT_OF_RANGE, TOKENS_ABOVE_PEAK

    tracker = Tracker()
    reasons: list[str] = []
    t0 = 1_800_000_000.0
    wrong_fpt = RunKey("ml", "wrong-fpt", "wrong-fpt")
    too_fast = RunKey("ml", "too-fast", "too-fast")
    printed = RunKey("ml", "printed", "printed")
    sane = RunKey("ml", "sane", "sane")
    for i in range(1, 8):
        now = t0 + 10 * i
        rate = 327_680  # tokens/s: MFU 0.323 on 8 H100s at 7.8e9 FLOPs per token
        common = {"step": i, "gpus": 8, "gpu_model": "NVIDIA H100 80GB HBM3"}
        tracker.apply(
            sane, ProgressReport(**common, tokens=rate * 10 * i, flops_per_token=7.8e9), now
        )
        tracker.apply(
            wrong_fpt,
            ProgressReport(**common, tokens=rate * 10 * i, flops_per_token=7.8e9 * 10.7),
            now,
            problem=reasons.append,
        )
        tracker.apply(
            too_fast, ProgressReport(**common, tokens=10**10 * i), now, problem=reasons.append
        )
        tracker.apply(
            printed,
            ProgressReport(**common, metrics=(("model_flops_utilization", 3.46),)),
            now,
            problem=reasons.append,
        )
    snaps = {s.key.pod: s for s in tracker.iter_snapshots(t0 + 71)}
    assert snaps["sane"].model_flops_utilization == pytest.approx(0.323, abs=0.005)
    assert snaps["wrong-fpt"].model_flops_utilization is None
    assert snaps["wrong-fpt"].tokens_per_second == pytest.approx(rate)  # the count is fine
    assert snaps["too-fast"].tokens_per_second is None
    assert snaps["printed"].model_flops_utilization is None
    assert "model_flops_utilization" not in dict(snaps["printed"].metrics)
    assert reasons.count(MFU_OUT_OF_RANGE) == 7
    assert reasons.count(TOKENS_ABOVE_PEAK) == 6  # from the second count on: a rate needs two
    assert reasons.count(MFU_ABOVE_PEAK) == 6
