"""Real training runs on CPU reporting to a real exporter: Transformers' built-in
KubeflowCallback unchanged, our Transformers callback, and our Lightning callback.

A tiny GPT-2 is built from a config (no download, HF_HUB_OFFLINE=1) and trained for 50 steps
on random tokens; Lightning trains a linear model. The ``ml`` extra (torch 2.13.0 CPU from the
local wheel, transformers, accelerate, lightning) is installed by the test command.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json

if not all(
    importlib.util.find_spec(m) for m in ("torch", "transformers", "lightning", "accelerate")
):
    if os.environ.get("CI"):
        raise RuntimeError("the ml extra is not installed; make test-deps installs it")
    pytest.skip(
        "the ml extra (torch, transformers, lightning) is not installed", allow_module_level=True
    )

import torch

pytestmark = pytest.mark.slow  # real training on CPU
os.environ.setdefault("HF_HUB_OFFLINE", "1")
STEPS = 50


def tiny_gpt2_trainer(tmp_path: Path, callbacks: list[Any], step_seconds: float = 0.0) -> Any:
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=1000, n_positions=64)
    )

    class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __init__(self) -> None:
            self.x = torch.randint(0, 1000, (400, 64))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.x[i], "labels": self.x[i]}

    class SlowSteps(TrainerCallback):  # type: ignore[misc]
        """Stretches each step, so a run outlasts KubeflowCallback's 5 s throttle."""

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(step_seconds)

    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=STEPS,
        per_device_train_batch_size=8,
        logging_steps=10,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    extra = [SlowSteps()] if step_seconds else []
    return Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=callbacks + extra)


def lightning_trainer(tmp_path: Path, callbacks: list[Any], max_steps: int) -> Any:
    """A quiet Lightning Trainer on CPU: no logger, bar, summary or checkpointing of its own."""
    import lightning

    return lightning.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
        default_root_dir=str(tmp_path),
    )


def last_logged_loss(trainer: Any) -> float:
    return float(next(e["loss"] for e in reversed(trainer.state.log_history) if "loss" in e))


def test_transformers_builtin_kubeflow_callback_reports_to_the_exporter(
    exporter_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = exporter_factory()
    token = tmp_path / "token"
    token.write_text("standalone")
    monkeypatch.setenv(
        "KUBEFLOW_TRAINER_SERVER_URL",
        f"{exp.url}/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/gpt2-kf/status",
    )
    monkeypatch.setenv("KUBEFLOW_TRAINER_SERVER_TOKEN", str(token))
    trainer = tiny_gpt2_trainer(tmp_path, [], step_seconds=0.15)
    assert "kubeflow" in trainer.args.report_to  # Transformers enabled its callback itself
    result = trainer.train()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["job_name"] == "gpt2-kf" and run["info"]["source"] == "push"
    assert run["finished"] is True and run["state"] == "finished"
    assert run["progress_ratio"] == 1.0 and run["max_steps"] == STEPS
    # The final body carries no step: the last step the callback sent (throttled to one
    # report per 5 s) stays.
    assert 1 <= run["step"] <= STEPS
    assert run["loss"] == pytest.approx(last_logged_loss(trainer))
    assert run["metrics"]["train_loss"] == pytest.approx(result.training_loss)


def test_our_transformers_callback_without_kubeflow(
    exporter_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from training_progress_reporter.transformers import ProgressCallback

    exp = exporter_factory()
    monkeypatch.delenv("KUBEFLOW_TRAINER_SERVER_URL", raising=False)
    monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/gpt2/report")
    callback = ProgressCallback(interval=0.2)
    trainer = tiny_gpt2_trainer(tmp_path, [callback])
    trainer.train()
    assert callback.reporter is not None and callback.reporter.errors == 0
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["job_name"], run["step"], run["max_steps"], run["finished"]) == (
        "gpt2",
        STEPS,
        STEPS,
        True,
    )
    assert run["loss"] == pytest.approx(last_logged_loss(trainer))
    assert run["info"]["framework"] == "transformers"
    assert run["epoch"] == pytest.approx(trainer.state.epoch)


def test_our_callback_does_not_double_report_beside_kubeflow_callback(
    exporter_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from training_progress_reporter.transformers import ProgressCallback

    exp = exporter_factory()
    token = tmp_path / "token"
    token.write_text("standalone")
    monkeypatch.setenv(
        "KUBEFLOW_TRAINER_SERVER_URL",
        f"{exp.url}/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/both/status",
    )
    monkeypatch.setenv("KUBEFLOW_TRAINER_SERVER_TOKEN", str(token))
    monkeypatch.delenv("TPE_REPORT_URL", raising=False)
    monkeypatch.delenv("TPE_STATUS_FILE", raising=False)
    callback = ProgressCallback(interval=0.2)
    trainer = tiny_gpt2_trainer(tmp_path, [callback])
    trainer.train()
    assert callback.reporter is None  # KubeflowCallback already reports; ours stays out
    text = get_json(exp.url + "/api/v1/runs")
    assert [r["job_name"] for r in text["runs"]] == ["both"]


def test_lightning_callback(
    exporter_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lightning
    from training_progress_reporter.lightning import ProgressCallback

    exp = exporter_factory()
    monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/lit/report")
    torch.manual_seed(0)

    class Regression(lightning.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)
            self.last_loss = float("nan")

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss)
            self.last_loss = float(loss.detach())
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    x = torch.randn(256, 8)
    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16
    )
    module = Regression()
    callback = ProgressCallback(interval=0.2)
    trainer = lightning_trainer(tmp_path, [callback], max_steps=30)
    trainer.fit(module, data)
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["job_name"], run["step"], run["max_steps"], run["finished"]) == (
        "lit",
        30,
        30,
        True,
    )
    assert run["loss"] == pytest.approx(module.last_loss, rel=1e-5)
    assert run["info"]["framework"] == "lightning"


def test_lightning_progress_bar_captured_from_a_real_run_parses(tmp_path: Path) -> None:
    """Lightning's own progress bar, as a real run prints it, is read by the log parsers."""
    import subprocess
    import sys
    import textwrap

    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import parse_message

    code = textwrap.dedent(
        """
        import torch, lightning
        class M(lightning.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(4, 1)
            def training_step(self, batch, i):
                loss = self.layer(batch[0]).pow(2).mean()
                self.log("train_loss", loss, prog_bar=True)
                return loss
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)
        x = torch.randn(64, 4)
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=8)
        lightning.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                          enable_model_summary=False, default_root_dir=ROOT_DIR).fit(M(), data)
    """
    )
    code = code.replace("ROOT_DIR", repr(str(tmp_path)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    output = proc.stdout + proc.stderr
    acc = LogAccumulator()
    for i, line in enumerate(output.split("\n")):
        for found in parse_message(line, 0.0):
            acc.feed(found, float(i))
    # Recognised by what only Lightning prints (its banner, its closing line), not by the
    # bar's "Epoch 1:" description; two epochs of 8 batches, counted across its bars.
    assert acc.lightning and acc.final, output[-1000:]
    report = acc.report()
    assert (report.step, report.max_steps, report.epoch) == (16, 16, 2.0), report
    assert report.loss is not None


def test_checkpoint_directive_makes_trainer_save_within_one_report_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Trainer on CPU, our callback, a real exporter on the real clock: the run's
    deadline is 3 s away while its ETA is far longer, so the exporter's answer to a push
    says "checkpoint", and Trainer saves a checkpoint (its save_strategy is "no": only the
    directive can make it save)."""
    from dataclasses import replace

    from training_progress_reporter import reporter as reporter_module
    from training_progress_reporter.transformers import ProgressCallback

    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    exp = Exporter(replace(Config(), listen="127.0.0.1:0", mode="standalone"))
    exp.start(poll_loop=False)
    try:
        monkeypatch.delenv("KUBEFLOW_TRAINER_SERVER_URL", raising=False)
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/ckpt/report")
        told: list[float] = []
        original = reporter_module.directives_of

        def spy(answer: bytes) -> list[str]:
            found = original(answer)
            if "checkpoint" in found:
                told.append(time.time())
            return found

        monkeypatch.setattr(reporter_module, "directives_of", spy)
        interval = 0.5
        callback = ProgressCallback(interval=interval, deadline=time.time() + 3)
        trainer = tiny_gpt2_trainer(tmp_path, [callback], step_seconds=0.1)
        trainer.train()
    finally:
        exp.stop()
    saved = sorted((tmp_path / "out").glob("checkpoint-*"))
    assert told, "the exporter never asked for a checkpoint"
    assert len(told) == 1  # told once, not on every report
    assert saved, "Trainer saved no checkpoint"
    latency = saved[0].stat().st_mtime - told[0]
    print(f"\ndirective -> checkpoint directory: {latency:.2f} s")
    assert 0 <= latency <= interval + 1.0


def test_checkpoint_directive_makes_lightning_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same directive through our Lightning callback: a real Trainer on CPU saves a
    checkpoint through ``trainer.save_checkpoint`` (its own checkpointing is off)."""
    from dataclasses import replace

    import lightning
    from training_progress_reporter.lightning import ProgressCallback

    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    class Slow(lightning.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            time.sleep(0.05)  # a run long enough for a few reports
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    exp = Exporter(replace(Config(), listen="127.0.0.1:0", mode="standalone"))
    exp.start(poll_loop=False)
    try:
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/litc/report")
        x = torch.randn(1024, 8)
        data = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8
        )
        callback = ProgressCallback(interval=0.3, deadline=time.time() + 2)
        lightning_trainer(tmp_path, [callback], max_steps=100).fit(Slow(), data)
    finally:
        exp.stop()
    saved = list((tmp_path / "checkpoints").glob("directive-step=*.ckpt"))
    assert len(saved) == 1, saved
    assert "state_dict" in torch.load(saved[0], weights_only=False)


def _run_doc(url: str, name: str) -> dict[str, Any]:
    return next(r for r in get_json(url + "/api/v1/runs")["runs"] if r["pod"] == name)


def test_trainer_checkpoints_are_seen_with_their_step_and_time_and_reset_the_risk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Trainer saving every 10 steps through our callback (on_save): after each save,
    the exporter's last checkpoint is the newest checkpoint-N directory on disk, at the time
    it was written, and the work at risk dropped; one GPU is claimed so the risk grows."""
    from dataclasses import replace

    from training_progress_reporter.transformers import ProgressCallback
    from transformers import TrainerCallback

    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    exp = Exporter(replace(Config(), listen="127.0.0.1:0", mode="standalone"))
    exp.start(poll_loop=False)
    seen: list[tuple[int, dict[str, Any]]] = []

    class Look(TrainerCallback):  # type: ignore[misc]
        """Right before each save and a moment after it, what the exporter says."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % 10 in (9, 2) and state.global_step > 2:
                time.sleep(0.4)  # the reporter's interval: the last update is in
                seen.append((state.global_step, _run_doc(exp.url, "saver")))

    try:
        monkeypatch.delenv("KUBEFLOW_TRAINER_SERVER_URL", raising=False)
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/saver/report")
        callback = ProgressCallback(interval=0.2, gpus=1)
        trainer = tiny_gpt2_trainer(tmp_path, [callback, Look()], step_seconds=0.05)
        trainer.args.save_strategy = "steps"
        trainer.args.save_steps = 10
        trainer.train()
        time.sleep(0.5)
        final = _run_doc(exp.url, "saver")
    finally:
        exp.stop()
    saved = {
        int(p.name.split("-")[1]): p.stat().st_mtime
        for p in (tmp_path / "out").glob("checkpoint-*")
    }
    assert sorted(saved) == [10, 20, 30, 40, 50]
    assert final["last_checkpoint_step"] == 50
    assert abs(final["last_checkpoint_timestamp_seconds"] - saved[50]) < 1.0
    # Before each save the risk has grown since the last one; after it, it dropped.
    before = {step + 1: doc for step, doc in seen if step % 10 == 9}
    after = {step - 2: doc for step, doc in seen if step % 10 == 2}
    for step in (20, 30, 40):
        assert before[step]["last_checkpoint_step"] == step - 10
        assert after[step]["last_checkpoint_step"] == step
        assert abs(after[step]["last_checkpoint_timestamp_seconds"] - saved[step]) < 1.0
        risk_after = after[step]["progress_at_risk_gpu_seconds"]
        assert risk_after < before[step]["progress_at_risk_gpu_seconds"]


def test_the_risk_threshold_makes_trainer_save_before_it_passes_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trainer's own saving off but for one save at step 1 (a run is told to save only once
    it was seen to save): then only the exporter's directive, sent when the work at risk
    passes the run's threshold (4 GPU-seconds on one GPU here), makes it save; each save
    resets the risk, so the run saves again and again and the risk stays near the threshold."""
    from dataclasses import replace

    from training_progress_reporter.transformers import ProgressCallback
    from transformers import TrainerCallback

    from exporter.core.thresholds import Thresholds
    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    threshold_hours = 4 / 3600
    config = replace(
        Config(),
        listen="127.0.0.1:0",
        mode="standalone",
        thresholds=Thresholds(checkpoint_risk_gpu_hours=threshold_hours),
    )
    exp = Exporter(config)
    exp.start(poll_loop=False)
    risks: list[float] = []

    class Look(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 1:
                control.should_save = True  # its one save of its own
            risk = _run_doc(exp.url, "asked").get("progress_at_risk_gpu_seconds")
            if risk is not None:
                risks.append(risk)

    try:
        monkeypatch.delenv("KUBEFLOW_TRAINER_SERVER_URL", raising=False)
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/asked/report")
        callback = ProgressCallback(interval=0.2, gpus=1)
        trainer = tiny_gpt2_trainer(tmp_path, [callback, Look()], step_seconds=0.2)
        trainer.train()
    finally:
        exp.stop()
    saved = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "out").glob("checkpoint-*"))
    assert saved[0] == 1 and len(saved) >= 3, saved  # all but the first were asked for
    print(f"\nsaves at steps {saved}; work at risk: max {max(risks):.2f} GPU-s (threshold 4)")
    # Told once the risk passed 4 GPU-seconds; saved within about a report interval and a
    # step, so it never ran far past it.
    assert max(risks) < 4 + 2.0, max(risks)
    assert min(risks) < 1.0


def test_lightning_model_checkpoint_saves_are_seen_through_our_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Lightning run with ModelCheckpoint every 8 steps: the exporter's last
    checkpoint is the newest .ckpt file's step, at about the time it was written."""
    from dataclasses import replace

    import lightning
    from lightning.pytorch.callbacks import ModelCheckpoint
    from training_progress_reporter.lightning import ProgressCallback

    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    class Model(lightning.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            time.sleep(0.02)
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    exp = Exporter(replace(Config(), listen="127.0.0.1:0", mode="standalone"))
    exp.start(poll_loop=False)
    try:
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/litck/report")
        x = torch.randn(256, 8)
        data = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8
        )
        saves = ModelCheckpoint(dirpath=tmp_path / "ck", every_n_train_steps=8, save_top_k=-1)
        trainer = lightning.Trainer(
            max_steps=40,
            accelerator="cpu",
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[ProgressCallback(interval=0.2, gpus=1), saves],
            default_root_dir=str(tmp_path),
        )
        trainer.fit(Model(), data)
        time.sleep(0.5)
        run = _run_doc(exp.url, "litck")
    finally:
        exp.stop()
    files = {
        int(p.stem.split("step=")[1]): p.stat().st_mtime for p in (tmp_path / "ck").glob("*.ckpt")
    }
    assert sorted(files) == [8, 16, 24, 32, 40]
    assert run["last_checkpoint_step"] == 40
    assert abs(run["last_checkpoint_timestamp_seconds"] - files[40]) < 1.0


def test_tokens_per_second_and_mfu_from_trainers_own_token_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trainer with include_num_input_tokens_seen and our callback: the exporter's token count
    is Trainer's own, its tokens/s is that count's rate, and MFU is tokens/s x 6 x the
    model's parameters / the named GPU's peak (no GPU here: the run names one)."""
    from dataclasses import replace

    from training_progress_reporter.transformers import ProgressCallback

    from exporter.core.gpus import peak_flops
    from exporter.daemon.app import Exporter
    from exporter.daemon.config import Config

    exp = Exporter(replace(Config(), listen="127.0.0.1:0", mode="standalone"))
    exp.start(poll_loop=False)
    try:
        monkeypatch.delenv("KUBEFLOW_TRAINER_SERVER_URL", raising=False)
        monkeypatch.setenv("TPE_REPORT_URL", f"{exp.url}/api/v1/namespaces/ml/runs/tok/report")
        callback = ProgressCallback(interval=0.2, gpus=1, gpu_model="NVIDIA-H100-80GB-HBM3")
        trainer = tiny_gpt2_trainer(tmp_path, [callback], step_seconds=0.05)
        trainer.args.include_num_input_tokens_seen = True
        mid: list[dict[str, Any]] = []
        truth: list[tuple[float, int]] = []  # (time, Trainer's own count) at each step
        original = callback.on_step_end

        def look(args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            original(args, state, control, **kwargs)
            truth.append((time.time(), int(state.num_input_tokens_seen)))
            if state.global_step == STEPS - 5:
                time.sleep(0.5)  # the last update is in
                mid.append(_run_doc(exp.url, "tok"))

        callback.on_step_end = look  # type: ignore[method-assign]
        trainer.train()
        time.sleep(0.5)
        run = _run_doc(exp.url, "tok")
    finally:
        exp.stop()
    seen = int(trainer.state.num_input_tokens_seen)
    assert seen == STEPS * 8 * 64  # 8 sequences of 64 tokens a step
    assert run["tokens"] == seen
    (during,) = mid
    # Its rate while training: Trainer's own count over the span the exporter saw, within
    # 15 %. The callback reports at most every 0.2 s (four steps of 0.05 s), so that span
    # begins at one of the first steps and ends at one of the last reported before the look;
    # on a loaded machine the pace moves from step to step, so the span is matched, not
    # assumed (a rate in samples or per step would match none of them).
    spans = [
        (n1 - n0) / (t1 - t0)
        for t0, n0 in truth[:5]
        for t1, n1 in truth[STEPS - 10 : STEPS - 5]
        if t1 > t0
    ]
    rate = during["tokens_per_second"]
    assert any(rate == pytest.approx(expected, rel=0.15) for expected in spans), (rate, spans)
    params = sum(p.numel() for p in trainer.model.parameters())
    assert during["model_flops_per_token"] == 6 * params
    assert during["gpu_peak_flops"] == peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    expected = during["tokens_per_second"] * 6 * params / 989e12
    assert during["model_flops_utilization"] == pytest.approx(expected)
